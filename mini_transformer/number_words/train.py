"""Training the number-words translator from scratch, and the files it writes.

A shared BPE is learnt on training numbers, then the paper's post-LN model is
trained with the NumPy hand gradients (``loss_and_grads``), label smoothing,
dropout, Adam and the paper's learning-rate schedule, and the average of the last
checkpoints (§6.1) is kept; ``device`` runs the same functions on torch tensors.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..attention import padding_mask
from ..batching import batch_by_length
from ..bpe import BPE
from ..checkpoint import average_params
from ..optim import AdamState, adam_step, learning_rate
from ..params import TransformerParams
from ..tasks import HELD_OUT_MODULUS, number_words, split_numbers
from ..transformer import loss_and_grads
from ..translation import exact_match, translate
from .data import GERMAN_SPLIT, encode_pairs, training_numbers
from .files import BPE_FILE, EARLY, INTERRUPTED, LAST, LOG, MODEL, write_atomic



@dataclass(frozen=True)
class Settings:
    """Every choice of a training run; the defaults made the committed model.

    The data is a stream: chunks of ``n_chunk`` fresh training numbers, each cut into
    batches by length (``batch_by_length``, a budget of ``max_tokens``) that are used
    in random order. Every ``average_every`` steps the weights are kept, and the model
    written is the average of the last ``average_last`` of them (§6.1; 0 or 1: the
    last weights). Also written: the last weights (``LAST``) and the weights after
    each step in ``keep_steps`` (``EARLY``). n_final: how many held-out numbers the
    final evaluation decodes (None: all, 0: none); n_bpe: how many training numbers
    make the BPE's corpus; device None: NumPy, else torch tensors on that device.
    bpe_split: the BPE's pre-tokenizer (``GERMAN_SPLIT``: German number words cut
    around "hundert", "tausend" and "und", so that "tausend" at the end of a word is
    one token, not the rare pieces a BPE learnt on whole words gives it);
    round_share: the share of the draws of four digits or more rounded to whole
    thousands (``training_numbers``). average_last is 1: with these settings the
    average of the last 5 checkpoints decoded 97.8% of the held-out numbers exactly
    (greedy), the last weights 99.8%.
    """

    steps: int = 2000
    seed: int = 0
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    vocab_size: int = 500
    p_drop: float = 0.1
    label_smoothing: float = 0.1
    warmup: int = 200
    max_tokens: int = 3000
    eval_every: int = 250
    n_eval: int = 300
    device: str | None = None
    dtype: str = "float32"
    n_chunk: int = 10_000
    n_bpe: int = 5000
    bpe_split: str | None = GERMAN_SPLIT
    round_share: float = 0.05
    n_final: int | None = None
    average_last: int = 1
    average_every: int = 50
    keep_steps: tuple = (500,)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during ``train``, after the work it saved; ``str()`` says where."""


def train(settings: Settings = Settings(), out_dir=None, log=print, progress=None,
          force=False):
    """Train from scratch; write the model, the BPE and the log to ``out_dir`` (None:
    write nothing). progress: called with a one-line status after every step and
    during the final evaluation (the command's progress bar, with the time left),
    log: with each evaluation's line. The random draws come in a fixed order (BPE
    corpus, weights, then the data chunks), so a shorter run repeats the first steps
    of a longer one.

    Before the first step the settings, the device (``check_device``) and the output
    folder (``check_out_dir``: it refuses a folder that holds a model unless
    ``force``) are checked. Every file is written whole or not at all. Ctrl-C
    (KeyboardInterrupt) during the steps saves the weights so far, with the BPE, as
    ``INTERRUPTED`` in ``out_dir``; during the final evaluation it skips the rest of
    it and writes the model; either way ``Interrupted`` is raised, saying where.
    Returns (params as NumPy, bpe, log dict)."""
    s = settings
    check_settings(s)
    check_device(s.device, s.dtype)
    if out_dir is not None:
        out_dir = check_out_dir(out_dir, force)
    t_start = time.perf_counter()
    rng = np.random.default_rng(s.seed)
    _, held = split_numbers()
    bpe = BPE.learn(
        [t for p in number_words(training_numbers(rng, s.n_bpe, s.round_share))
         for t in p], s.vocab_size, split=s.bpe_split)
    params = TransformerParams.random(rng, vocab_size=len(bpe), d_model=s.d_model,
                                      n_heads=s.n_heads, n_layers=s.n_layers)
    eval_rng = np.random.default_rng(s.seed + 2)
    eval_src, eval_ref = zip(*number_words(eval_rng.choice(held, s.n_eval,
                                                           replace=False)))
    xp_params, to_array, drop_rng = _backend(params, s.device, s.dtype, s.seed)
    state = AdamState.zeros_like(xp_params)
    history, losses, batches, snapshots, kept = [], [], [], [], {}
    log(f"BPE of {len(bpe)} tokens, {len(held)} numbers held out; "
        f"{time.perf_counter() - t_start:.1f} s")
    t0, step = time.perf_counter(), 0
    try:
        while step < s.steps:
            if not batches:  # a new chunk of the data stream
                src, tgt = encode_pairs(number_words(
                    training_numbers(rng, s.n_chunk, s.round_share)), bpe)
                batches = batch_by_length(src, tgt, s.max_tokens, bpe.pad_id, rng)
            src, tgt = batches.pop()
            lr = learning_rate(step + 1, s.d_model, s.warmup)
            src_mask = padding_mask(np.sum(src != bpe.pad_id, axis=1), src.shape[1])
            loss, grads = loss_and_grads(
                xp_params, to_array(src), to_array(tgt[:, :-1]), to_array(tgt[:, 1:]),
                s.label_smoothing, bpe.pad_id, src_mask=src_mask, p_drop=s.p_drop,
                rng=drop_rng)
            xp_params, state = adam_step(xp_params, grads, state, lr)
            step += 1                       # xp_params are now the weights after step
            losses.append(round(float(loss), 5))
            if progress is not None:
                left = (time.perf_counter() - t0) / step * (s.steps - step)
                progress(f"step {step:5d}/{s.steps}  loss {losses[-1]:.4f}  lr {lr:.2e}"
                         f"  {_duration(left)} left")
            if step % s.average_every == 0 or step == s.steps:
                snapshots = [*snapshots, xp_params][-max(s.average_last, 1):]
            if step in s.keep_steps:
                kept[step] = _to_numpy(xp_params)
            if step % s.eval_every == 0 or step == s.steps:
                em = exact_match(translate(eval_src, xp_params, bpe, beam_size=None),
                                 eval_ref)
                seconds = time.perf_counter() - t0
                history.append(dict(step=step, loss=losses[-1], lr=lr,
                                    held_out_exact_match=em, seconds=round(seconds, 2)))
                log(f"step {step:5d}  loss {float(loss):.4f}  lr {lr:.2e}  "
                    f"held-out exact match {em:.3f} (greedy, {s.n_eval})  "
                    f"{seconds:.0f} s")
    except KeyboardInterrupt:
        if out_dir is None or step == 0:
            raise
        path = out_dir / INTERRUPTED
        _to_numpy(xp_params).save(path)
        write_atomic(out_dir / BPE_FILE, bpe.save)
        raise Interrupted(f"stopped after step {step} of {s.steps}: the weights so "
                          f"far are saved in {path}, its BPE beside it (translate "
                          f"with --model {path})") from None
    train_seconds = time.perf_counter() - t0
    last = _to_numpy(xp_params)
    params = _to_numpy(average_params(snapshots)) if s.average_last > 1 else last
    final, stopped = {}, False
    if s.n_final != 0:
        try:
            final = _final_evaluation(params, last, bpe, held, s.n_final, log,
                                      progress)
        except KeyboardInterrupt:
            final, stopped = {"interrupted": True}, True
            log("final evaluation stopped by Ctrl-C: writing the model without it")
    record = dict(task="English number words to German (num2words), n < 1,000,000",
                  held_out=f"n % {HELD_OUT_MODULUS} == 0 and n > 0 "
                           f"({len(held)} numbers)",
                  settings=dataclasses.asdict(s) | dict(
                      vocab_size=len(bpe), keep_steps=list(s.keep_steps),
                      device=str(s.device or "numpy")),
                  machine=dict(cpus=os.cpu_count(), processor=platform.machine(),
                               numpy=np.__version__),
                  train_seconds=round(train_seconds, 1),
                  held_out_exact_match=final, log=history, losses=losses)
    if out_dir is not None:
        _write(out_dir, params, last, kept, bpe, record)
        log(f"wrote {out_dir / MODEL} and the rest to {out_dir}")
    if stopped:
        raise Interrupted(f"stopped during the final evaluation: the model is "
                          f"written to {out_dir / MODEL}" if out_dir is not None
                          else "stopped during the final evaluation")
    return params, bpe, record


def _final_evaluation(params, last, bpe, held, n_final, log, progress):
    """Exact match on ``n_final`` held-out numbers spread evenly over all of them
    (None: all), greedy and beam 4 for the model, greedy for the last weights; the
    status shows each pass's progress and time left."""
    if n_final is not None and n_final < len(held):
        held = held[np.linspace(0, len(held) - 1, n_final).round().astype(int)]
    sources, refs = zip(*number_words(held))
    final, chunk = {}, 256
    passes = (("greedy", params, None), ("beam4", params, 4),
              ("last_greedy", last, None))
    for k, (name, p, beam) in enumerate(passes, 1):
        hyps, t0 = [], time.perf_counter()
        for start in range(0, len(sources), chunk):
            hyps += translate(sources[start: start + chunk], p, bpe, beam_size=beam)
            if progress is not None:
                left = (time.perf_counter() - t0) / len(hyps) * (len(sources)
                                                                 - len(hyps))
                progress(f"final evaluation {k}/{len(passes)} ({name}): "
                         f"{len(hyps):,} of {len(sources):,} numbers, "
                         f"{_duration(left)} left in this pass")
        final[name] = exact_match(hyps, refs)
        log(f"held-out exact match, {len(refs)} numbers: {name} {final[name]:.4f}")
    return final


def _duration(seconds):
    seconds = round(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds >= 60 else f"{seconds} s"


def check_settings(s: Settings) -> None:
    """A ValueError naming the first setting out of its range."""
    rules = [("steps", s.steps >= 1, ">= 1"), ("warmup", s.warmup >= 1, ">= 1"),
             ("max_tokens", s.max_tokens >= 1, ">= 1"),
             ("n_bpe", s.n_bpe >= 1, ">= 1"), ("n_chunk", s.n_chunk >= 1, ">= 1"),
             ("eval_every", s.eval_every >= 1, ">= 1"),
             ("n_eval", s.n_eval >= 1, ">= 1"),
             ("average_every", s.average_every >= 1, ">= 1"),
             ("average_last", s.average_last >= 0, ">= 0"),
             ("n_final", s.n_final is None or s.n_final >= 0, ">= 0 or None"),
             ("p_drop", 0 <= s.p_drop < 1, "in [0, 1)"),
             ("label_smoothing", 0 <= s.label_smoothing < 1, "in [0, 1)")]
    for name, ok, rule in rules:
        if not ok:
            raise ValueError(f"{name} must be {rule}, got {getattr(s, name)!r}")


def check_device(device, dtype="float32") -> None:
    """A ValueError, one line, unless arrays of ``dtype`` can be made on ``device``
    (None: NumPy; else a torch device such as "cpu", "cuda", "cuda:1", "mps")."""
    if device is None:
        if dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
        return
    try:
        import torch
    except ImportError:
        raise ValueError(f"device {device!r} needs torch, which is not installed "
                         f"(pip install torch)") from None
    dt = getattr(torch, str(dtype), None)
    if not isinstance(dt, torch.dtype) or not dt.is_floating_point:
        raise ValueError(f"dtype must be a torch floating-point type such as float32, "
                         f"got {dtype!r}")
    try:
        kind = torch.device(device).type
    except (RuntimeError, ValueError, TypeError) as e:
        raise ValueError(f"device {device!r} is not a torch device "
                         f"({str(e).splitlines()[0]})") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: torch sees no CUDA GPU on this machine "
                         f"(torch.cuda.is_available() is False)")
    if kind == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device {device!r}: torch sees no Apple GPU (mps) here")
    try:
        torch.zeros(1, dtype=dt, device=device)
    except (RuntimeError, AssertionError, TypeError) as e:
        raise ValueError(f"device {device!r} cannot be used: "
                         f"{str(e).splitlines()[0]}") from None


def check_out_dir(out_dir, force=False) -> Path:
    """The output folder, created if need be and checked writable; FileExistsError if
    it holds a model already (unless ``force``), OSError (one line) if it cannot be
    made or written."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(f"{out_dir} is a file, not a folder")
    if (out_dir / MODEL).exists() and not force:
        raise FileExistsError(f"{out_dir} already holds a model ({MODEL}): pass "
                              f"--force to overwrite it, or choose another --out-dir")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(out_dir / ".write_test", lambda p: p.write_bytes(b""))
        (out_dir / ".write_test").unlink()
    except OSError as e:
        raise OSError(f"cannot write in {out_dir}: {e.strerror or e}") from None
    return out_dir


def _write(out_dir, params, last, kept, bpe, record):
    """Every file whole or absent: each is written beside and renamed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / BPE_FILE, bpe.save)
    for k, p in kept.items():
        p.save(out_dir / EARLY.format(step=k))
    last.save(out_dir / LAST)
    write_atomic(out_dir / LOG, lambda path: path.write_text(
        json.dumps(record, indent=1) + "\n"))
    params.save(out_dir / MODEL)       # last: a folder with a model is complete


def _to_numpy(params):
    return params.map(lambda a: np.asarray(a.cpu() if hasattr(a, "cpu") else a,
                                           dtype=np.float32))


def _backend(params, device, dtype, seed):
    """(params, to_array, dropout rng) for NumPy (device None) or torch on device."""
    if device is None:
        dt = np.dtype(dtype)
        return (params.map(lambda a: a.astype(dt)), lambda a: a,
                np.random.default_rng(seed + 1))
    import torch

    dt = getattr(torch, dtype)
    return (params.map(lambda a: torch.as_tensor(a, dtype=dt, device=device)),
            lambda a: torch.as_tensor(a, device=device),
            torch.Generator(device=device).manual_seed(seed + 1))

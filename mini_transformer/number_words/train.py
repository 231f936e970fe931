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
from ..checkpoint import average_params, write_atomic
from ..optim import AdamState, adam_step, learning_rate
from ..params import TransformerParams
from ..transformer import loss_and_grads
from ..translation import exact_match, translate
from .data import (GERMAN_SPLIT, HELD_OUT_EVERY, dev_test_numbers, encode_pairs,
                   number_words, training_numbers)
from .files import BPE_FILE, EARLY, INTERRUPTED, LAST, LOG, MODEL



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
    round_share: the share of the draws by length of four digits or more rounded to
    whole thousands, shape_share: the share of the draws uniform over the 64 shapes
    (``training_numbers``). The evaluations during training and the final one
    decode development numbers (``dev_test_numbers``), never test numbers. The
    stopping step and the averaging were chosen on the development set: there the
    average of the last 5 checkpoints (steps 2,300 to 2,500) decoded all 5,181
    numbers exactly, greedy and beam 4; the last weights 5,147 greedy (5,181 beam 4),
    the weights after step 2,000 5,176 both ways
    (benchmarks/results/dev_choices.json).
    """

    steps: int = 2500
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
    shape_share: float = 0.25
    n_final: int | None = None
    average_last: int = 5
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

    Before the first step the settings (``check_settings``), the device
    (``check_device``) and the output folder (``check_out_dir``: it refuses a
    folder that holds an earlier run's files unless ``force``) are checked; nothing
    is written before the first save, and with ``force`` the earlier run's files
    are removed then (``clear_run_files``), so that the folder never mixes two runs.
    Every file is written whole or not at all. Ctrl-C
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
    held, _ = dev_test_numbers()       # the development numbers: never the test's
    bpe = BPE.learn(
        [t for p in number_words(training_numbers(rng, s.n_bpe, s.round_share,
                                                  s.shape_share))
         for t in p], s.vocab_size, split=s.bpe_split)
    params = TransformerParams.random(rng, vocab_size=len(bpe), d_model=s.d_model,
                                      n_heads=s.n_heads, n_layers=s.n_layers)
    eval_rng = np.random.default_rng(s.seed + 2)
    eval_src, eval_ref = zip(*number_words(eval_rng.choice(held, s.n_eval,
                                                           replace=False)))
    xp_params, to_array, drop_rng = _backend(params, s.device, s.dtype, s.seed)
    state = AdamState.zeros_like(xp_params)
    history, losses, batches, snapshots, kept = [], [], [], [], {}
    log(f"BPE of {len(bpe)} tokens, {len(held)} development numbers; "
        f"{time.perf_counter() - t_start:.1f} s")
    t0, step = time.perf_counter(), 0
    try:
        while step < s.steps:
            if not batches:  # a new chunk of the data stream
                src, tgt = encode_pairs(number_words(
                    training_numbers(rng, s.n_chunk, s.round_share,
                                     s.shape_share)), bpe)
                batches = batch_by_length(src, tgt, s.max_tokens, bpe.pad_id, rng)
            src, tgt = batches.pop()
            lr = learning_rate(step + 1, s.d_model, s.warmup)
            src_mask = padding_mask(np.sum(src != bpe.pad_id, axis=1), src.shape[1])
            loss, grads = loss_and_grads(
                xp_params, to_array(src), to_array(tgt[:, :-1]), to_array(tgt[:, 1:]),
                label_smoothing=s.label_smoothing, ignore_index=bpe.pad_id,
                src_mask=src_mask, p_drop=s.p_drop,
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
            if step % s.eval_every == 0 or (step == s.steps and s.n_final != 0):
                em = exact_match(translate(eval_src, xp_params, bpe, beam_size=None),
                                 eval_ref)
                seconds = time.perf_counter() - t0
                history.append(dict(step=step, loss=losses[-1], lr=lr,
                                    dev_exact_match=em, seconds=round(seconds, 2)))
                log(f"step {step:5d}  loss {float(loss):.4f}  lr {lr:.2e}  "
                    f"dev exact match {em:.3f} (greedy, {s.n_eval})  "
                    f"{seconds:.0f} s")
    except KeyboardInterrupt:
        if out_dir is None or step == 0:
            raise
        path = out_dir / INTERRUPTED
        out_dir.mkdir(parents=True, exist_ok=True)
        clear_run_files(out_dir)
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
                  held_out=f"1 in {HELD_OUT_EVERY} numbers of each shape, by a "
                           f"hash: half development, half test; the evaluations "
                           f"use the {len(held)} development numbers",
                  settings=dataclasses.asdict(s) | dict(
                      vocab_size=len(bpe), keep_steps=list(s.keep_steps),
                      device=str(s.device or "numpy")),
                  machine=dict(cpus=os.cpu_count(), processor=platform.machine(),
                               numpy=np.__version__),
                  train_seconds=round(train_seconds, 1),
                  dev_exact_match=final, log=history, losses=losses)
    if out_dir is not None:
        _write(out_dir, params, last, kept, bpe, record)
        log(f"wrote {out_dir / MODEL} and the rest to {out_dir}")
    if stopped:
        raise Interrupted(f"stopped during the final evaluation: the model is "
                          f"written to {out_dir / MODEL}" if out_dir is not None
                          else "stopped during the final evaluation")
    return params, bpe, record


def _final_evaluation(params, last, bpe, held, n_final, log, progress):
    """Exact match on ``n_final`` development numbers spread evenly over all of them
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
        log(f"dev exact match, {len(refs)} numbers: {name} {final[name]:.4f}")
    return final


def _duration(seconds):
    seconds = round(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds >= 60 else f"{seconds} s"


class SettingError(ValueError):
    """A setting out of its range; ``name`` is the setting's (``Settings``) name."""

    def __init__(self, name, message):
        super().__init__(message)
        self.name = name


MIN_MAX_TOKENS = 100   # a batch holds at least one pair: the longest has < 40 tokens
MIN_N_BPE = 1000       # fewer numbers may miss a letter of the number words


def check_settings(s: Settings) -> None:
    """A ``SettingError`` (a ValueError) naming the first setting out of its range."""
    snapshots = -(-s.steps // s.average_every) if s.average_every >= 1 else 0
    rules = [("steps", s.steps >= 1, ">= 1"),
             ("seed", isinstance(s.seed, int) and 0 <= s.seed < 2 ** 63,
              "a whole number >= 0"),
             ("average_last", s.average_last <= max(snapshots, 1),
              f"at most {max(snapshots, 1)}: {s.steps} steps keep "
              f"{snapshots} checkpoints, one every {s.average_every} steps"),
             ("shape_share", 0 <= s.shape_share <= 1, "in [0, 1]"),
             ("round_share", 0 <= s.round_share <= 1, "in [0, 1]"),
             ("warmup", s.warmup >= 1, ">= 1"),
             ("max_tokens", s.max_tokens >= MIN_MAX_TOKENS,
              f">= {MIN_MAX_TOKENS} (a batch must hold the longest pair)"),
             ("n_bpe", s.n_bpe >= MIN_N_BPE,
              f">= {MIN_N_BPE} (fewer numbers may miss a letter the BPE needs)"),
             ("n_chunk", s.n_chunk >= 1, ">= 1"),
             ("eval_every", s.eval_every >= 1, ">= 1"),
             ("n_eval", s.n_eval >= 1, ">= 1"),
             ("average_every", s.average_every >= 1, ">= 1"),
             ("average_last", s.average_last >= 0, ">= 0"),
             ("n_final", s.n_final is None or s.n_final >= 0, ">= 0 or None"),
             ("p_drop", 0 <= s.p_drop < 1, "in [0, 1)"),
             ("label_smoothing", 0 <= s.label_smoothing < 1, "in [0, 1)")]
    for name, ok, rule in rules:
        if not ok:
            raise SettingError(name, f"{name} must be {rule}, got "
                                     f"{getattr(s, name)!r}")


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
    if kind not in ("cpu", "cuda", "mps", "xpu"):
        raise ValueError(f"device {device!r} holds no data to train on: use cpu, "
                         f"cuda, mps or xpu")
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


def run_files(out_dir):
    """The files of a run in ``out_dir`` (the model, its BPE, the log, the last,
    early and interrupted weights), those that exist."""
    out_dir = Path(out_dir)
    names = [MODEL, BPE_FILE, LOG, LAST, INTERRUPTED]
    early = EARLY.format(step="*")
    return [p for p in [*(out_dir / n for n in names), *sorted(out_dir.glob(early))]
            if p.exists()]


def clear_run_files(out_dir) -> None:
    """Remove an earlier run's files from ``out_dir`` (``run_files``): a folder never
    mixes two runs."""
    for p in run_files(out_dir):
        p.unlink()


def check_out_dir(out_dir, force=False) -> Path:
    """The output folder, checked: ValueError if empty, NotADirectoryError if a file,
    FileExistsError if it holds an earlier run's files (``run_files``: a model, or
    weights saved by Ctrl-C) unless ``force``, PermissionError (one line) if it, or
    the folder it would be made in, cannot be written. Nothing is created: the
    folder is made when the first file is saved."""
    if str(out_dir).strip() == "":
        raise ValueError("the folder name is empty: name a folder (it is made if "
                         "need be)")
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(f"{out_dir} is a file, not a folder")
    earlier = run_files(out_dir) if out_dir.is_dir() else []
    if earlier and not force:
        raise FileExistsError(f"{out_dir} already holds files of a run "
                              f"({', '.join(p.name for p in earlier[:3])}"
                              f"{', ...' if len(earlier) > 3 else ''}): pass --force "
                              f"to replace them, or choose another --out-dir")
    parent = out_dir
    while not parent.exists():      # the folder that would hold the new ones
        parent = parent.parent
    if not parent.is_dir():
        raise NotADirectoryError(f"cannot make {out_dir}: {parent} is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot write in {parent}: permission denied")
    return out_dir


def _write(out_dir, params, last, kept, bpe, record):
    """Every file whole or absent: each is written beside and renamed; an earlier
    run's files are removed first."""
    out_dir.mkdir(parents=True, exist_ok=True)
    clear_run_files(out_dir)
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

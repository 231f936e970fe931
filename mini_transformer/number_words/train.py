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

DATA = Path(__file__).resolve().parents[2] / "book" / "data"
MODEL, BPE_FILE, LOG = "numbers_en_de.npz", "numbers_en_de_bpe.json", \
    "numbers_en_de_log.json"
LAST, EARLY = "numbers_en_de_last.npz", "numbers_en_de_step{step}.npz"


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
    thousands (``training_numbers``).
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
    average_last: int = 5
    average_every: int = 50
    keep_steps: tuple = (500,)


def train(settings: Settings = Settings(), out_dir=DATA, log=print, progress=None):
    """Train from scratch; write the model, the BPE and the log to ``out_dir`` (None:
    write nothing). progress: called with a one-line status after every step (the
    command's progress bar), log: with each evaluation's line. The random draws come
    in a fixed order (BPE corpus, weights, then the data chunks), so a shorter run
    repeats the first steps of a longer one.
    Returns (params as NumPy, bpe, log dict)."""
    s = settings
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
    while step < s.steps:
        if not batches:  # a new chunk of the data stream
            src, tgt = encode_pairs(number_words(
                training_numbers(rng, s.n_chunk, s.round_share)), bpe)
            batches = batch_by_length(src, tgt, s.max_tokens, bpe.pad_id, rng)
        src, tgt = batches.pop()
        step += 1
        lr = learning_rate(step, s.d_model, s.warmup)
        src_mask = padding_mask(np.sum(src != bpe.pad_id, axis=1), src.shape[1])
        loss, grads = loss_and_grads(
            xp_params, to_array(src), to_array(tgt[:, :-1]), to_array(tgt[:, 1:]),
            s.label_smoothing, bpe.pad_id, src_mask=src_mask, p_drop=s.p_drop,
            rng=drop_rng)
        xp_params, state = adam_step(xp_params, grads, state, lr)
        losses.append(round(float(loss), 5))
        if progress is not None:
            progress(f"step {step:5d}/{s.steps}  loss {losses[-1]:.4f}  lr {lr:.2e}")
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
                f"held-out exact match {em:.3f} (greedy, {s.n_eval})  {seconds:.0f} s")
    train_seconds = time.perf_counter() - t0
    last = _to_numpy(xp_params)
    params = _to_numpy(average_params(snapshots)) if s.average_last > 1 else last
    final = {}
    if s.n_final != 0:
        sources, refs = zip(*number_words(held[:s.n_final]))
        for name, p, beam in (("greedy", params, None), ("beam4", params, 4),
                              ("last_greedy", last, None)):
            final[name] = exact_match(translate(sources, p, bpe, beam_size=beam), refs)
            log(f"held-out exact match, all {len(refs)}: {name} {final[name]:.4f}")
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
        _write(Path(out_dir), params, last, kept, bpe, record)
        log(f"wrote {Path(out_dir) / MODEL} and the rest to {out_dir}")
    return params, bpe, record


def _write(out_dir, params, last, kept, bpe, record):
    out_dir.mkdir(parents=True, exist_ok=True)
    params.save(out_dir / MODEL)
    last.save(out_dir / LAST)
    for k, p in kept.items():
        p.save(out_dir / EARLY.format(step=k))
    bpe.save(out_dir / BPE_FILE)
    (out_dir / LOG).write_text(json.dumps(record, indent=1) + "\n")


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

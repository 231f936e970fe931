"""Training the help-page language model from scratch, and the files it writes.

Windows of ``context + 1`` bytes are drawn at random from the training text; the
model (``lm_params``) learns with the NumPy hand gradients (``lm_loss_and_grads``)
and Adam, the learning rate rising linearly for ``warmup`` steps and then falling
as a cosine to a tenth of ``lr``. Every ``eval_every`` steps the development text
is scored; the weights with the best development score are the model written, and
the log so far beside them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..lm import lm_loss, lm_loss_and_grads, lm_params
from ..optim import AdamState, adam_step
from . import data
from .files import LOG, MODEL, save_model
from .score import bits_per_character


@dataclass(frozen=True)
class Settings:
    """Every choice of a training run; the defaults made the shipped model."""

    steps: int = 3000
    seed: int = 0
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 2
    context: int = 128
    batch: int = 16
    lr: float = 2e-3
    warmup: int = 200
    eval_every: int = 250
    dtype: str = "float32"


def check_settings(s: Settings) -> None:
    """Refuse, before any work, settings that cannot train: one message naming the
    option."""
    for name in ("steps", "d_model", "n_heads", "n_layers", "context", "batch",
                 "warmup", "eval_every"):
        value = getattr(s, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be an integer >= 1, "
                             f"got {value!r}")
    if s.d_model % s.n_heads:
        raise ValueError(f"--d-model ({s.d_model}) must be a multiple of --n-heads "
                         f"({s.n_heads})")
    if not (isinstance(s.lr, float) and 0 < s.lr < 1):
        raise ValueError(f"--lr must be a number in (0, 1), got {s.lr!r}")
    if s.dtype not in ("float32", "float64"):
        raise ValueError(f"--dtype must be float32 or float64, got {s.dtype!r}")


def learning_rate(step: int, s: Settings) -> float:
    """Linear warm-up to s.lr over s.warmup steps, then a cosine down to s.lr / 10."""
    if step <= s.warmup:
        return s.lr * step / s.warmup
    done = (step - s.warmup) / max(1, s.steps - s.warmup)
    return s.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(done, 1.0))))


def windows(tokens, starts, context):
    """The windows tokens[i : i + context + 1] for each i in starts,
    (len(starts), context + 1)."""
    return np.stack([tokens[i:i + context + 1] for i in starts])


def train(s: Settings, out_dir, log=print) -> dict:
    """Train with settings ``s``; write the best weights and the log to ``out_dir``.
    Returns the log (a dict)."""
    check_settings(s)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dtype = np.dtype(s.dtype)
    rng = np.random.default_rng(s.seed)
    train_ids = data.encode(data.load_text("train"))
    dev_text = data.load_text("dev")
    params = lm_params(rng, vocab_size=data.VOCAB_SIZE, d_model=s.d_model,
                       n_heads=s.n_heads, n_layers=s.n_layers).map(
                           lambda a: a.astype(dtype))
    state = AdamState.zeros_like(params)
    probe = windows(train_ids, rng.integers(0, len(train_ids) - s.context - 1, 64),
                    s.context)                       # a fixed sample of training text
    record = {"settings": dataclasses.asdict(s), "steps": [], "train_loss": [],
              "train_bpc_probe": [], "dev_bpc": [], "batch_loss": []}
    best, start = math.inf, time.time()
    cpu0 = time.process_time()
    for step in range(1, s.steps + 1):
        starts = rng.integers(0, len(train_ids) - s.context - 1, s.batch)
        loss, grads = lm_loss_and_grads(params, windows(train_ids, starts, s.context))
        params, state = adam_step(params, grads, state, learning_rate(step, s))
        record["batch_loss"].append(round(float(loss), 4))
        if step % s.eval_every == 0 or step == s.steps:
            probe_loss = float(lm_loss(params, probe))
            dev_bpc = bits_per_character(params, dev_text, s.context)
            record["steps"].append(step)
            record["train_loss"].append(round(probe_loss, 4))
            record["train_bpc_probe"].append(round(probe_loss / math.log(2), 4))
            record["dev_bpc"].append(round(dev_bpc, 4))
            if dev_bpc < best:
                best = dev_bpc
                record["best_step"] = step
                save_model(params, out_dir / MODEL)
            # the log so far, beside the best weights: a stopped run keeps both
            (out_dir / LOG).write_text(json.dumps(record) + "\n")
            log(f"step {step}: batch loss {float(loss):.3f}, dev {dev_bpc:.3f} bits "
                f"per character, {time.time() - start:.0f} s")
    record |= {"wall_s": round(time.time() - start, 1),
               "cpu_s": round(time.process_time() - cpu0, 1),
               "load_average": [round(x, 2) for x in os.getloadavg()],
               "machine": platform.machine(), "python": platform.python_version(),
               "numpy": np.__version__, "best_dev_bpc": round(best, 4)}
    (out_dir / LOG).write_text(json.dumps(record) + "\n")
    log(f"done: best dev {best:.3f} bits per character at step "
        f"{record['best_step']}; {out_dir / MODEL}")
    return record


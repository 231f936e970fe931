"""What each change since 2017 buys on the help-page language model: the 2017 block
(LayerNorm, sinusoidal positions, ReLU feed-forward, multi-head attention), each of
RMSNorm, rotary position embedding, SwiGLU and grouped-query attention alone, and all
four together (a Llama-style block), trained for the same number of steps and for the
same CPU seconds from the same seeds, scored on the development text.

The blocks are written with the package's functions (``layer_norm``, ``rms_norm``,
``rotary_embedding``, ``swiglu``, ``feed_forward``'s equation, ``grouped_query_attention``)
running on torch tensors, and trained with torch.autograd and torch.optim.Adam: the same
equations as the NumPy ones, differentiated by torch, so that the 36 runs (and 6 timings)
fit in minutes.
Every block is pre-LN, with a final norm and the tied embedding; SwiGLU's hidden width
is 2/3 · 4 · d_model (the ReLU network's parameter count); grouped-query attention uses
h/2 key/value heads. Windows of ``context + 1`` bytes at random from the training text;
the development score is bits per byte over fixed windows of the development text.

Two arms, each 6 blocks x 3 seeds (seeds 0, 1, 2), one thread:

- equal steps: every run trains ``--steps`` steps;
- equal seconds: every run gets the same CPU-time budget (process time), the median CPU
  seconds of the 2017 block's equal-steps runs. The learning-rate schedule is a function
  of the step (linear warm-up over ``warmup`` steps, then constant), so a time budget is
  turned into steps before training: each block first trains a throw-away copy (seed
  99) for a few untimed and then ``--calibrate`` timed steps, its CPU seconds per step
  give its step count, round(budget / seconds per step), and its three seeds train that
  many steps. The steps and the CPU seconds each run actually used are recorded.

    python benchmarks/lm_ablation.py              # both arms, about 10 CPU minutes
    python benchmarks/lm_ablation.py --arm seconds  # the equal-seconds arm only, with the
                                                    # budget from the results file's steps arm
    python benchmarks/lm_ablation.py --quick      # a smoke test

Results go to benchmarks/results/lm_ablation.json: ``blocks`` holds the equal-steps arm,
``equal_seconds`` the other.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")                # one thread: CPU seconds compare

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import cpu_model, load_average  # noqa: E402

import mini_transformer as mt  # noqa: E402
from mini_transformer.pydoc_lm import data  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "lm_ablation.json"
CHANGES = ("rmsnorm", "rope", "swiglu", "gqa")
BLOCKS = {"2017": (), **{c: (c,) for c in CHANGES}, "all four": CHANGES}


def init(changes, rng, d, h, layers, vocab=256):
    """The block's weights, float32 torch tensors that require gradients."""
    d_k, g = d // h, (h // 2 if "gqa" in changes else h)
    d_ff = 4 * d
    d_h = int(round(2 / 3 * d_ff)) if "swiglu" in changes else d_ff

    def u(*shape, fan_in, fan_out):
        b = math.sqrt(6 / (fan_in + fan_out))
        return rng.uniform(-b, b, size=shape)

    w = {"E": rng.normal(0, d ** -0.5, size=(vocab, d)), "nf_g": np.ones(d),
         "nf_b": np.zeros(d)}
    for i in range(layers):
        w |= {f"{i}.n1_g": np.ones(d), f"{i}.n1_b": np.zeros(d), f"{i}.n2_g": np.ones(d),
              f"{i}.n2_b": np.zeros(d),
              f"{i}.Wq": u(d, h * d_k, fan_in=d, fan_out=d),
              f"{i}.Wk": u(d, g * d_k, fan_in=d, fan_out=d),
              f"{i}.Wv": u(d, g * d_k, fan_in=d, fan_out=d),
              f"{i}.Wo": u(h * d_k, d, fan_in=d, fan_out=d)}
        if "swiglu" in changes:
            w |= {f"{i}.W1": u(d, d_h, fan_in=d, fan_out=d_h),
                  f"{i}.W3": u(d, d_h, fan_in=d, fan_out=d_h),
                  f"{i}.W2": u(d_h, d, fan_in=d_h, fan_out=d)}
        else:
            w |= {f"{i}.W1": u(d, d_h, fan_in=d, fan_out=d_h), f"{i}.b1": np.zeros(d_h),
                  f"{i}.W2": u(d_h, d, fan_in=d_h, fan_out=d), f"{i}.b2": np.zeros(d)}
    if "rmsnorm" in changes:                       # RMSNorm has no β
        w = {k: a for k, a in w.items() if not k.endswith("_b")}
    return {k: torch.tensor(a, dtype=torch.float32, requires_grad=True)
            for k, a in w.items()}


def forward(w, tokens, changes, h, layers):
    """Logits (batch, n, 256) of the block with ``changes``."""
    E = w["E"]
    b, n = tokens.shape
    d = E.shape[1]
    d_k = d // h
    x = E[tokens] * math.sqrt(d)
    if "rope" not in changes:
        x = x + torch.as_tensor(mt.positional_encoding(n, d), dtype=x.dtype)
    mask = torch.as_tensor(mt.causal_mask(n))
    pos = np.arange(n)

    def norm(t, i):
        if "rmsnorm" in changes:
            return mt.rms_norm(t, w[f"{i}_g"], 1e-5)
        return mt.layer_norm(t, w[f"{i}_g"], w[f"{i}_b"], 1e-5)

    for i in range(layers):
        a = norm(x, f"{i}.n1")
        q = (a @ w[f"{i}.Wq"]).reshape(b, n, -1, d_k).transpose(1, 2)   # (b, h, n, d_k)
        k = (a @ w[f"{i}.Wk"]).reshape(b, n, -1, d_k).transpose(1, 2)   # (b, g, n, d_k)
        v = (a @ w[f"{i}.Wv"]).reshape(b, n, -1, d_k).transpose(1, 2)
        if "rope" in changes:
            q, k = mt.rotary_embedding(q, pos), mt.rotary_embedding(k, pos)
        heads, _ = mt.grouped_query_attention(q, k, v, mask)             # (b, h, n, d_k)
        x = x + heads.transpose(1, 2).reshape(b, n, h * d_k) @ w[f"{i}.Wo"]
        a = norm(x, f"{i}.n2")
        if "swiglu" in changes:
            x = x + mt.swiglu(a, w[f"{i}.W1"], w[f"{i}.W3"], w[f"{i}.W2"])
        else:
            x = x + torch.relu(a @ w[f"{i}.W1"] + w[f"{i}.b1"]) @ w[f"{i}.W2"] \
                + w[f"{i}.b2"]
    x = norm(x, "nf")
    return x @ E.T


def setup(changes, seed, a):
    """The block's weights and a function that takes one training step (its number)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    w = init(changes, rng, a.d_model, a.heads, a.layers)
    opt = torch.optim.Adam(w.values(), lr=a.lr, betas=(0.9, 0.98), eps=1e-9)
    train = data.encode(data.load_text("train"))

    def step(i):
        lr = a.lr * min(1.0, i / a.warmup)        # a function of the step only
        for group in opt.param_groups:
            group["lr"] = lr
        starts = rng.integers(0, len(train) - a.context - 1, a.batch)
        win = torch.as_tensor(np.stack([train[j:j + a.context + 1] for j in starts]))
        logits = forward(w, win[:, :-1], changes, a.heads, a.layers)
        loss = F.cross_entropy(logits.reshape(-1, 256), win[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()

    return w, step


def run(changes, seed, a, steps):
    w, step = setup(changes, seed, a)
    dev = data.encode(data.load_text("dev"))
    dev_rng = np.random.default_rng(1234)          # the same dev windows for every run
    dev_starts = dev_rng.integers(0, len(dev) - a.context - 1, a.n_dev)
    dev_win = torch.as_tensor(np.stack([dev[i:i + a.context + 1] for i in dev_starts]))
    start = time.process_time()
    for i in range(1, steps + 1):
        step(i)
    seconds = time.process_time() - start
    with torch.no_grad():
        logits = forward(w, dev_win[:, :-1], changes, a.heads, a.layers)
        dev_loss = F.cross_entropy(logits.reshape(-1, 256), dev_win[:, 1:].reshape(-1))
    n_params = sum(t.numel() for t in w.values())
    return {"dev_bits_per_byte": round(dev_loss.item() / math.log(2), 4),
            "cpu_s": round(seconds, 1), "parameters": n_params}


def seconds_per_step(changes, a, untimed=10):
    """CPU seconds per training step of a throw-away copy of the block (seed 99)."""
    _, step = setup(changes, 99, a)
    for i in range(1, untimed + 1):
        step(i)
    start = time.process_time()
    for i in range(untimed + 1, untimed + a.calibrate + 1):
        step(i)
    return (time.process_time() - start) / a.calibrate


def summary(changes, runs, **extra):
    scores = [r["dev_bits_per_byte"] for r in runs]
    return {"changes": list(changes), **extra, "dev_bits_per_byte": scores,
            "mean": round(statistics.mean(scores), 4),
            "spread": round(max(scores) - min(scores), 4),
            "cpu_s": [r["cpu_s"] for r in runs], "parameters": runs[0]["parameters"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--arm", choices=("both", "steps", "seconds"), default="both")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--calibrate", type=int, default=60,
                    help="timed steps that measure a block's CPU seconds per step")
    a = ap.parse_args(argv)
    if a.quick and a.arm != "both":
        ap.error("--quick runs both arms (its budget is its own)")
    a.d_model, a.heads, a.layers, a.context, a.batch = 64, 4, 2, 64, 16
    a.lr, a.warmup, a.n_dev = 3e-3, 100, 64
    if a.quick:
        a.steps, a.seeds, a.calibrate = 5, 1, 3
    torch.set_num_threads(1)
    settings = {k: v for k, v in vars(a).items() if k not in ("quick", "arm", "calibrate")}
    if a.arm == "seconds":
        out = json.loads(OUT.read_text())
        if out["settings"] != settings:
            sys.exit(f"{OUT} was made with other settings: {out['settings']}")
    else:
        out = {"settings": settings, "blocks": {}}
        for name, changes in BLOCKS.items():
            runs = [run(changes, seed, a, a.steps) for seed in range(a.seeds)]
            out["blocks"][name] = summary(changes, runs)
            print("steps", name, out["blocks"][name], flush=True)
        out["machine"] = {"cpu": cpu_model(), "load_average": load_average()}
    if a.arm != "steps":
        budget = statistics.median(out["blocks"]["2017"]["cpu_s"])
        arm = {"budget_cpu_s": budget, "calibration_steps": a.calibrate, "blocks": {}}
        for name, changes in BLOCKS.items():
            per_step = seconds_per_step(changes, a)
            steps = max(1, round(budget / per_step))
            runs = [run(changes, seed, a, steps) for seed in range(a.seeds)]
            arm["blocks"][name] = summary(changes, runs, steps=steps,
                                          calibrated_s_per_step=round(per_step, 5))
            print("seconds", name, arm["blocks"][name], flush=True)
        arm["load_average"] = load_average()
        out["equal_seconds"] = arm
    if not a.quick:
        OUT.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()

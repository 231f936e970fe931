"""Ablations of the paper's training recipe on the reverse task (chapter 14).

    python benchmarks/ablations.py            # the full run (a few minutes on 2 cores)
    python benchmarks/ablations.py --quick    # a smoke test (seconds)

Four experiments, each over several seeds, each run trained from scratch with the
package's ``transformer`` on torch tensors and torch's autograd (chapter 14 shows that this
gives the package's hand-derived gradients), the package's ``adam_step`` (β₁ 0.9, β₂ 0.98,
ε 1e-9), the paper's learning-rate schedule, eq. (3), and label smoothing 0.1 unless the
experiment varies it:

- ``scale_dk64`` and ``scale_dk8``: attention with and without the 1/√d_k of the paper's
  eq. (1), at one width and one schedule (d_model 64, d_ff 128, the same peak learning
  rate): one head, so the paper's d_k = 64, against eight heads, so d_k = 8, five seeds
  each. Without the scale the scores are q·k: the package's attention is called on √d_k·q,
  which cancels its division. Also recorded: the mean largest attention weight of the
  first encoder layer at initialisation, and the norm of the first step's gradient of the
  encoder's W_Q.
- ``layernorm``: a deeper model (6 + 6 layers): post-LN with warm-up (the paper), post-LN
  without warm-up, pre-LN without warm-up (Xiong et al., 2020). "Without warm-up" means the
  schedule's peak from the first step, then its decay: lr(step) = lrate(max(step, warmup)).
  The pre-LN model has a final LayerNorm after each stack (γ = 1, β = 0), as in torch.
- ``smoothing``: label smoothing ε = 0 against ε = 0.1 (§5.4) on the chapter's model:
  on held-out sequences, the exact-sequence accuracy (greedy decoding), the confidence (mean
  largest probability of the next token, teacher-forced) and the perplexity (exp of the mean
  negative log-likelihood of the correct next token, teacher-forced, no smoothing).

Every run records its training loss at every step and, every ``eval_every`` steps, the
held-out accuracy. Runs go to worker processes (two on a 2-core machine), one torch thread
each: the matrices are small, and one run per core keeps both cores busy. Results go to
``benchmarks/results/ablations.json``, which chapter 14 plots.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the repository's package, when run as a script

import mini_transformer as mt  # noqa: E402
from mini_transformer import tasks  # noqa: E402
from mini_transformer.optim import AdamState, adam_step, learning_rate  # noqa: E402

VOCAB, LENGTH = 12, 8          # the chapter's reverse task: 10 symbols, 8 tokens
N_TEST = 500                   # held-out sequences per evaluation

# model: d_model, n_heads, d_ff, n_layers; train: batch, steps, warmup, eval_every.
# settings: name -> (scale, norm_first, warmup, label_smoothing).
FULL = {
    # the scale at d_k = 64 and d_k = 8: the same d_model, d_ff, schedule and seeds
    "scale_dk64": dict(model=dict(d_model=64, n_heads=1, d_ff=128, n_layers=2),
                       batch=64, steps=400, warmup=200, eval_every=50,
                       seeds=[0, 1, 2, 3, 4],
                       settings={"scaled": (True, False, True, 0.1),
                                 "unscaled": (False, False, True, 0.1)}),
    "scale_dk8": dict(model=dict(d_model=64, n_heads=8, d_ff=128, n_layers=2),
                      batch=64, steps=400, warmup=200, eval_every=50,
                      seeds=[0, 1, 2, 3, 4],
                      settings={"scaled": (True, False, True, 0.1),
                                "unscaled": (False, False, True, 0.1)}),
    "layernorm": dict(model=dict(d_model=32, n_heads=4, d_ff=64, n_layers=6),
                      batch=32, steps=300, warmup=100, eval_every=50, seeds=[0, 1, 2],
                      settings={"post-LN, warm-up": (True, False, True, 0.1),
                                "post-LN, no warm-up": (True, False, False, 0.1),
                                "pre-LN, no warm-up": (True, True, False, 0.1)}),
    "smoothing": dict(model=dict(d_model=32, n_heads=4, d_ff=64, n_layers=2),
                      batch=64, steps=400, warmup=200, eval_every=50, seeds=[0, 1, 2, 3],
                      settings={"eps=0": (True, False, True, 0.0),
                                "eps=0.1": (True, False, True, 0.1)}),
}
QUICK = {
    name: dict(cfg, model=dict(cfg["model"], d_model=16, d_ff=32,
                               n_layers=min(cfg["model"]["n_layers"], 2)),
               batch=8, steps=6, warmup=3, eval_every=3, seeds=[0])
    for name, cfg in FULL.items()
}


def unscaled_attention(q, k, v, mask=None):
    """softmax(Q Kᵀ) V: the package's attention on √d_k·Q, which cancels its 1/√d_k."""
    return mt.scaled_dot_product_attention(q * math.sqrt(q.shape[-1]), k, v, mask)


def initial_params(seed, model, norm_first):
    """The paper's model with random weights (``TransformerParams.random``), NumPy float64;
    a pre-LN model gets a final LayerNorm after each stack (γ = 1, β = 0)."""
    params = mt.TransformerParams.random(np.random.default_rng(seed), vocab_size=VOCAB,
                                         **model)
    if norm_first:
        d = params.d_model
        params = dataclasses.replace(params, encoder_norm_gamma=np.ones(d),
                                     encoder_norm_beta=np.zeros(d),
                                     decoder_norm_gamma=np.ones(d),
                                     decoder_norm_beta=np.zeros(d))
    return params


def lr_at(step, d_model, warmup, warm_up):
    """The paper's eq. (3); without warm-up, its peak from the first step, then its decay."""
    return learning_rate(step if warm_up else max(step, warmup), d_model, warmup)


def evaluate(params, test, attention, norm_first):
    """Held-out accuracy (greedy decoding with the cache), confidence and perplexity
    (teacher-forced), and the mean largest weight of the first encoder layer's heads."""
    import torch

    src, tgt_in, tgt_out = (torch.as_tensor(a) for a in test)
    with torch.no_grad():
        decoded = mt.greedy_decode(src, params, LENGTH + 2, tasks.BOS, tasks.EOS,
                                   norm_first=norm_first, attention=attention)
        logits = mt.transformer(src, tgt_in, params, norm_first=norm_first,
                                attention=attention)
        log_p = torch.log_softmax(logits, dim=-1)
        nll = -log_p.gather(-1, tgt_out[..., None]).mean()
        x = mt.embed(src, params.embedding)
        layer = params.encoder_layers[0]
        h = mt.layer_norm(x, layer.norm1_gamma, layer.norm1_beta, layer.eps) if norm_first else x
        _, weights = mt.multi_head_attention(h, layer.attn, attention=attention)
    return {
        "accuracy": tasks.sequence_accuracy(decoded.numpy(), test[2]),
        "confidence": float(log_p.exp().max(dim=-1).values.mean()),
        "perplexity": float(nll.exp()),
        "nll": float(nll),
        "max_weight_enc0": float(weights.max(dim=-1).values.mean()),
    }


def run(experiment, setting, seed, cfg):
    """Train one model from scratch; returns its record."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    scale, norm_first, warm_up, smoothing = cfg["settings"][setting]
    attention = None if scale else unscaled_attention
    model, d_model, warmup = cfg["model"], cfg["model"]["d_model"], cfg["warmup"]
    rng = np.random.default_rng(1000 + seed)              # the training batches
    test = tasks.reverse_task(np.random.default_rng(2000 + seed), N_TEST, LENGTH, VOCAB)
    params = initial_params(seed, model, norm_first).map(
        lambda a: torch.tensor(a, dtype=torch.float32))
    state = AdamState.zeros_like(params)
    record = {"experiment": experiment, "setting": setting, "seed": seed,
              "initial": evaluate(params, test, attention, norm_first),
              "loss": [], "lr": [], "eval_steps": [], "evals": [], "diverged": False}
    t0 = time.perf_counter()
    for step in range(1, cfg["steps"] + 1):
        src, tgt_in, tgt_out = (torch.as_tensor(a) for a in
                                tasks.reverse_task(rng, cfg["batch"], LENGTH, VOCAB))
        leaves = params.map(lambda a: a.detach().requires_grad_(True))
        logits = mt.transformer(src, tgt_in, leaves, norm_first=norm_first,
                                attention=attention)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt_out.reshape(-1),
                               label_smoothing=smoothing)
        loss.backward()
        grads = leaves.map(lambda a: a.grad)
        if step == 1:
            record["grad_norm_W_Q_step1"] = float(torch.sqrt(sum(
                (layer.attn.W_Q.grad ** 2).sum() for layer in leaves.encoder_layers)))
        lr = lr_at(step, d_model, warmup, warm_up)
        with torch.no_grad():
            params, state = adam_step(params, grads, state, lr)
        record["loss"].append(loss.item())
        record["lr"].append(lr)
        if not math.isfinite(record["loss"][-1]):
            record["diverged"] = True
            break
        if step % cfg["eval_every"] == 0 or step == cfg["steps"]:
            record["eval_steps"].append(step)
            record["evals"].append(evaluate(params, test, attention, norm_first))
    record["train_s"] = time.perf_counter() - t0
    return record


def _run_packed(args):
    return run(*args)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny settings, seconds")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "ablations.json")
    ap.add_argument("--only", nargs="*", help="run only these experiments")
    ap.add_argument("--jobs", type=int, default=None,
                    help="worker processes (default: 1 with --quick, else min(2, CPUs))")
    args = ap.parse_args(argv)
    import torch

    configs = QUICK if args.quick else FULL
    names = args.only or list(configs)
    jobs = args.jobs or (1 if args.quick else min(2, os.cpu_count() or 1))
    work = [(name, setting, seed, configs[name]) for name in names
            for setting in configs[name]["settings"] for seed in configs[name]["seeds"]]
    t0 = time.perf_counter()
    load_before = [round(x, 2) for x in os.getloadavg()]
    if jobs == 1:
        records = [_run_packed(w) for w in work]
    else:
        import multiprocessing

        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as ex:
            records = list(ex.map(_run_packed, work))
    total = time.perf_counter() - t0
    result = {
        "meta": {
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "quick": args.quick, "jobs": jobs, "torch_threads_per_run": 1,
            "cpu_count": os.cpu_count(), "machine": platform.machine(),
            "python": platform.python_version(), "numpy": np.__version__,
            "torch": torch.__version__, "dtype": "float32",
            "vocab_size": VOCAB, "length": LENGTH, "n_test": N_TEST,
            "load_average_before": load_before,
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "total_s": total,
        },
        "experiments": {
            name: {"config": {k: v for k, v in configs[name].items() if k != "settings"}
                   | {"settings": {s: dict(zip(("scale", "norm_first", "warm_up",
                                                "label_smoothing"), v))
                                   for s, v in configs[name]["settings"].items()}},
                   "runs": [r for r in records if r["experiment"] == name]}
            for name in names
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for name in names:
        print(f"\n{name}: {configs[name]['model']}")
        for r in result["experiments"][name]["runs"]:
            last = r["evals"][-1] if r["evals"] else {}
            print(f"  {r['setting']:22} seed {r['seed']}  loss {r['loss'][0]:.3f} -> "
                  f"{r['loss'][-1]:.3f}  acc {last.get('accuracy', float('nan')):.3f}  "
                  f"conf {last.get('confidence', float('nan')):.3f}  "
                  f"ppl {last.get('perplexity', float('nan')):.3f}"
                  f"{'  DIVERGED' if r['diverged'] else ''}  ({r['train_s']:.1f} s)")
    print(f"\ntotal {total:.1f} s with {jobs} worker(s); wrote {args.out}")
    return result


if __name__ == "__main__":
    main()

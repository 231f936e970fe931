"""One training step (forward, backward, Adam) of the same encoder–decoder, several ways,
in one run (ratios are only meaningful within a run), and the time to 99% accuracy.

    python benchmarks/training.py            # the full run (a few minutes on 2 cores)
    python benchmarks/training.py --quick    # a smoke test (seconds)
    python benchmarks/training.py --memory   # peak memory of one NumPy step only

- ``numpy_hand``: the package on NumPy arrays, ``loss_and_grads`` (the hand-derived
  backward of chapter 13) and the package's ``adam_step``.
- ``package_autograd``: the same package functions on torch tensors, the loss's
  gradient by ``torch.autograd``, the package's ``adam_step``.
- ``torch_nn``: ``torch.nn.Transformer`` (from ``mini_transformer.torch.convert.to_torch``: post-LN,
  no final norms) with the same tied embedding, √d_model scale and positional
  encoding, ``torch.nn.functional.cross_entropy`` and ``torch.optim.Adam``
  (β = (0.9, 0.98), ε = 1e-9, as the paper); dropout and padding as the NumPy step.

float32, at four sizes: the training chapter's model (vocabulary 12, d_model 32, 4 heads,
d_ff 64, 2 + 2 layers, batch 64 of 8 source and 9 target tokens), the translation
chapter's model (vocabulary 500, d_model 64, 4 heads, d_ff 256, 2 + 2 layers, a batch of
300 × 10 source tokens with padding masks and label smoothing 0.1) with dropout 0.1 and
without, and a base-width model of 2 + 2 layers (d_model 512, 8 heads, d_ff 2048,
vocabulary 1000, batch 8 × 64 tokens). The ways are interleaved, step by step (A, B, C,
A, B, C, ...), after two untimed steps each, and the median kept: the machine is shared.
The peak of the NumPy step's allocations (tracemalloc) is recorded for each size. Then
the chapter's model is trained by ``numpy_hand`` on the reverse task until 99% of 500
held-out sequences are decoded exactly (greedy, with the cache, checked every 25 steps).
Results go to benchmarks/results/training.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import mini_transformer as mt
from mini_transformer import tasks
from mini_transformer.optim import AdamState, adam_step, learning_rate
from mini_transformer.row_blocks import cpus
from mini_transformer.tree import from_named, named_leaves, named_settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (TorchNNTrainer, cpu_model, load_average,  # noqa: E402
                    peak_traced_bytes, timed)

HERE = Path(__file__).resolve().parent
SIZES = {
    "notebook": dict(vocab_size=12, d_model=32, n_heads=4, d_ff=64, n_layers=2,
                     batch=64, n_src=8, n_tgt=9),
    "translation": dict(vocab_size=500, d_model=64, n_heads=4, d_ff=256, n_layers=2,
                        batch=300, n_src=10, n_tgt=12, p_drop=0.1, pad=True),
    "translation_no_dropout": dict(vocab_size=500, d_model=64, n_heads=4, d_ff=256,
                                   n_layers=2, batch=300, n_src=10, n_tgt=12,
                                   p_drop=0.0, pad=True),
    "base": dict(vocab_size=1000, d_model=512, n_heads=8, d_ff=2048, n_layers=2,
                 batch=8, n_src=64, n_tgt=64),
}
# numpy_hand step / torch_nn step, at most
TARGETS = {"notebook": 1.0, "translation": 1.0, "translation_no_dropout": 0.9,
           "base": 1.2}
WARMUP, LR_SCALE = 200, 1.0               # the chapter's schedule: learning_rate(step, d, 200)
PAD, SMOOTHING = 0, 0.1                   # the padded sizes: id 0 pads, as the BPE's


def batch_of(rng, size):
    """(src, tgt): tgt[:, :-1] is the decoder's input, tgt[:, 1:] what it predicts.
    A padded size gets sequences of random lengths (at least half), padded with PAD."""
    s = SIZES[size]
    src = rng.integers(2, s["vocab_size"], size=(s["batch"], s["n_src"]))
    tgt = rng.integers(2, s["vocab_size"], size=(s["batch"], s["n_tgt"] + 1))
    if s.get("pad"):
        for a in (src, tgt):
            n = a.shape[1]
            lengths = rng.integers(n // 2, n + 1, size=a.shape[0])
            a[np.arange(n)[None, :] >= lengths[:, None]] = PAD
    return src, tgt


def numpy_step(params, size):
    s = SIZES[size]
    state = AdamState.zeros_like(params)
    rng, drop_rng = np.random.default_rng(1), np.random.default_rng(2)

    def step():
        nonlocal params, state
        src, tgt = batch_of(rng, size)
        if s.get("pad"):
            loss, grads = mt.loss_and_grads(
                params, src, tgt[:, :-1], tgt[:, 1:], label_smoothing=SMOOTHING,
                ignore_index=PAD, src_mask=(src != PAD)[:, None, :], p_drop=s["p_drop"], rng=drop_rng)
        else:
            loss, grads = mt.loss_and_grads(params, src, tgt[:, :-1], tgt[:, 1:])
        params, state = adam_step(params, grads, state, 1e-4)
        return loss

    return step


def package_autograd_step(params, size, torch):
    params = params.map(lambda a: torch.tensor(a, requires_grad=True))
    state = AdamState.zeros_like(params)
    rng = np.random.default_rng(1)
    V = SIZES[size]["vocab_size"]

    def step():
        nonlocal params, state
        src, tgt = (torch.as_tensor(a) for a in batch_of(rng, size))
        logits = mt.transformer(src, tgt[:, :-1], params)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V),
                                                 tgt[:, 1:].reshape(-1))
        named = named_leaves(params)
        grads = from_named(type(params), named_settings(params) | dict(
            zip(named, torch.autograd.grad(loss, list(named.values())))))
        with torch.no_grad():
            params, state = adam_step(params, grads, state, 1e-4)
        params = params.map(lambda a: a.detach().requires_grad_())
        return float(loss.detach())

    return step


def torch_nn_step(params, size):
    s = SIZES[size]
    kw = dict(pad_id=PAD, p_drop=s["p_drop"], label_smoothing=SMOOTHING) \
        if s.get("pad") else {}
    trainer, rng = TorchNNTrainer(params, lr=1e-4, **kw), np.random.default_rng(1)
    return lambda: trainer.step(*batch_of(rng, size))


def interleaved(steps, reps, untimed=2):
    """The median seconds of each step function, timed in turn (A, B, C, A, B, ...)
    after ``untimed`` calls of each."""
    for step in steps.values():
        for _ in range(untimed):
            step()
    times = {name: [] for name in steps}
    for _ in range(reps):
        for name, step in steps.items():
            times[name].extend(timed(step, 1))
    return {name: statistics.median(t) for name, t in times.items()}


def params_of(size):
    s = SIZES[size]
    return mt.TransformerParams.random(
        np.random.default_rng(0),
        **{k: s[k] for k in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers")}
    ).map(lambda a: a.astype(np.float32))


def peak_step_bytes(size):
    """The peak of one NumPy step's allocations (tracemalloc), after one untimed step."""
    step = numpy_step(params_of(size), size)
    step()
    return peak_traced_bytes(step)


def time_to_99(max_steps, check_every=25, n_test=500):
    """Train the chapter's model (NumPy, hand gradients) on the reverse task until 99% of
    n_test held-out sequences decode exactly; (steps, seconds, accuracy)."""
    s = SIZES["notebook"]
    rng = np.random.default_rng(0)
    params = mt.TransformerParams.random(
        rng, **{k: s[k] for k in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers")}
    ).map(lambda a: a.astype(np.float32))
    state = AdamState.zeros_like(params)
    test = tasks.reverse_task(np.random.default_rng(1), n_test, s["n_src"], s["vocab_size"])
    t0, acc, step = time.perf_counter(), 0.0, 0
    for step in range(1, max_steps + 1):
        src, tgt_in, tgt_out = tasks.reverse_task(rng, s["batch"], s["n_src"], s["vocab_size"])
        _, grads = mt.loss_and_grads(params, src, tgt_in, tgt_out)
        params, state = adam_step(params, grads, state,
                                  LR_SCALE * learning_rate(step, s["d_model"], WARMUP))
        if step % check_every == 0:
            decoded = mt.greedy_decode(test[0], params, s["n_src"] + 2, tasks.BOS, tasks.EOS)
            acc = tasks.sequence_accuracy(decoded, test[2])
            if acc >= 0.99:
                break
    return {"steps": step, "seconds": time.perf_counter() - t0, "accuracy": acc,
            "reached": acc >= 0.99, "check_every": check_every, "n_test": n_test}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="notebook size only, 3 steps")
    ap.add_argument("--memory", action="store_true",
                    help="only the peak memory of one NumPy step at each size")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--sizes", nargs="+", choices=list(SIZES), default=None)
    ap.add_argument("--skip-99", action="store_true", help="no time to 99%%")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for NumPy's BLAS and torch (default: every CPU)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    import torch
    from threadpoolctl import threadpool_info, threadpool_limits

    threads = args.threads or cpus()
    torch.set_num_threads(threads)
    threadpool_limits(threads)
    sizes = ["notebook"] if args.quick else (args.sizes or list(SIZES))
    if args.memory:
        for size in sizes:
            print(f"{size:24s} peak {peak_step_bytes(size) / 2**20:8.2f} MiB", flush=True)
        return
    reps = 3 if args.quick else args.reps
    out_path = args.out or (Path(tempfile.gettempdir()) / "training_quick.json" if args.quick
                            else HERE / "results" / "training.json")
    meta = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name] + (sys.argv[1:] if argv is None else argv)),
        "cpu": cpu_model(), "cpus": cpus(), "torch_threads": torch.get_num_threads(),
        "blas_threads": [i["num_threads"] for i in threadpool_info()],
        "python": platform.python_version(), "numpy": np.__version__,
        "torch": torch.__version__, "reps": reps, "sizes": SIZES,
        "timing": "interleaved step by step, median",
        "load_average_before": load_average(),
    }
    print(f"# training-step benchmark: {meta['cpu']}, {meta['cpus']} CPUs, "
          f"load {meta['load_average_before']}")
    rows, t0 = [], time.perf_counter()
    for size in sizes:
        params = params_of(size)
        steps = {"numpy_hand": numpy_step(params, size),
                 "torch_nn": torch_nn_step(params, size)}
        if not SIZES[size].get("pad"):
            steps["package_autograd"] = package_autograd_step(params, size, torch)
        peak = peak_step_bytes(size)
        for impl, seconds in interleaved(steps, reps).items():
            rows.append({"size": size, "impl": impl, "dtype": "float32",
                         "step_s": seconds})
            if impl == "numpy_hand":
                rows[-1]["peak_bytes"] = peak
            print(f"{size:24s} {impl:17s} {seconds * 1e3:9.2f} ms/step", flush=True)
    found = []
    for size in sizes:
        by = {r["impl"]: r["step_s"] for r in rows if r["size"] == size}
        ratio = by["numpy_hand"] / by["torch_nn"]
        found.append({"name": f"numpy_hand_over_torch_nn_{size}", "measured": ratio,
                      "bound": TARGETS[size], "met": bool(ratio <= TARGETS[size])})
    result = {"meta": meta, "rows": rows, "targets": found}
    if not (args.quick or args.skip_99):
        result["time_to_99"] = time_to_99(max_steps=2000)
        r = result["time_to_99"]
        print(f"time to 99%: {r['seconds']:.1f} s, {r['steps']} steps, accuracy {r['accuracy']}")
    meta["load_average_after"] = load_average()
    meta["seconds"] = time.perf_counter() - t0
    print("\ntarget                                        measured  bound  met")
    for t in found:
        print(f"{t['name']:45s} {t['measured']:8.2f}  {t['bound']:5.1f}  {t['met']}")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nsaved {out_path}")


if __name__ == "__main__":
    main()

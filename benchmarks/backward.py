"""Speed and memory of the hand-written backward passes on this machine, against
torch.autograd on the same sizes, in one run (ratios are only meaningful within a run).

    python benchmarks/backward.py            # the full run (about 2 minutes on 2 cores)
    python benchmarks/backward.py --quick    # a smoke test (seconds)

What is timed, for each of float32 and float64 (median of several runs after one
untimed run):

- ``attention``: the attention core, batch × heads × T × d_k. Hand: one call of
  ``scaled_dot_product_attention_backward`` (it recomputes the forward's weights
  from q, k, v: a gradient from the inputs alone). Autograd: the package's forward
  on torch tensors that require grad, then ``.backward()``.
- ``encoder_layer``: one post-LN encoder layer (d_model, heads, d_ff, batch × T
  tokens). Hand: ``encoder_layer_backward`` (it recomputes its forward). Autograd:
  the package's ``encoder_layer`` on torch tensors + ``.backward()``, and
  ``torch.nn.TransformerEncoderLayer`` (eval mode, no dropout) + ``.backward()``.
- ``tiled``: ``tiled_attention(..., return_lse=True)`` (forward) and
  ``tiled_attention_backward`` at large T (one head, d_k = 64, float32), with the
  peak memory of each call by tracemalloc (every NumPy buffer, the returned
  gradients included), against the reference backward where its T×T matrices fit.

Torch runs with as many threads as NumPy's BLAS (the CPUs available). Results go
to benchmarks/results/backward.json, which chapter 13 reads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import mini_transformer as mt
from mini_transformer.tree import tree_leaves
from mini_transformer.row_blocks import cpus
from mini_transformer.torch.convert import to_torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (cpu_model, load_average, median_time, peak_traced_bytes,  # noqa: E402
                    timed)

HERE = Path(__file__).resolve().parent
TARGETS = {  # the hand backward's speed and the tiled backward's memory
    "encoder_layer_float32_hand_over_autograd": 1.5,
    "tiled_backward_over_forward_T16384": 3.0,
    "tiled_backward_peak_mib_T16384": 64.0,
}


def attention_calls(shape, dtype, torch):
    rng = np.random.default_rng(0)
    q, k, v, g = (rng.standard_normal(shape).astype(dtype) for _ in range(4))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    tg = torch.tensor(g)

    def hand():
        return mt.scaled_dot_product_attention_backward(q, k, v, g)

    def autograd():
        for t in (tq, tk, tv):
            t.grad = None
        mt.scaled_dot_product_attention(tq, tk, tv)[0].backward(tg)

    return {"hand": hand, "autograd": autograd}


def encoder_calls(d_model, heads, d_ff, batch, T, dtype, torch):
    rng = np.random.default_rng(0)
    p = mt.EncoderLayerParams.random(rng, d_model=d_model, n_heads=heads, d_ff=d_ff)
    p = p.map(lambda a: a.astype(dtype))
    x, g = (rng.standard_normal((batch, T, d_model)).astype(dtype) for _ in range(2))
    tp = p.map(lambda a: torch.tensor(a, requires_grad=True))
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(g)
    layer = to_torch(p, dtype=getattr(torch, np.dtype(dtype).name))
    for param in layer.parameters():
        param.requires_grad_(True)

    def hand():
        return mt.encoder_layer_backward(x, p, g)

    def autograd():
        for t in [tx, *tree_leaves(tp)]:
            t.grad = None
        mt.encoder_layer(tx, tp).backward(tg)

    def torch_nn():
        layer.zero_grad()
        tx.grad = None
        layer(tx).backward(tg)

    return {"hand": hand, "autograd": autograd, "torch_nn": torch_nn}


def tiled_calls(T, dtype):
    rng = np.random.default_rng(0)
    q, k, v, g = (rng.standard_normal((T, 64)).astype(dtype) for _ in range(4))
    out, lse = mt.tiled_attention(q, k, v, return_lse=True)
    return {
        "tiled_forward": lambda: mt.tiled_attention(q, k, v, return_lse=True),
        "tiled_backward": lambda: mt.tiled_attention_backward(q, k, v, out, lse, g),
        "reference_backward": lambda: mt.scaled_dot_product_attention_backward(q, k, v, g),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, 2 runs: a smoke test")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(cpus())
    if args.quick:
        attn, enc, tiled_T, ref_T_max, reps = (2, 2, 32, 16), (32, 4, 64, 2, 16), [256, 512], 512, 2
    else:
        attn, enc, tiled_T, ref_T_max, reps = (8, 8, 128, 64), (512, 8, 2048, 8, 128), \
            [1024, 4096, 16384], 4096, args.reps
    out_path = args.out or (Path(tempfile.gettempdir()) / "backward_quick.json" if args.quick
                            else HERE / "results" / "backward.json")
    meta = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name] + (sys.argv[1:] if argv is None else argv)),
        "cpu": cpu_model(), "cpus": cpus(), "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(), "numpy": np.__version__,
        "torch": torch.__version__, "reps": reps, "load_average_before": load_average(),
        "attention_shape": list(attn),
        "encoder_layer": dict(zip(("d_model", "heads", "d_ff", "batch", "T"), enc)),
    }
    print(f"# backward benchmark: {meta['cpu']}, {meta['cpus']} CPUs, "
          f"load {meta['load_average_before']}")
    rows, t0 = [], time.perf_counter()
    for dtype in ("float32", "float64"):
        for what, calls in (("attention", attention_calls(attn, dtype, torch)),
                            ("encoder_layer", encoder_calls(*enc, dtype, torch))):
            times = {name: median_time(fn, reps) for name, fn in calls.items()}
            row = {"what": what, "dtype": dtype, **{f"{k}_s": v for k, v in times.items()},
                   "hand_over_autograd": times["hand"] / times["autograd"]}
            if "torch_nn" in times:
                row["hand_over_torch_nn"] = times["hand"] / times["torch_nn"]
            rows.append(row)
            print(f"{what:14s} {dtype}: " + "  ".join(f"{k} {v * 1e3:8.2f} ms"
                                                      for k, v in times.items())
                  + f"   hand/autograd {row['hand_over_autograd']:.2f}", flush=True)
    tiled = []
    for T in tiled_T:
        calls = tiled_calls(T, np.float32)
        row = {"T": T, "dtype": "float32", "d_k": 64}
        for name, fn in calls.items():
            if name == "reference_backward" and T > ref_T_max:
                continue
            row[f"{name}_peak_mib"] = peak_traced_bytes(fn) / 2**20   # also the untimed run
            row[f"{name}_s"] = statistics.median(timed(fn, max(2, reps // 2)))
        row["backward_over_forward"] = row["tiled_backward_s"] / row["tiled_forward_s"]
        tiled.append(row)
        print(f"tiled T={T:6d}: forward {row['tiled_forward_s'] * 1e3:9.1f} ms  backward "
              f"{row['tiled_backward_s'] * 1e3:9.1f} ms ({row['backward_over_forward']:.2f}x), "
              f"peak {row['tiled_backward_peak_mib']:.1f} MiB"
              + (f"; reference backward {row['reference_backward_s'] * 1e3:.1f} ms, peak "
                 f"{row['reference_backward_peak_mib']:.1f} MiB"
                 if "reference_backward_s" in row else ""), flush=True)
    meta["load_average_after"] = load_average()
    meta["seconds"] = time.perf_counter() - t0
    result = {"meta": meta, "rows": rows, "tiled": tiled, "targets": targets(rows, tiled)}
    print("\ntarget                                     measured  bound   met")
    for t in result["targets"]:
        print(f"{t['name']:42s} {t['measured']:8.2f}  {t['bound']:5.1f}   {t['met']}")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nsaved {out_path}")


def targets(rows, tiled):
    """The targets, measured (only those this run's sizes can check)."""
    found = []
    enc = [r for r in rows if r["what"] == "encoder_layer" and r["dtype"] == "float32"]
    big = [r for r in tiled if r["T"] == 16384]
    checks = []
    if enc:
        checks.append(("encoder_layer_float32_hand_over_autograd", enc[0]["hand_over_autograd"]))
    if big:
        checks += [("tiled_backward_over_forward_T16384", big[0]["backward_over_forward"]),
                   ("tiled_backward_peak_mib_T16384", big[0]["tiled_backward_peak_mib"])]
    for name, measured in checks:
        found.append({"name": name, "measured": measured, "bound": TARGETS[name],
                      "met": bool(measured <= TARGETS[name])})
    return found


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()

"""What the GPU appendix measures, run on a CUDA GPU and written to results/gpu.json.

The book's pages run on a CPU; this script runs the appendix's questions on a real GPU
and records the answers, which the appendix then plots:

* errors of one encoder layer against the float64 NumPy reference, in units of each
  dtype's epsilon, readable and fused attention, for d_model 16 ... 1024, and float32
  with TF32 matrix products switched on;
* peak extra memory and time of one attention call, readable (the (n, n) weights
  stored) against torch's fused kernel, float16, 8 heads of d_k 64, n = 1024 ... 16384;
* the committed translator on the GPU: held-out numbers translated in float32 equal to
  NumPy's translation, and the time per batch.

    python benchmarks/gpu.py [--out benchmarks/results/gpu.json] [--quick]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

import mini_transformer as mt
from mini_transformer.number_words import load_model
from mini_transformer.torch import EncoderLayer, fused_attention

ROOT = Path(__file__).resolve().parents[1]
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def layer_errors(device, widths):
    rows = []
    for d in widths:
        rng = np.random.default_rng(d)
        params = mt.EncoderLayerParams.random(rng, d_model=d, n_heads=8 if d >= 64 else 4)
        x = rng.normal(size=(2, 64, d))
        keep = mt.padding_mask([64, 40], 64)
        ref = mt.encoder_layer(x, params, mask=keep)
        for name, dtype in DTYPES.items():
            for fused in (False, True):
                layer = EncoderLayer.from_params(params, fused=fused, device=device,
                                                 dtype=dtype)
                with torch.no_grad():
                    y = layer(torch.as_tensor(x, device=device, dtype=dtype), mask=keep)
                err = float(np.abs(y.cpu().double().numpy() - ref).max())
                rows.append({"d_model": d, "dtype": name, "fused": fused,
                             "max_abs_error": err,
                             "in_eps": err / torch.finfo(dtype).eps})
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            layer = EncoderLayer.from_params(params, device=device, dtype=torch.float32)
            with torch.no_grad():
                y = layer(torch.as_tensor(x, device=device, dtype=torch.float32),
                          mask=keep)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
        err = float(np.abs(y.cpu().double().numpy() - ref).max())
        rows.append({"d_model": d, "dtype": "float32+tf32", "fused": False,
                     "max_abs_error": err, "in_eps": err / torch.finfo(torch.float32).eps})
    return rows


def attention_cost(device, lengths, repeats=10):
    rows = []
    for n in lengths:
        q, k, v = (torch.randn(1, 8, n, 64, device=device, dtype=torch.float16)
                   for _ in range(3))
        for name, attend in (("readable", mt.scaled_dot_product_attention),
                             ("fused", fused_attention)):
            attend(q, k, v)  # warm-up
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            out = attend(q, k, v)[0]
            torch.cuda.synchronize()
            extra = (torch.cuda.max_memory_allocated() - before) / 2**20
            del out
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                enable_timing=True)
            times = []
            for _ in range(repeats):
                start.record()
                attend(q, k, v)
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end))
            rows.append({"n": n, "path": name, "peak_extra_mib": extra,
                         "ms_median": float(np.median(times))})
    return rows


def translator(device, count):
    params, bpe = load_model()
    from num2words import num2words

    held = [n for n in range(1, 1_000_000) if n % 97 == 0][:: max(1, 10_309 // count)]
    texts = [num2words(n, lang="en") for n in held][:count]
    t0 = time.perf_counter()
    ref = mt.translate(texts, params, bpe, beam_size=4)
    cpu_s = time.perf_counter() - t0
    dev = params.map(lambda a: torch.as_tensor(a, device=device, dtype=torch.float32))
    mt.translate(texts[:8], dev, bpe, beam_size=4)  # warm-up
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    got = mt.translate(texts, dev, bpe, beam_size=4)
    torch.cuda.synchronize()
    gpu_s = time.perf_counter() - t0
    return {"numbers": len(texts), "equal_to_numpy": sum(a == b for a, b in zip(got, ref)),
            "numpy_cpu_s": cpu_s, "gpu_s": gpu_s}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/gpu.json")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("gpu.py: no CUDA device here; this script measures a GPU")
    device = "cuda"
    props = torch.cuda.get_device_properties(0)
    result = {
        "device": torch.cuda.get_device_name(), "capability": list(props.major_minor)
        if hasattr(props, "major_minor") else [props.major, props.minor],
        "memory_gib": props.total_memory / 2**30, "torch": torch.__version__,
        "cuda": torch.version.cuda, "numpy": np.__version__,
        "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
    }
    print(result, flush=True)
    quick = args.quick
    steps = {
        "layer_errors": lambda: layer_errors(
            device, (16, 64) if quick else (16, 64, 256, 512, 1024)),
        "attention": lambda: attention_cost(
            device, (1024,) if quick else (1024, 2048, 4096, 8192, 16384)),
        "translator": lambda: translator(device, 40 if quick else 1000),
    }
    for name, step in steps.items():
        t0 = time.perf_counter()
        try:
            result[name] = step()
        except Exception as exc:  # record what failed, keep the other measurements
            result[name] = {"error": f"{type(exc).__name__}: {exc}"}
        print(name, f"{time.perf_counter() - t0:.1f} s", json.dumps(result[name])[:2000],
              flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()

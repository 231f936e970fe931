"""Speed and memory of attention on this machine: the package's reference and
tiled NumPy paths against torch's explicit math and torch's fused kernel.

    python benchmarks/attention.py            # the full run (about 10 minutes on 2 cores)
    python benchmarks/attention.py --quick    # a smoke test (seconds)

Inputs are (batch=1, heads, T, d_k=64), so torch takes its fused CPU kernel.
Time: median of several runs after one untimed run. GFLOP/s: 4·T²·d_k per head
(two matmuls of 2·T²·d_k; the softmax's O(T²) is not counted). Memory: the peak
allocated during one call, output included: tracemalloc for NumPy (it sees
every NumPy buffer); for torch, the rise of the process's resident-set high-water
mark (VmHWM, reset through /proc/self/clear_refs; memory the allocator reuses
from its own heap is not seen, so small buffers can read as 0). Configurations
whose naive T×T matrices would exceed --mem-cap-gib are skipped, and say so.
Results (with `uptime`'s load averages before and after) go to a JSON file that
chapter 12 plots.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import mini_transformer as mt
from common import cpu_model, load_average, peak_traced_bytes, timed

HERE = Path(__file__).resolve().parent
IMPLS = ("reference", "tiled", "torch_math", "torch_fused")
NAIVE = {"reference": 1, "torch_math": 2}  # T×T matrices alive at once
D_K = 64


def memory_gib():
    """Total memory of the machine in GiB (Linux), or None."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return None


def rss_status():
    text = Path("/proc/self/status").read_text()
    return {k: int(re.search(k + r":\s+(\d+)", text).group(1)) * 1024 for k in ("VmRSS", "VmHWM")}


def peak_rss_bytes(fn):
    """Rise of the resident-set high-water mark during fn() (Linux only)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to VmRSS
        before = rss_status()["VmRSS"]
    except OSError:
        fn()
        return None
    out = fn()
    del out
    return max(rss_status()["VmHWM"] - before, 0)


def make_calls(impl, T, heads, dtype, device):
    """(callable, memory method, sync) for one implementation on fresh inputs."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, heads, T, D_K)).astype(dtype) for _ in range(3))
    if impl == "reference":
        return (lambda: mt.scaled_dot_product_attention(q, k, v)), "tracemalloc", lambda: None
    if impl == "tiled":
        return (lambda: mt.tiled_attention(q, k, v)), "tracemalloc", lambda: None
    import torch
    import torch.nn.functional as F

    tq, tk, tv = (torch.as_tensor(a, device=device) for a in (q, k, v))
    scale = 1 / math.sqrt(D_K)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    method = "cuda max_memory_allocated" if device == "cuda" else "peak RSS rise"
    if impl.startswith("torch_math"):
        return (lambda: torch.softmax(tq @ tk.mT * scale, dim=-1) @ tv), method, sync
    return (lambda: F.scaled_dot_product_attention(tq, tk, tv)), method, sync


def measure(impl, T, heads, dtype, reps, device="cpu"):
    fn, method, sync = make_calls(impl, T, heads, dtype, device)
    if method == "tracemalloc":
        peak = peak_traced_bytes(fn)  # also the untimed first run
    elif device == "cuda":
        import torch

        fn()
        sync()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        fn()
        sync()
        peak = torch.cuda.max_memory_allocated() - before
    else:
        peak = peak_rss_bytes(fn)
    times = timed(fn, reps, sync)
    return times, peak, method


def matmul_peak(dtype, n=2048, reps=5):
    """Best GFLOP/s of an n×n matmul, NumPy and torch (default threads)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    out = {"n": n}
    out["numpy"] = 2 * n**3 / min(timed(lambda: a @ a, reps + 1)[1:]) / 1e9
    try:
        import torch

        t = torch.as_tensor(a)
        out["torch"] = 2 * n**3 / min(timed(lambda: t @ t, reps + 1)[1:]) / 1e9
    except ImportError:
        pass
    out["peak"] = max(v for k, v in out.items() if k in ("numpy", "torch"))
    return out


def import_time(reps=5):
    code = "import time; t = time.perf_counter(); import mini_transformer; print(time.perf_counter() - t)"
    runs = [float(subprocess.check_output([sys.executable, "-c", code], text=True)) for _ in range(reps)]
    return min(runs)


def suite_time():
    t = time.perf_counter()
    rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile"],
                         cwd=HERE.parent, stdout=subprocess.DEVNULL)
    return {"seconds": time.perf_counter() - t, "returncode": rc}


def plan(args):
    """Every (impl, dtype, heads, T) to run, with a skip reason or None."""
    jobs = []
    for dtype in args.dtypes:
        itemsize = np.dtype(dtype).itemsize
        for heads in args.heads:
            for T in args.T:
                for impl in args.impls:
                    skip = None
                    if T > args.max_naive_T and impl != "tiled" and impl != "torch_fused":
                        skip = f"T > {args.max_naive_T}: only the lean paths run here"
                    elif T > args.max_naive_T and heads > 1:
                        skip = f"T > {args.max_naive_T}: heads = 1 only"
                    elif impl in NAIVE:
                        need = NAIVE[impl] * heads * T * T * itemsize
                        if need > args.mem_cap_gib * 2**30:
                            skip = (f"needs {need / 2**30:.0f} GiB of T×T matrices "
                                    f"> cap {args.mem_cap_gib:g} GiB")
                    jobs.append((impl, dtype, heads, T, skip))
    return jobs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny sizes, 2 runs: a smoke test")
    p.add_argument("--T", type=int, nargs="+", default=[2**i for i in range(7, 16)])
    p.add_argument("--heads", type=int, nargs="+", default=[1, 8])
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    p.add_argument("--impls", nargs="+", default=list(IMPLS), choices=IMPLS)
    p.add_argument("--reps", type=int, default=5, help="timed runs per configuration (median)")
    p.add_argument("--max-naive-T", type=int, default=16384,
                   help="above this T only tiled and torch_fused run, heads = 1")
    p.add_argument("--mem-cap-gib", type=float, default=6.0)
    p.add_argument("--suite", action="store_true", help="also time the whole pytest suite")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if args.quick:
        args.T, args.heads, args.reps = [128, 512], [1, 2], 2
    out_path = args.out or (Path(tempfile.gettempdir()) / "attention_quick.json" if args.quick
                            else HERE / "results" / "attention.json")
    try:
        import torch

        torch_version = torch.__version__
        cuda = torch.cuda.is_available()
    except ImportError:
        torch_version, cuda = None, False
        args.impls = [i for i in args.impls if not i.startswith("torch")]
    for impl in args.impls:  # one-time start-up (lazy imports, thread pools) outside the numbers
        measure(impl, 128, 1, "float32", 1)

    meta = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name] + (sys.argv[1:] if argv is None else argv)),
        "cpu": cpu_model(), "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(), "numpy": np.__version__, "torch": torch_version,
        "mini_transformer": mt.__version__, "d_k": D_K, "reps": args.reps,
        "mem_cap_gib": args.mem_cap_gib, "memory_gib": memory_gib(),
        "load_average_before": load_average(),
        "gflop_formula": "4 * T**2 * d_k * heads",
    }
    print(f"# attention benchmark: {meta['cpu']}, {meta['cpus']} CPUs, load {meta['load_average_before']}")
    peaks = {}
    for dtype in args.dtypes:
        peaks[dtype] = matmul_peak(dtype)
        print(f"matmul peak {dtype}: " + ", ".join(
            f"{k} {v:.0f} GFLOP/s" for k, v in peaks[dtype].items() if k != "n"), flush=True)
    jobs = plan(args)
    rows, t_start = [], time.perf_counter()
    for n, (impl, dtype, heads, T, skip) in enumerate(jobs, 1):
        row = {"impl": impl, "device": "cpu", "dtype": dtype, "heads": heads, "T": T, "skipped": skip}
        if skip is None:
            flops = 4 * T * T * D_K * heads
            reps = args.reps if flops < 2e10 else max(2, min(args.reps, 3))
            times, peak, method = measure(impl, T, heads, dtype, reps)
            row.update(time_s=statistics.median(times), times_s=times, gflops=flops / statistics.median(times) / 1e9,
                       peak_bytes=peak, mem_method=method)
        rows.append(row)
        elapsed = time.perf_counter() - t_start
        what = "skipped: " + skip if skip else (
            f"{row['time_s'] * 1e3:10.2f} ms {row['gflops']:7.1f} GFLOP/s "
            f"peak {_mib(row['peak_bytes'])}")
        print(f"[{n:3d}/{len(jobs)} {elapsed:6.0f} s] {dtype} h={heads} T={T:6d} {impl:12s} {what}", flush=True)
    if cuda:
        for dtype in args.dtypes:
            for T in args.T:
                for impl in ("torch_math", "torch_fused"):
                    if impl == "torch_math" and 2 * T * T * np.dtype(dtype).itemsize > args.mem_cap_gib * 2**30:
                        continue
                    times, peak, method = measure(impl, T, 1, dtype, args.reps, device="cuda")
                    rows.append({"impl": impl, "device": "cuda", "dtype": dtype, "heads": 1, "T": T,
                                 "skipped": None, "time_s": statistics.median(times), "times_s": times,
                                 "gflops": 4 * T * T * D_K / statistics.median(times) / 1e9,
                                 "peak_bytes": peak, "mem_method": method})
    meta["import_seconds"] = import_time()
    if args.suite:
        meta["suite"] = suite_time()
    meta["load_average_after"] = load_average()
    meta["seconds"] = time.perf_counter() - t_start
    result = {"meta": meta, "matmul_peak_gflops": peaks, "rows": rows}
    result["targets"] = targets(result)
    print_tables(result)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nsaved {out_path}")


def _mib(b):
    return "    n/a" if b is None else f"{b / 2**20:8.1f} MiB"


def lookup(result, impl, dtype, heads, T, device="cpu"):
    for r in result["rows"]:
        if (r["impl"], r["dtype"], r["heads"], r["T"], r["device"]) == (impl, dtype, heads, T, device):
            return None if r["skipped"] else r
    return None


def slope(result, impl, dtype, heads, key, T_min=4096):
    """Least-squares exponent a of key ∝ T^a over T >= T_min. For memory, the
    fit is to the growth m(2T) - m(T) instead, which removes a T-independent
    part (the tiled path's tile buffers) and has the same exponent."""
    pts = sorted((r["T"], r[key]) for r in result["rows"]
                 if (r["impl"], r["dtype"], r["heads"], r["device"]) == (impl, dtype, heads, "cpu")
                 and not r["skipped"] and r["T"] >= T_min and r.get(key))
    if key == "peak_bytes":
        pts = [(t0, m1 - m0) for (t0, m0), (t1, m1) in zip(pts, pts[1:])
               if t1 == 2 * t0 and m1 > m0]
    if len(pts) < 2:
        return None
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def targets(result):
    """The speed and memory targets, measured in this run: (what, measured, target,
    met).
    An exponent "≈ b" is met within ±0.15."""
    out = []

    def ratio(impl, dtype, heads, T, versus="torch_fused"):
        a, b = lookup(result, impl, dtype, heads, T), lookup(result, versus, dtype, heads, T)
        return None if a is None or b is None else a["time_s"] / b["time_s"]

    def add(name, measured, bound, op="<="):
        checks = {"<=": lambda x: x <= bound, "<": lambda x: x < bound,
                  "≈": lambda x: abs(x - bound) <= 0.15}
        met = None if measured is None else bool(checks[op](measured))
        out.append({"target": name, "measured": measured, "bound": bound, "op": op, "met": met})

    add("tiled / torch fused, float32, h=1, T=16384 (time)", ratio("tiled", "float32", 1, 16384), 1.5)
    tiled = lookup(result, "tiled", "float32", 1, 16384)
    add("tiled peak memory, float32, h=1, T=16384 (MiB)", tiled and tiled["peak_bytes"] / 2**20, 32)
    add("reference / torch fused, float32, h=1, T=4096 (time)", ratio("reference", "float32", 1, 4096), 2.2)
    add("reference / torch math, float32, h=1, T=4096 (time)",
        ratio("reference", "float32", 1, 4096, "torch_math"), 1.0, "<")
    add("tiled / torch fused, float64, h=8, T=4096 (time)", ratio("tiled", "float64", 8, 4096), 1.0)
    add("tiled time exponent, float32, h=1, T >= 4096", slope(result, "tiled", "float32", 1, "time_s"), 2, "≈")
    add("tiled memory exponent, float32, h=1, T >= 4096",
        slope(result, "tiled", "float32", 1, "peak_bytes"), 1, "≈")
    add("import mini_transformer (s)", result["meta"].get("import_seconds"), 0.2, "<")
    return out


def print_tables(result):
    peaks = result["matmul_peak_gflops"]
    short = {"reference": "ref", "tiled": "tiled", "torch_math": "math", "torch_fused": "fused"}
    impls = [i for i in IMPLS if any(r["impl"] == i for r in result["rows"])]
    combos = sorted({(r["dtype"], r["heads"]) for r in result["rows"] if r["device"] == "cpu"})
    for dtype, heads in combos:
        peak = peaks[dtype]["peak"]
        print(f"\n## {dtype}, heads = {heads}, d_k = {D_K}; matmul peak {peak:.0f} GFLOP/s")
        head = (["T"] + [f"{short[i]} ms" for i in impls] + [f"{short[i]}/fused" for i in impls[:-1]]
                + [f"{short[i]} %pk" for i in impls] + [f"{short[i]} MiB" for i in impls])
        print(" ".join(f"{h:>10}" for h in head))
        Ts = sorted({r["T"] for r in result["rows"] if (r["dtype"], r["heads"]) == (dtype, heads)})
        for T in Ts:
            rs = [lookup(result, i, dtype, heads, T) for i in impls]
            fused = lookup(result, "torch_fused", dtype, heads, T)
            cells = [str(T)]
            cells += ["skipped" if r is None else f"{r['time_s'] * 1e3:.1f}" for r in rs]
            cells += ["-" if r is None or fused is None else f"{r['time_s'] / fused['time_s']:.2f}"
                      for r in rs[:-1]]
            cells += ["-" if r is None else f"{100 * r['gflops'] / peak:.0f}%" for r in rs]
            cells += ["-" if r is None or r["peak_bytes"] is None else f"{r['peak_bytes'] / 2**20:.1f}"
                      for r in rs]
            print(" ".join(f"{c:>10}" for c in cells))
        for r in result["rows"]:
            if (r["dtype"], r["heads"]) == (dtype, heads) and r["skipped"]:
                print(f"  skipped: {r['impl']} at T={r['T']}: {r['skipped']}")
    print("\n## targets: tiled and reference attention against torch, import time")
    for t in result["targets"]:
        m = "not measured" if t["measured"] is None else f"{t['measured']:.3g}"
        verdict = {True: "met", False: "NOT met", None: "-"}[t["met"]]
        print(f"  {t['target']:55s} {m:>12} (target {t['op']} {t['bound']:g}): {verdict}")
    meta = result["meta"]
    print(f"\nimport mini_transformer: {meta['import_seconds']:.3f} s; load average before "
          f"{meta['load_average_before']}, after {meta['load_average_after']}; "
          f"{meta['seconds']:.0f} s in all")


if __name__ == "__main__":
    main()

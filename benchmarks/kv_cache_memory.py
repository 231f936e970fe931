"""The key/value cache of grouped-query attention: bytes per token per layer, computed
and measured.

A decoder that generates token by token keeps, in every layer, the keys and values of
every position so far. With h query heads sharing h_kv key/value heads, each token adds
2 · h_kv · d_k numbers per layer (one key and one value row per key/value head). For
h_kv = h (multi-head attention), h/2 and 1 (multi-query attention) the script

- computes the bytes per token per layer, 2 · h_kv · d_k · bytes per number;
- builds the cache a decoder would hold after n tokens (K = X W_K and V = X W_V, split
  into h_kv heads, on NumPy and on torch) and reads the arrays' sizes;
- checks that attention of the newest query over that cache, by
  ``grouped_query_attention``, equals ``scaled_dot_product_attention`` over the key/value
  heads copied to every query head (what the cache saves is memory, not arithmetic);

and prints the table, saved to ``results/kv_cache_memory.json``. A few seconds.

    .venv/bin/python benchmarks/kv_cache_memory.py
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import mini_transformer as mt

OUT = Path(__file__).resolve().parent / "results" / "kv_cache_memory.json"
# The paper's base model: d_model 512, h 8 heads of d_k = d_v = 64, N = 6 decoder layers.
D_MODEL, H, D_K, N_LAYERS = 512, 8, 64, 6


def cache_arrays(rng, n, h_kv, xp_from_numpy, dtype):
    """The (K, V) one layer's cache holds after n tokens: (1, h_kv, n, d_k) each."""
    x = rng.normal(size=(1, n, D_MODEL)).astype(dtype)
    w_k = (rng.normal(size=(D_MODEL, h_kv * D_K)) / np.sqrt(D_MODEL)).astype(dtype)
    w_v = (rng.normal(size=(D_MODEL, h_kv * D_K)) / np.sqrt(D_MODEL)).astype(dtype)
    heads = lambda a: a.reshape(1, n, h_kv, D_K).transpose(0, 2, 1, 3)  # noqa: E731
    return xp_from_numpy(np.ascontiguousarray(heads(x @ w_k))), \
        xp_from_numpy(np.ascontiguousarray(heads(x @ w_v)))


def nbytes(a) -> int:
    return int(a.nbytes) if hasattr(a, "nbytes") else a.element_size() * a.numel()


def measure(n: int, dtype=np.float32):
    import torch

    rows = []
    for h_kv in (H, H // 2, 1):
        rng = np.random.default_rng(h_kv)
        k, v = cache_arrays(rng, n, h_kv, np.asarray, dtype)
        tk, tv = cache_arrays(np.random.default_rng(h_kv), n, h_kv, torch.as_tensor,
                              dtype)
        q = rng.normal(size=(1, H, 1, D_K)).astype(dtype)        # the newest query
        out, _ = mt.grouped_query_attention(q, k, v)
        copied = (np.repeat(k, H // h_kv, axis=1), np.repeat(v, H // h_kv, axis=1))
        ref, _ = mt.scaled_dot_product_attention(q, *copied)
        per_token = 2 * h_kv * D_K * np.dtype(dtype).itemsize
        rows.append({
            "h": H, "h_kv": h_kv, "d_k": D_K, "dtype": np.dtype(dtype).name,
            "bytes_per_token_per_layer": per_token,
            "n_tokens": n,
            "measured_numpy_bytes_per_layer": nbytes(k) + nbytes(v),
            "measured_torch_bytes_per_layer": nbytes(tk) + nbytes(tv),
            "computed_bytes_per_layer": per_token * n,
            "cache_bytes_all_layers": per_token * n * N_LAYERS,
            "fraction_of_multi_head": h_kv / H,
            "max_abs_diff_vs_copied_heads": float(np.abs(out - ref).max()),
        })
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1024, help="tokens in the cache")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    rows = measure(args.n)
    print(f"d_model {D_MODEL}, h {H}, d_k {D_K}, {N_LAYERS} layers, float32, "
          f"{args.n} tokens")
    print("h_kv  bytes/token/layer  measured NumPy  measured torch  all layers (MiB)"
          "  share  max|diff|")
    for r in rows:
        assert r["measured_numpy_bytes_per_layer"] == r["computed_bytes_per_layer"]
        assert r["measured_torch_bytes_per_layer"] == r["computed_bytes_per_layer"]
        print(f"{r['h_kv']:4d}  {r['bytes_per_token_per_layer']:17,d}  "
              f"{r['measured_numpy_bytes_per_layer']:14,d}  "
              f"{r['measured_torch_bytes_per_layer']:14,d}  "
              f"{r['cache_bytes_all_layers'] / 2**20:16.2f}  "
              f"{r['fraction_of_multi_head']:5.3f}  {r['max_abs_diff_vs_copied_heads']:.1e}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "config": {"d_model": D_MODEL, "h": H, "d_k": D_K, "n_layers": N_LAYERS},
        "rows": rows}, indent=1) + "\n")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()

"""grouped_query_attention against torch's F.scaled_dot_product_attention(enable_gqa=True),
and its backward against torch.autograd."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers import TOL32, TOL64, max_abs, t64
from mini_transformer import (causal_mask, grouped_query_attention,
                              grouped_query_attention_backward,
                              scaled_dot_product_attention)


def arrays(rng, batch=(2,), h=8, h_kv=2, n_q=5, n_k=7, d_k=4, d_v=3):
    return (rng.normal(size=(*batch, h, n_q, d_k)), rng.normal(size=(*batch, h_kv, n_k, d_k)),
            rng.normal(size=(*batch, h_kv, n_k, d_v)))


MASKS = {
    "none": lambda rng, s: None,
    "causal": lambda rng, s: causal_mask(s[-2], s[-1]),
    "per-head bool": lambda rng, s: rng.random(s) > 0.3,
    "float, every head": lambda rng, s: np.where(rng.random((s[0], 1, *s[2:])) > 0.3,
                                                 0.0, -np.inf),
}


@pytest.mark.parametrize("h, h_kv", [(8, 8), (8, 4), (8, 2), (8, 1), (3, 1)])
@pytest.mark.parametrize("mask_kind", list(MASKS))
def test_matches_torch_enable_gqa(h, h_kv, mask_kind, rng):
    q, k, v = arrays(rng, h=h, h_kv=h_kv)
    mask = MASKS[mask_kind](rng, (2, h, 5, 7))
    torch_mask = None if mask is None else torch.as_tensor(mask)
    for dtype, np_dtype, tol in ((torch.float64, np.float64, TOL64),
                                 (torch.float32, np.float32, TOL32)):
        tq, tk, tv = (torch.tensor(a, dtype=dtype) for a in (q, k, v))
        tm = torch_mask if torch_mask is None or torch_mask.dtype == torch.bool \
            else torch_mask.to(dtype)
        expected = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm,
                                                  enable_gqa=True)
        out, weights = grouped_query_attention(*(a.astype(np_dtype) for a in (q, k, v)),
                                               mask)
        assert out.dtype == np_dtype and max_abs(out, expected) < tol
        assert weights.shape == (2, h, 5, 7)
        np.testing.assert_allclose(weights.sum(-1), 1, rtol=1e-5)
        out_t, _ = grouped_query_attention(tq, tk, tv, mask)
        assert max_abs(out_t, expected) < tol


def test_equals_attention_with_copied_heads(rng):
    # h_kv = h / 4: copying each key/value head four times gives multi-head attention
    q, k, v = arrays(rng, h=8, h_kv=2)
    out, weights = grouped_query_attention(q, k, v)
    ref, ref_w = scaled_dot_product_attention(q, np.repeat(k, 4, axis=-3),
                                              np.repeat(v, 4, axis=-3))
    assert max_abs(out, ref) < TOL64 and max_abs(weights, ref_w) < TOL64


def test_broadcast_batch(rng):
    q = rng.normal(size=(3, 4, 2, 6))
    k, v = rng.normal(size=(2, 5, 6)), rng.normal(size=(2, 5, 6))   # no batch axis
    out, _ = grouped_query_attention(q, k, v)
    expected = F.scaled_dot_product_attention(
        t64(q), t64(k).expand(3, 2, 5, 6), t64(v).expand(3, 2, 5, 6), enable_gqa=True)
    assert max_abs(out, expected) < TOL64


@pytest.mark.parametrize("h, h_kv", [(8, 8), (8, 2), (6, 1)])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "per-head bool"])
def test_backward_matches_autograd(h, h_kv, mask_kind, rng):
    q, k, v = arrays(rng, h=h, h_kv=h_kv)
    mask = MASKS[mask_kind](rng, (2, h, 5, 7))
    g = rng.normal(size=(2, h, 5, 3))
    leaves = [t64(a, requires_grad=True) for a in (q, k, v)]
    F.scaled_dot_product_attention(
        *leaves, attn_mask=None if mask is None else torch.as_tensor(mask),
        enable_gqa=True).backward(t64(g))
    for lib in (np.asarray, t64):
        grads = grouped_query_attention_backward(*(lib(a) for a in (q, k, v)), lib(g), mask)
        for mine, leaf in zip(grads, leaves):
            assert mine.shape == leaf.shape
            assert max_abs(mine, leaf.grad) < TOL64


@pytest.mark.parametrize("call, match", [
    (lambda q, k, v: grouped_query_attention(q[:, :7], k, v),
     "h = 7 must be a multiple of the number of key/value heads h_kv = 2"),
    (lambda q, k, v: grouped_query_attention(q, k, v[:, :1]), "same number of heads"),
    (lambda q, k, v: grouped_query_attention(q, k[..., :3], v), "share the feature size"),
    (lambda q, k, v: grouped_query_attention(q, k, v[..., :4, :]), "same length n_k"),
    (lambda q, k, v: grouped_query_attention(q[0, 0], k[0, 0], v[0, 0]), "rank >= 3"),
    (lambda q, k, v: grouped_query_attention(q, np.ones((3, 2, 7, 4)), v),
     "do not broadcast"),
    (lambda q, k, v: grouped_query_attention(q, k, v, np.ones((5, 6), bool)),
     "does not broadcast"),
    (lambda q, k, v: grouped_query_attention(q, k, torch.tensor(v)), "mix array"),
    (lambda q, k, v: grouped_query_attention_backward(q, k, v, np.ones((2, 8, 5, 4))),
     "grad_output must have the output's shape"),
])
def test_refused(call, match, rng):
    with pytest.raises(ValueError, match=match):
        call(*arrays(rng))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_equals_cpu(rng):
    q, k, v = arrays(rng)
    g = rng.normal(size=(2, 8, 5, 3))
    mask = causal_mask(5, 7)           # a NumPy mask is welcome with CUDA tensors
    cpu = [grouped_query_attention(q, k, v, mask)[0],
           *grouped_query_attention_backward(q, k, v, g, mask)]
    on = [t64(a, device="cuda") for a in (q, k, v, g)]
    cuda = [grouped_query_attention(*on[:3], mask)[0],
            *grouped_query_attention_backward(*on, mask)]
    for a, b in zip(cpu, cuda):
        assert b.device.type == "cuda" and max_abs(a, b) < TOL64

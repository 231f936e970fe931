"""Grouped-query attention (chapter 19): query heads share key/value heads."""

from __future__ import annotations

from array_api_compat import array_namespace

from . import _checks
from .attention import (as_mask, scaled_dot_product_attention,
                        scaled_dot_product_attention_backward)


def _check(q, k, v, grad_output=None, **_):
    """Refuse q, k, v (and a gradient of the output) that do not fit together."""
    _checks.qkv_sizes(q, k, v, grad_output, 3, "(..., heads, n, d)")
    h, h_kv = q.shape[-3], k.shape[-3]
    _checks.same(v.shape[-3], h_kv,
                 f"k and v must have the same number of heads h_kv: "
                 f"k {tuple(k.shape)}, v {tuple(v.shape)}")
    if h_kv == 0 or h % h_kv:
        raise ValueError(
            f"the number of query heads h = {h} must be a multiple of the number of "
            f"key/value heads h_kv = {h_kv}: q {tuple(q.shape)}, k {tuple(k.shape)}")
    batch = _batch(q, k, v)
    if batch is None:
        raise ValueError(
            f"the batch axes of q {tuple(q.shape)}, k {tuple(k.shape)} and "
            f"v {tuple(v.shape)} (all but the last three) do not broadcast")
    if grad_output is not None:
        expected = (*batch, *q.shape[-3:-1], v.shape[-1])
        _checks.same(tuple(grad_output.shape), expected,
                     f"grad_output must have the output's shape {expected}, got "
                     f"{tuple(grad_output.shape)}")


def _batch(q, k, v):
    """The broadcast batch axes (all but the last three) of q, k, v, or None."""
    batch = _checks.broadcast_shape(tuple(q.shape[:-3]), tuple(k.shape[:-3]))
    return None if batch is None else _checks.broadcast_shape(batch,
                                                              tuple(v.shape[:-3]))


@_checks.at_door(_check)
def grouped_query_attention(q, k, v, mask=None):
    """Attention of h query heads over h_kv key/value heads, h a multiple of h_kv.

    Query head i reads key/value head ⌊i h_kv / h⌋: each group of h / h_kv
    consecutive query heads shares one K and one V (h_kv = h: multi-head attention;
    h_kv = 1: multi-query attention). K and V are broadcast, never copied.
    q: (..., h, n_q, d_k)   k: (..., h_kv, n_k, d_k)   v: (..., h_kv, n_k, d_v)
    mask: as ``scaled_dot_product_attention``, broadcast to (..., h, n_q, n_k).
    Returns (output (..., h, n_q, d_v), weights (..., h, n_q, n_k)).
    """
    h_kv = k.shape[-3]
    k_g, v_g = k[..., None, :, :], v[..., None, :, :]       # (..., h_kv, 1, n_k, ·)
    out, weights = scaled_dot_product_attention(_groups(q, h_kv), k_g, v_g,
                                                _grouped_mask(mask, q, k, v))
    return _heads(out), _heads(weights)                     # (..., h, n_q, ·)


@_checks.at_door(_check)
def grouped_query_attention_backward(q, k, v, grad_output, mask=None):
    """The gradients of grouped-query attention: those of scaled dot-product
    attention on the grouped arrays. A key/value head shared by h / h_kv query
    heads was used h / h_kv times, so it gets the sum of their gradients.

    Returns (grad_q, grad_k, grad_v), shaped like q, k, v.
    """
    xp, h_kv = array_namespace(q), k.shape[-3]
    k_g, v_g = k[..., None, :, :], v[..., None, :, :]
    grads = scaled_dot_product_attention_backward(
        _groups(q, h_kv), k_g, v_g, _groups(grad_output, h_kv),
        _grouped_mask(mask, q, k, v))
    return tuple(xp.reshape(g, a.shape) for g, a in zip(grads, (q, k, v)))


def _groups(a, h_kv):
    """(..., h, n, ·) as (..., h_kv, h / h_kv, n, ·): consecutive heads in groups."""
    xp = array_namespace(a)
    return xp.reshape(a, (*a.shape[:-3], h_kv, a.shape[-3] // h_kv, *a.shape[-2:]))


def _heads(a):
    """(..., h_kv, h / h_kv, n_q, ·) back to (..., h, n_q, ·)."""
    xp = array_namespace(a)
    return xp.reshape(a, (*a.shape[:-4], a.shape[-4] * a.shape[-3], *a.shape[-2:]))


def _grouped_mask(mask, q, k, v):
    """The mask of the scores (..., h, n_q, n_k) as (..., h_kv, h / h_kv, n_q, n_k)."""
    if mask is None:
        return None
    xp, h, h_kv = array_namespace(q), q.shape[-3], k.shape[-3]
    m = as_mask(mask, q, (*_batch(q, k, v), h, q.shape[-2], k.shape[-2]), xp)
    if m.ndim >= 3 and m.shape[-3] == h and h > 1:
        return _groups(m, h_kv)
    if m.ndim >= 3:
        return m[..., None, :, :]                           # one mask for every head
    return m

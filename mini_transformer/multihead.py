"""Multi-head attention (chapter 5).

MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O,
head_i = Attention(X W_Q_i, M W_K_i, M W_V_i), with M = X (self-attention) or
the encoder memory (cross-attention).
"""

from __future__ import annotations

import numpy as np

from . import _checks
from .attention import scaled_dot_product_attention


def _heads_mask(mask):
    """A mask for (batch, n_q, n_k) gains the head axis: (batch, 1, n_q, n_k)."""
    if mask is None or getattr(mask, "ndim", 0) < 2:
        return mask
    return mask[..., None, :, :]


def _check_mask_shape(mask, x, memory):
    """Refuse, in the caller's terms, a mask that does not broadcast to (batch, n_q, n_k)."""
    if mask is None:
        return
    batch = _checks.broadcast_shape(tuple(x.shape[:-2]), tuple(memory.shape[:-2]))
    shape = tuple(mask.shape) if hasattr(mask, "shape") else np.shape(mask)
    target = (*batch, x.shape[-2], memory.shape[-2])
    if _checks.broadcast_shape(shape, target) != target:
        raise ValueError(
            f"mask of shape {shape} does not broadcast to (batch, n_q, n_k) = {target}"
        )


def _project(x, W, b):
    """x W_i + b_i for every head i at once: (..., n, d_model) -> (..., h, n, d)."""
    return x[..., None, :, :] @ W + b[:, None, :]


def multi_head_attention(x, params, mask=None, memory=None, attention=None):
    """MultiHead(X) = Concat(head_1, ..., head_h) W_O + b_O.

    x: (..., n_q, d_model)   memory: (..., n_k, d_model), default x
    mask: bool (True = may attend) or float, broadcast to (batch, n_q, n_k);
    the head axis is added here, so ``padding_mask`` / ``causal_mask`` plug in.
    attention: the per-head attention function, default the readable
    ``scaled_dot_product_attention`` (the torch layer passes a fused one).
    Returns (output (..., n_q, d_model), weights (..., n_heads, n_q, n_k)).
    """
    p = params
    names = ("x", "memory", "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")
    xp = _checks.namespace(x, memory, p.W_Q, p.W_K, p.W_V, p.W_O,
                           p.b_Q, p.b_K, p.b_V, p.b_O, names=names)
    memory = x if memory is None else memory
    for name, a in (("x", x), ("memory", memory)):
        _checks.rank_at_least(a, 2, name, "(..., n, d_model)")
        _checks.non_empty(a.shape[-2], name, a.shape)
        _checks.same(a.shape[-1], p.d_model,
                     f"{name} has {a.shape[-1]} features but the weights expect "
                     f"d_model={p.d_model} (shape {tuple(a.shape)})")
    if _checks.broadcast_shape(tuple(x.shape[:-2]), tuple(memory.shape[:-2])) is None:
        raise ValueError(
            f"the batch axes of x {tuple(x.shape)} and memory {tuple(memory.shape)} "
            "do not broadcast"
        )
    if p.W_O.shape[0] != p.n_heads * p.d_v:
        raise ValueError(
            f"W_O has shape {tuple(p.W_O.shape)} but the heads concatenate to "
            f"n_heads * d_v = {p.n_heads} * {p.d_v} = {p.n_heads * p.d_v} features"
        )
    _check_mask_shape(mask, x, memory)
    attention = attention or scaled_dot_product_attention
    q = _project(x, p.W_Q, p.b_Q)                      # (..., h, n_q, d_k)
    k = _project(memory, p.W_K, p.b_K)                 # (..., h, n_k, d_k)
    v = _project(memory, p.W_V, p.b_V)                 # (..., h, n_k, d_v)
    heads, weights = attention(q, k, v, _heads_mask(mask))  # (..., h, n_q, d_v)
    heads = xp.moveaxis(heads, -3, -2)                 # (..., n_q, h, d_v)
    concat = xp.reshape(heads, (*heads.shape[:-2], p.n_heads * p.d_v))
    return concat @ p.W_O + p.b_O, weights             # (..., n_q, d_model)

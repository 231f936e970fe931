"""Multi-head attention (chapter 5).

MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O,
head_i = Attention(X W_Q_i, M W_K_i, M W_V_i), with M = X (self-attention) or
the encoder memory (cross-attention).
"""

from __future__ import annotations

from . import _checks
from .attention import scaled_dot_product_attention


def _heads_mask(mask):
    """A mask for (batch, n_q, n_k) gains the head axis: (batch, 1, n_q, n_k)."""
    if mask is None or getattr(mask, "ndim", 0) < 2:
        return mask
    return mask[..., None, :, :]


def _project(x, W, b):
    """x W_i + b_i for every head i at once: (..., n, d_model) -> (..., h, n, d)."""
    return x[..., None, :, :] @ W + b[:, None, :]


def key_values(memory, params):
    """K = M W_K + b_K and V = M W_V + b_V for every head.

    memory: (..., n_k, d_model) -> K: (..., h, n_k, d_k), V: (..., h, n_k, d_v)
    """
    return _project(memory, params.W_K, params.b_K), _project(memory, params.W_V, params.b_V)


def multi_head_attention(x, params, mask=None, memory=None, attention=None, kv=None):
    """MultiHead(X) = Concat(head_1, ..., head_h) W_O + b_O.

    x: (..., n_q, d_model)   memory: (..., n_k, d_model), default x
    mask: bool (True = may attend) or float, broadcast to (batch, n_q, n_k);
    the head axis is added here, so ``padding_mask`` / ``causal_mask`` plug in.
    attention: the per-head attention function, default the readable
    ``scaled_dot_product_attention`` (the torch layer passes a fused one).
    kv: the keys and values ``key_values(memory, params)`` computed earlier, in
    place of ``memory`` (the decoder's key/value cache).
    Returns (output (..., n_q, d_model), weights (..., n_heads, n_q, n_k)).
    """
    p = params
    k, v = kv or (None, None)
    names = ("x", "memory", "K", "V", "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")
    xp = _checks.namespace(x, memory, k, v, p.W_Q, p.W_K, p.W_V, p.W_O,
                           p.b_Q, p.b_K, p.b_V, p.b_O, names=names)
    _checks.features(x, p.d_model, "x")
    if p.W_O.shape[0] != p.n_heads * p.d_v:
        raise ValueError(
            f"W_O has shape {tuple(p.W_O.shape)} but the heads concatenate to "
            f"n_heads * d_v = {p.n_heads} * {p.d_v} = {p.n_heads * p.d_v} features"
        )
    if kv is None:
        memory = x if memory is None else memory
        _checks.features(memory, p.d_model, "memory")
        _checks.batch_axes(x, memory, "x", "memory")
        k, v = key_values(memory, p)                   # (..., h, n_k, d_k), (..., h, n_k, d_v)
    batch = _checks.broadcast_shape(tuple(x.shape[:-2]), tuple(k.shape[:-3])) or ()
    _checks.mask_broadcasts(mask, (*batch, x.shape[-2], k.shape[-2]), "mask",
                            "(batch, n_q, n_k)")
    attention = attention or scaled_dot_product_attention
    q = _project(x, p.W_Q, p.b_Q)                      # (..., h, n_q, d_k)
    heads, weights = attention(q, k, v, _heads_mask(mask))  # (..., h, n_q, d_v)
    heads = xp.moveaxis(heads, -3, -2)                 # (..., n_q, h, d_v)
    concat = xp.reshape(heads, (*heads.shape[:-2], p.n_heads * p.d_v))
    return concat @ p.W_O + p.b_O, weights             # (..., n_q, d_model)

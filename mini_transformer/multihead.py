"""Multi-head attention (chapter 5).

MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O,
head_i = Attention(X W_Q_i, X_kv W_K_i, X_kv W_V_i), with X_kv = X (self-attention) or
mem, the encoder's output (cross-attention).
"""

from __future__ import annotations

import dataclasses

from array_api_compat import array_namespace

from . import _checks
from ._ops import rows_matmul, rows_outer, sum_to
from .attention import (
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
)


def _heads_mask(mask):
    """A mask for (batch, n_q, n_k) gains the head axis: (batch, 1, n_q, n_k)."""
    if mask is None or getattr(mask, "ndim", 0) < 2:
        return mask
    return mask[..., None, :, :]


def _project(x, W, b):
    """x W_i + b_i for every head i at once: (..., n, d_model) -> (..., h, n, d),
    as one product of all the rows by the heads' matrices side by side."""
    return _projections(x, (W,), (b,))[0]


def _projections(x, Ws, bs):
    """x W + b for several projections (h, d_model, d) at once, e.g. (W_K, W_V): one
    product of all the rows of x (..., n, d_model) by [W_1 | W_2 | ...], each head's
    columns side by side, then split into one (..., h, n, d) array per projection."""
    xp = array_namespace(x)
    W = xp.concat([_side_by_side(W) for W in Ws], axis=1)    # (d_model, Σ h·d)
    b = xp.concat([xp.reshape(b, (-1,)) for b in bs])         # (Σ h·d,)
    y = rows_matmul(x, W) + b                                # (..., n, Σ h·d)
    out, start = [], 0
    for W_i in Ws:
        h, d = W_i.shape[0], W_i.shape[2]
        part = y[..., start:start + h * d]                    # (..., n, h·d)
        out.append(xp.moveaxis(xp.reshape(part, (*part.shape[:-1], h, d)), -2, -3))
        start += h * d
    return out


def _side_by_side(W):
    """(h, d_model, d) -> (d_model, h·d): the heads' matrices as column blocks."""
    xp = array_namespace(W)
    return xp.reshape(xp.moveaxis(W, 0, 1), (W.shape[1], -1))


def key_values(memory, params):
    """K = X_kv W_K + b_K and V = X_kv W_V + b_V for every head.

    memory: (..., n_k, d_model) -> K: (..., h, n_k, d_k), V: (..., h, n_k, d_v)
    """
    k, v = _projections(memory, (params.W_K, params.W_V), (params.b_K, params.b_V))
    return k, v


def check_multi_head(x, params, mask=None, memory=None, kv=None, grad_output=None, **_):
    """Refuse, in the caller's terms, inputs that do not fit the weights or each other.
    """
    p = params
    k, v = kv or (None, None)
    names = ("x", "memory", "K", "V", "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V",
             "b_O", "grad_output")
    _checks.namespace(x, memory, k, v, p.W_Q, p.W_K, p.W_V, p.W_O,
                      p.b_Q, p.b_K, p.b_V, p.b_O, grad_output, names=names)
    _checks.features(x, p.d_model, "x")
    if p.W_O.shape[0] != p.n_heads * p.d_v:
        raise ValueError(
            f"W_O has shape {tuple(p.W_O.shape)} but the heads concatenate to "
            f"n_heads * d_v = {p.n_heads} * {p.d_v} = {p.n_heads * p.d_v} features"
        )
    if k is None:
        memory = x if memory is None else memory
        _checks.features(memory, p.d_model, "memory")
        batch = _checks.batch_axes(x, memory, "x", "memory")
        n_k = memory.shape[-2]
    else:
        batch = _checks.broadcast_shape(tuple(x.shape[:-2]), tuple(k.shape[:-3])) or ()
        n_k = k.shape[-2]
    _checks.mask_broadcasts(
        mask, (*batch, x.shape[-2], n_k), "mask", "(batch, n_q, n_k)"
    )
    if grad_output is not None:
        out = (*batch, x.shape[-2], p.W_O.shape[-1])
        _checks.same(tuple(grad_output.shape), out,
                     f"grad_output must have the output's shape {out}, got "
                     f"{tuple(grad_output.shape)}")


@_checks.at_door(check_multi_head)
def multi_head_attention(x, params, mask=None, memory=None, *, attention=None, kv=None,
                         saved=None):
    """MultiHead(X) = Concat(head_1, ..., head_h) W_O + b_O.

    x: (..., n_q, d_model)   memory: (..., n_k, d_model), default x
    mask: bool (True = may attend) or float, broadcast to (batch, n_q, n_k);
    the head axis is added here, so ``padding_mask`` / ``causal_mask`` plug in.
    attention: the per-head attention function, default the readable
    ``scaled_dot_product_attention`` (the torch layer passes a fused one).
    kv: the keys and values ``key_values(memory, params)`` computed earlier, in
    place of ``memory`` (the decoder's key/value cache).
    saved: a dict the forward fills with Q, K, V, the weights and Concat, for
    ``multi_head_attention_backward`` (training); None keeps nothing.
    Returns (output (..., n_q, d_model), weights (..., n_heads, n_q, n_k)).
    """
    p = params
    k, v = kv or (None, None)
    if kv is not None:
        q = _project(x, p.W_Q, p.b_Q)                  # (..., h, n_q, d_k)
    elif memory is None:   # self-attention: Q, K, V in one product, X [W_Q|W_K|W_V]
        q, k, v = _projections(x, (p.W_Q, p.W_K, p.W_V), (p.b_Q, p.b_K, p.b_V))
    else:
        q = _project(x, p.W_Q, p.b_Q)
        k, v = key_values(memory, p)  # (..., h, n_k, d_k), (..., h, n_k, d_v)
    attention = attention or scaled_dot_product_attention
    heads, weights = attention(q, k, v, _heads_mask(mask))  # (..., h, n_q, d_v)
    concat = _concat_heads(heads)                      # (..., n_q, h * d_v)
    if saved is not None:
        saved.update(q=q, k=k, v=v, weights=weights, concat=concat)
    return rows_matmul(concat, p.W_O) + p.b_O, weights  # (..., n_q, d_model)


@_checks.at_door(check_multi_head)
def multi_head_attention_backward(x, params, grad_output, mask=None, memory=None, *,
                                  saved=None):
    """The gradients of MultiHead(X) = Concat(head_1, ..., head_h) W_O + b_O, with
    head_i = Attention(X W_Q_i + b_Q_i, X_kv W_K_i + b_K_i, X_kv W_V_i + b_V_i).

    From g = ∂L/∂output, back through the forward's lines in reverse order:

        ∂L/∂W_O = Concatᵀ g,  ∂L/∂b_O = Σ_rows g,  ∂L/∂Concat = g W_Oᵀ  -> ∂L/∂head_i
        (∂L/∂Q_i, ∂L/∂K_i, ∂L/∂V_i)       the attention backward, head by head
        ∂L/∂W_Q_i = Xᵀ ∂L/∂Q_i,  ∂L/∂X = Σ_i ∂L/∂Q_i W_Q_iᵀ   (K, V likewise, from X_kv)

    In self-attention X_kv = X: X gets the gradients of all three projections, as
    one product by [W_Q | W_K | W_V]ᵀ. The forward's Q, K, V and weights come from
    ``saved`` (filled by ``multi_head_attention(..., saved=saved)`` on the same
    inputs) or, by default, are recomputed. mask, memory: as in the forward.
    Returns (grad_x, grad_memory, grad_params); grad_memory is None for
    self-attention (its share is in grad_x); grad_params is a ``MultiHeadParams``.
    """
    p, xp = params, array_namespace(x)
    m = x if memory is None else memory
    if not saved:
        saved = {}
        multi_head_attention(x, p, mask, memory, saved=saved)
    q, k, v, weights = saved["q"], saved["k"], saved["v"], saved["weights"]
    concat = saved["concat"]                                 # (..., n_q, h * d_v)
    grad_concat = rows_matmul(grad_output, p.W_O.T)         # (..., n_q, h * d_v)
    grad_heads = xp.moveaxis(
        xp.reshape(grad_concat, (*grad_concat.shape[:-1], p.n_heads, p.d_v)), -2, -3)
    grad_q, grad_k, grad_v = scaled_dot_product_attention_backward(
        q, k, v, grad_heads, _heads_mask(mask), weights=weights)  # (..., h, n, d) each
    if memory is None:  # one product for all three: X is their common input
        grad_x, (g_WQ, g_WK, g_WV) = _projections_backward(
            x, (p.W_Q, p.W_K, p.W_V), (grad_q, grad_k, grad_v))
        grad_m = None
    else:
        grad_x, (g_WQ,) = _projections_backward(x, (p.W_Q,), (grad_q,))
        grad_m, (g_WK, g_WV) = _projections_backward(m, (p.W_K, p.W_V),
                                                     (grad_k, grad_v))
    grads = dataclasses.replace(
        p,
        W_Q=g_WQ,
        W_K=g_WK,
        W_V=g_WV,
        W_O=rows_outer(concat, grad_output),
        b_Q=sum_to(grad_q, p.b_Q[:, None, :].shape)[:, 0, :],
        b_K=sum_to(grad_k, p.b_K[:, None, :].shape)[:, 0, :],
        b_V=sum_to(grad_v, p.b_V[:, None, :].shape)[:, 0, :],
        b_O=sum_to(grad_output, p.b_O.shape),
    )
    return grad_x, grad_m, grads


def _projections_backward(x, Ws, grads):
    """The gradients of ``_projections(x, Ws, bs)`` from each output's gradient
    (..., h, n, d): ∂L/∂x = G [W_1 | W_2 | ...]ᵀ summed back to x's shape, and each
    ∂L/∂W_i = xᵀ G_i summed over every row, (h, d_model, d); G the gradients'
    heads side by side, as one product each."""
    xp = array_namespace(x)
    G = xp.concat([_concat_heads(g) for g in grads], axis=-1)   # (..., n, Σ h·d)
    W = xp.concat([_side_by_side(W) for W in Ws], axis=1)       # (d_model, Σ h·d)
    grad_x = sum_to(rows_matmul(G, W.T), x.shape)
    xb = xp.broadcast_to(x, (*G.shape[:-1], x.shape[-1]))       # (..., n, d_model)
    outer = rows_outer(xb, G)                                  # (d_model, Σ h·d)
    grad_Ws, start = [], 0
    for W_i in Ws:
        h, d = W_i.shape[0], W_i.shape[2]
        block = xp.reshape(outer[:, start:start + h * d], (x.shape[-1], h, d))
        grad_Ws.append(xp.moveaxis(block, 1, 0))               # (h, d_model, d)
        start += h * d
    return grad_x, grad_Ws


def _concat_heads(a):
    """(..., h, n, d) -> (..., n, h·d): the heads side by side, as Concat(head_1, ...,
    head_h).
    """
    xp = array_namespace(a)
    return xp.reshape(xp.moveaxis(a, -3, -2), (*a.shape[:-3], a.shape[-2], -1))


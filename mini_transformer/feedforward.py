"""The position-wise feed-forward network (chapter 7)."""

from __future__ import annotations

import dataclasses

from array_api_compat import array_namespace

from . import _checks
from ._grad import sum_to


def feed_forward(x, params, saved=None):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied to every position alike.

    x: (..., n, d_model)   W_1: (d_model, d_ff)   W_2: (d_ff, d_model)
    saved: a dict that keeps the hidden layer for ``feed_forward_backward``.
    """
    p = params
    xp = _check(x, p)
    hidden = xp.maximum(_rows_matmul(x, p.W_1) + p.b_1, 0.0)  # (..., n, d_ff)
    if saved is not None:
        saved["hidden"] = hidden
    return _rows_matmul(hidden, p.W_2) + p.b_2               # (..., n, d_model)


def feed_forward_backward(x, params, grad_output, saved=None):
    """The gradients of FFN(x) = ReLU(x W_1 + b_1) W_2 + b_2, with g = ∂L/∂FFN(x):

        ∂L/∂W_2 = Rᵀ g,  ∂L/∂b_2 = Σ_rows g,           R = ReLU(x W_1 + b_1)
        ∂L/∂U   = (g W_2ᵀ) ∘ [U > 0],                   U = x W_1 + b_1
        ∂L/∂W_1 = xᵀ ∂L/∂U,  ∂L/∂b_1 = Σ_rows ∂L/∂U,  ∂L/∂x = ∂L/∂U W_1ᵀ

    (ReLU's derivative at exactly 0 is taken as 0, as torch does.) The weight
    gradients sum over every position of every sequence: one W for all of them.
    saved: the forward's R (``feed_forward(x, params, saved)``), else recomputed.
    Returns (grad_x, grad_params), grad_params a ``FeedForwardParams``.
    """
    p = params
    xp = _check(x, p, grad_output)
    _checks.same(
        tuple(grad_output.shape),
        (*x.shape[:-1], p.d_model),
        f"grad_output must have the output's shape {(*x.shape[:-1], p.d_model)}, "
        f"got {tuple(grad_output.shape)}",
    )
    if saved:
        hidden = saved["hidden"]                              # R, (..., n, d_ff)
    else:
        hidden = xp.maximum(_rows_matmul(x, p.W_1) + p.b_1, 0.0)
    # U > 0 exactly where R > 0
    grad_a = _rows_matmul(grad_output, p.W_2.T) * xp.astype(hidden > 0, hidden.dtype)
    grads = dataclasses.replace(
        p,
        W_1=_rows_outer(x, grad_a), b_1=sum_to(grad_a, p.b_1.shape),
        W_2=_rows_outer(hidden, grad_output), b_2=sum_to(grad_output, p.b_2.shape),
    )
    return _rows_matmul(grad_a, p.W_1.T), grads               # (..., n, d_model)


def _rows_matmul(a, W):
    """a @ W for a (..., d_in) and a matrix W, as one product over all rows (NumPy
    runs a stack of small products one by one)."""
    xp = array_namespace(a)
    return xp.reshape(
        xp.reshape(a, (-1, a.shape[-1])) @ W, (*a.shape[:-1], W.shape[-1])
    )


def _rows_outer(a, b):
    """Σ over every row r of aᵣᵀ bᵣ: the gradient of W in a @ W, a (..., d_in), b (...,
    d_out).
    """
    xp = array_namespace(a)
    a2 = xp.reshape(a, (-1, a.shape[-1]))
    b2 = xp.reshape(b, (-1, b.shape[-1]))
    return a2.T @ b2                                          # (d_in, d_out)


def _check(x, p, grad_output=None):
    xp = _checks.namespace(x, p.W_1, p.b_1, p.W_2, p.b_2, grad_output,
                           names=("x", "W_1", "b_1", "W_2", "b_2", "grad_output"))
    _checks.rank_at_least(x, 1, "x", "(..., d_model)")
    _checks.same(x.shape[-1], p.W_1.shape[0],
                 f"x has {x.shape[-1]} features but W_1 has shape {tuple(p.W_1.shape)} "
                 f"(d_model={p.W_1.shape[0]})")
    return xp

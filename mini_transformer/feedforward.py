"""The position-wise feed-forward network (chapter 7)."""

from __future__ import annotations

import dataclasses

from array_api_compat import array_namespace

from . import _checks
from ._ops import rows_matmul, rows_outer, sum_to


def check_feed_forward(x, params, grad_output=None, **_):
    p = params
    _checks.namespace(x, p.W_1, p.b_1, p.W_2, p.b_2, grad_output,
                      names=("x", "W_1", "b_1", "W_2", "b_2", "grad_output"))
    _checks.rank_at_least(x, 1, "x", "(..., d_model)")
    _checks.same(x.shape[-1], p.W_1.shape[0],
                 f"x has {x.shape[-1]} features but W_1 has shape {tuple(p.W_1.shape)} "
                 f"(d_model={p.W_1.shape[0]})")
    if grad_output is not None:
        _checks.same(tuple(grad_output.shape), (*x.shape[:-1], p.d_model),
                     "grad_output must have the output's shape "
                     f"{(*x.shape[:-1], p.d_model)}, got {tuple(grad_output.shape)}")


@_checks.at_door(check_feed_forward)
def feed_forward(x, params, saved=None):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied to every position alike.

    x: (..., n, d_model)   W_1: (d_model, d_ff)   W_2: (d_ff, d_model)
    saved: a dict that keeps the hidden layer for ``feed_forward_backward``.
    """
    p, xp = params, array_namespace(x)
    hidden = xp.maximum(rows_matmul(x, p.W_1) + p.b_1, 0.0)  # (..., n, d_ff)
    if saved is not None:
        saved["hidden"] = hidden
    return rows_matmul(hidden, p.W_2) + p.b_2               # (..., n, d_model)


@_checks.at_door(check_feed_forward)
def feed_forward_backward(x, params, grad_output, saved=None):
    """The gradients of FFN(x) = ReLU(x W_1 + b_1) W_2 + b_2, with g = ∂L/∂FFN(x):

        ∂L/∂W_2 = Rᵀ g,  ∂L/∂b_2 = Σ_rows g,           R = ReLU(x W_1 + b_1)
        ∂L/∂U   = (g W_2ᵀ) ∘ [U > 0],                   U = x W_1 + b_1
        ∂L/∂W_1 = xᵀ ∂L/∂U,  ∂L/∂b_1 = Σ_rows ∂L/∂U,  ∂L/∂x = ∂L/∂U W_1ᵀ

    (ReLU's derivative at exactly 0 is taken as 0, as torch does.) The weight
    gradients sum over every position of every sequence: one W for all of them.
    saved: the forward's R (``feed_forward(x, params, saved)``), or the forward is
    run again to find it.
    Returns (grad_x, grad_params), grad_params a ``FeedForwardParams``.
    """
    p, xp = params, array_namespace(x)
    if not saved:
        saved = {}
        feed_forward(x, p, saved)
    hidden = saved["hidden"]                                  # R, (..., n, d_ff)
    # U > 0 exactly where R > 0
    grad_a = rows_matmul(grad_output, p.W_2.T) * xp.astype(hidden > 0, hidden.dtype)
    grads = dataclasses.replace(
        p,
        W_1=rows_outer(x, grad_a), b_1=sum_to(grad_a, p.b_1.shape),
        W_2=rows_outer(hidden, grad_output), b_2=sum_to(grad_output, p.b_2.shape),
    )
    return rows_matmul(grad_a, p.W_1.T), grads               # (..., n, d_model)



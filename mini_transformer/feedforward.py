"""The position-wise feed-forward network (chapter 7)."""

from __future__ import annotations

from . import _checks


def feed_forward(x, params):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied to every position alike.

    x: (..., n, d_model)   W_1: (d_model, d_ff)   W_2: (d_ff, d_model)
    """
    p = params
    xp = _checks.namespace(x, p.W_1, p.b_1, p.W_2, p.b_2,
                           names=("x", "W_1", "b_1", "W_2", "b_2"))
    _checks.rank_at_least(x, 1, "x", "(..., d_model)")
    _checks.same(x.shape[-1], p.W_1.shape[0],
                 f"x has {x.shape[-1]} features but W_1 has shape {tuple(p.W_1.shape)} "
                 f"(d_model={p.W_1.shape[0]})")
    hidden = xp.maximum(x @ p.W_1 + p.b_1, 0.0)  # (..., n, d_ff)
    return hidden @ p.W_2 + p.b_2               # (..., n, d_model)

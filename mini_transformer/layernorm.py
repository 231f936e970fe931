"""Layer normalisation (chapter 8)."""

from __future__ import annotations

from . import _checks


def layer_norm(x, gamma, beta, eps: float = 1e-5):
    """LayerNorm(x) = γ (x − μ) / √(σ² + ε) + β over the last axis.

    σ² is the biased variance (divide by d, not d − 1) and ε sits inside the
    square root, exactly as ``torch.nn.LayerNorm``.
    """
    xp = _checks.namespace(x, gamma, beta, names=("x", "gamma", "beta"))
    _checks.rank_at_least(x, 1, "x", "(..., d_model)")
    _checks.non_empty(x.shape[-1], "the feature axis of x", x.shape)
    for name, a in (("gamma", gamma), ("beta", beta)):
        _checks.same(tuple(a.shape), (x.shape[-1],),
                     f"{name} must have shape ({x.shape[-1]},) to match x "
                     f"{tuple(x.shape)}, got {tuple(a.shape)}")
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    mu = xp.mean(x, axis=-1, keepdims=True)
    var = xp.mean((x - mu) ** 2, axis=-1, keepdims=True)  # biased
    return gamma * (x - mu) / xp.sqrt(var + eps) + beta

"""Layer normalisation (chapter 8)."""

from __future__ import annotations

from array_api_compat import array_namespace

from . import _checks


def _check(x, gamma, beta=None, eps=1e-5, grad_output=None, **_):
    _checks.normalisation(x, {"gamma": gamma, "beta": beta}, grad_output)
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")


@_checks.at_door(_check)
def layer_norm(x, gamma, beta, eps: float = 1e-5, saved=None):
    """LayerNorm(x) = γ (x − μ) / √(σ² + ε) + β over the last axis.

    σ² is the biased variance (divide by d, not d − 1) and ε sits inside the
    square root, exactly as ``torch.nn.LayerNorm``.
    saved: a dict that keeps what ``layer_norm_backward`` reads, x̂ = (x − μ) / σ
    and 1/σ (``"x_hat"``, ``"inv_sigma"``); None keeps nothing.
    """
    xp = array_namespace(x)
    centred = x - xp.mean(x, axis=-1, keepdims=True)                    # x − μ
    inv_sigma = 1 / xp.sqrt(xp.mean(centred * centred, axis=-1, keepdims=True) + eps)
    x_hat = centred * inv_sigma            # one division per row, not per element
    if saved is not None:
        saved["x_hat"], saved["inv_sigma"] = x_hat, inv_sigma
    return gamma * x_hat + beta


@_checks.at_door(_check)
def layer_norm_backward(x, gamma, grad_output, eps: float = 1e-5, saved=None):
    """The gradients of LN(x) = γ x̂ + β, x̂ = (x − μ) / σ, σ = √(var + ε), last axis.

    With g = ∂L/∂LN(x) and d features, and ĝ = γ ∘ g (the gradient reaching x̂):

        ∂L/∂x = (ĝ − mean(ĝ) − x̂ ∘ mean(ĝ ∘ x̂)) / σ
        ∂L/∂γ = Σ_rows g ∘ x̂,     ∂L/∂β = Σ_rows g

    The two means are what μ and σ² add: every x_i moves the mean (which every x̂_j
    subtracts) and the variance (which every x̂_j divides by). x̂ and 1/σ are the
    forward's (``saved``), or the forward is run again to find them (β is not
    needed).
    Returns (grad_x, grad_gamma, grad_beta).
    """
    xp = array_namespace(x)
    if not saved:
        saved = {}
        layer_norm(x, gamma, xp.zeros_like(gamma), eps, saved)
    x_hat, inv_sigma = saved["x_hat"], saved["inv_sigma"]     # (..., d), (..., 1)
    g_hat = gamma * grad_output                               # ∂L/∂x̂
    grad_x = (g_hat - xp.mean(g_hat, axis=-1, keepdims=True)
              - x_hat * xp.mean(g_hat * x_hat, axis=-1, keepdims=True)) * inv_sigma
    rows = tuple(range(x.ndim - 1))
    return (
        grad_x,
        xp.sum(grad_output * x_hat, axis=rows),
        xp.sum(grad_output, axis=rows),
    )


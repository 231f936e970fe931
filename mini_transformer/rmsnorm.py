"""Root-mean-square normalisation (chapter 19): LayerNorm without the mean."""

from __future__ import annotations

from array_api_compat import array_namespace

from . import _checks


def _check(x, gamma, eps, grad_output=None, **_):
    _checks.normalisation(x, {"gamma": gamma}, grad_output)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0:
        raise ValueError(f"eps must be a number >= 0, got {eps!r}")


@_checks.at_door(_check)
def rms_norm(x, gamma, eps: float = 1e-6):
    """RMSNorm(x) = γ x / √(mean(x²) + ε) over the last axis.

    No mean is subtracted and there is no β. ε sits inside the square root, as in
    ``torch.nn.RMSNorm`` (whose default ε is the dtype's machine epsilon: pass it).
    """
    xp = array_namespace(x)
    rms = xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + eps)  # (..., 1)
    return gamma * (x / rms)


@_checks.at_door(_check)
def rms_norm_backward(x, gamma, grad_output, eps: float = 1e-6):
    """The gradients of RMSNorm(x) = γ x̂, x̂ = x / RMS, RMS = √(mean(x²) + ε).

    With g = ∂L/∂RMSNorm(x), d features, and ĝ = γ ∘ g (the gradient reaching x̂):

        ∂L/∂x = (ĝ − x̂ ∘ mean(ĝ ∘ x̂)) / RMS
        ∂L/∂γ = Σ_rows g ∘ x̂

    LayerNorm's gradient without its mean(ĝ) term: no mean was subtracted.
    Returns (grad_x, grad_gamma).
    """
    xp = array_namespace(x)
    rms = xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = x / rms                                              # (..., d)
    g_hat = gamma * grad_output                                # ∂L/∂x̂
    grad_x = (g_hat - x_hat * xp.mean(g_hat * x_hat, axis=-1, keepdims=True)) / rms
    rows = tuple(range(x.ndim - 1))
    return grad_x, xp.sum(grad_output * x_hat, axis=rows)

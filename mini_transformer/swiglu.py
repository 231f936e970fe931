"""The SwiGLU feed-forward network (chapter 19): a gated FFN without biases."""

from __future__ import annotations

from array_api_compat import array_namespace

from . import _checks
from ._ops import rows_matmul, rows_outer


def silu(zeta):
    """SiLU(ζ) = ζ σ(ζ) = ζ / (1 + e^(−ζ)), entry by entry (Swish with β = 1)."""
    xp = array_namespace(zeta)
    return zeta * _sigmoid(zeta, xp)


def _check(x, w, v, w2, grad_output=None, **_):
    _checks.namespace(x, w, v, w2, grad_output,
                      names=("x", "w", "v", "w2", "grad_output"))
    _checks.rank_at_least(x, 1, "x", "(..., d_model)")
    for name, m in (("w", w), ("v", v), ("w2", w2)):
        if m.ndim != 2:
            raise ValueError(f"{name} must be a matrix, got shape {tuple(m.shape)}")
    d_model = x.shape[-1]
    _checks.same(tuple(w.shape)[0], d_model,
                 f"x has {d_model} features but w has shape {tuple(w.shape)} "
                 f"(d_model, d_ff)")
    _checks.same(tuple(v.shape), tuple(w.shape),
                 f"v must have w's shape {tuple(w.shape)} (d_model, d_ff), got "
                 f"{tuple(v.shape)}")
    _checks.same(tuple(w2.shape), (w.shape[1], d_model),
                 f"w2 must have shape {(w.shape[1], d_model)} (d_ff, d_model), got "
                 f"{tuple(w2.shape)}")
    if grad_output is not None:
        _checks.same(tuple(grad_output.shape), tuple(x.shape),
                     f"grad_output must have the output's shape {tuple(x.shape)}, got "
                     f"{tuple(grad_output.shape)}")


@_checks.at_door(_check)
def swiglu(x, w, v, w2, saved=None):
    """FFN_SwiGLU(x) = (SiLU(x W_1) ∘ x W_3) W_2, applied to every position alike.

    The arguments are Shazeer's W, V, W_2: w = W_1 (the gate), v = W_3.
    x: (..., d_model)   w, v: (d_model, d_ff)   w2: (d_ff, d_model)
    saved: a dict that keeps x W_1 and x W_3 for ``swiglu_backward``.
    """
    zeta = rows_matmul(x, w)                                # (..., d_ff), x W_1
    psi = rows_matmul(x, v)                                 # (..., d_ff), x W_3
    if saved is not None:
        saved["zeta"], saved["psi"] = zeta, psi
    return rows_matmul(silu(zeta) * psi, w2)                # (..., d_model)


@_checks.at_door(_check)
def swiglu_backward(x, w, v, w2, grad_output, saved=None):
    """The gradients of F = (SiLU(ζ) ∘ ψ) W_2, ζ = x W_1, ψ = x W_3, with g = ∂L/∂F:

        ∂L/∂W_2 = Uᵀ g,   U = SiLU(ζ) ∘ ψ
        ∂L/∂ψ = (g W_2ᵀ) ∘ SiLU(ζ),   ∂L/∂ζ = (g W_2ᵀ) ∘ ψ ∘ SiLU′(ζ)
        SiLU′(ζ) = σ(ζ) (1 + ζ (1 − σ(ζ)))
        ∂L/∂W_1 = xᵀ ∂L/∂ζ,  ∂L/∂W_3 = xᵀ ∂L/∂ψ,  ∂L/∂x = ∂L/∂ζ W_1ᵀ + ∂L/∂ψ W_3ᵀ

    The weight gradients sum over every position. saved: the forward's ζ and ψ
    (``swiglu(..., saved)``), or the forward is run again to find them.
    Returns (grad_x, grad_w, grad_v, grad_w2).
    """
    xp = array_namespace(x)
    if not saved:
        saved = {}
        swiglu(x, w, v, w2, saved)
    zeta, psi = saved["zeta"], saved["psi"]
    sig = _sigmoid(zeta, xp)                                 # σ(ζ), (..., d_ff)
    gated = zeta * sig                                       # SiLU(ζ)
    grad_u = rows_matmul(grad_output, w2.T)                 # ∂L/∂U, (..., d_ff)
    grad_psi = grad_u * gated
    grad_zeta = grad_u * psi * sig * (1 + zeta * (1 - sig))
    grad_x = rows_matmul(grad_zeta, w.T) + rows_matmul(grad_psi, v.T)
    return (grad_x, rows_outer(x, grad_zeta), rows_outer(x, grad_psi),
            rows_outer(gated * psi, grad_output))


def _sigmoid(t, xp):
    """σ(t) = 1 / (1 + e^(−t)) without overflow: e^(−|t|) is at most 1."""
    e = xp.exp(-xp.abs(t))
    return xp.where(t >= 0, 1 / (1 + e), e / (1 + e))

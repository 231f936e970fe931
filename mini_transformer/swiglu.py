"""The SwiGLU feed-forward network (chapter 19): a gated FFN without biases."""

from __future__ import annotations

from array_api_compat import array_namespace

from . import _checks


def silu(a):
    """SiLU(a) = a σ(a) = a / (1 + e^(−a)), entry by entry (Swish with β = 1)."""
    xp = array_namespace(a)
    return a * _sigmoid(a, xp)


def swiglu(x, w, v, w2, saved=None):
    """FFN_SwiGLU(x) = (SiLU(x W_1) ∘ x W_3) W_2, applied to every position alike.

    The arguments are Shazeer's W, V, W_2: w = W_1 (the gate), v = W_3.
    x: (..., d_model)   w, v: (d_model, d_ff)   w2: (d_ff, d_model)
    saved: a dict that keeps x W_1 and x W_3 for ``swiglu_backward``.
    """
    _check(x, w, v, w2)
    a = _rows_matmul(x, w)                                   # (..., d_ff), x W_1
    b = _rows_matmul(x, v)                                   # (..., d_ff), x W_3
    if saved is not None:
        saved["a"], saved["b"] = a, b
    return _rows_matmul(silu(a) * b, w2)                     # (..., d_model)


def swiglu_backward(x, w, v, w2, grad_output, saved=None):
    """The gradients of F = (SiLU(A) ∘ B) W_2, A = x W_1, B = x W_3, with g = ∂L/∂F:

        ∂L/∂W_2 = Uᵀ g,        U = SiLU(A) ∘ B
        ∂L/∂B = (g W_2ᵀ) ∘ SiLU(A),   ∂L/∂A = (g W_2ᵀ) ∘ B ∘ SiLU′(A)
        SiLU′(a) = σ(a) (1 + a (1 − σ(a)))
        ∂L/∂W_1 = xᵀ ∂L/∂A,  ∂L/∂W_3 = xᵀ ∂L/∂B,  ∂L/∂x = ∂L/∂A W_1ᵀ + ∂L/∂B W_3ᵀ

    The weight gradients sum over every position. saved: the forward's A and B.
    Returns (grad_x, grad_w, grad_v, grad_w2).
    """
    xp = _check(x, w, v, w2, grad_output)
    if saved:
        a, b = saved["a"], saved["b"]
    else:
        a, b = _rows_matmul(x, w), _rows_matmul(x, v)
    sig = _sigmoid(a, xp)                                    # σ(A), (..., d_ff)
    silu_a = a * sig
    grad_u = _rows_matmul(grad_output, w2.T)                 # ∂L/∂U, (..., d_ff)
    grad_b = grad_u * silu_a
    grad_a = grad_u * b * sig * (1 + a * (1 - sig))
    grad_x = _rows_matmul(grad_a, w.T) + _rows_matmul(grad_b, v.T)
    return (grad_x, _rows_outer(x, grad_a), _rows_outer(x, grad_b),
            _rows_outer(silu_a * b, grad_output))


def _sigmoid(a, xp):
    """σ(a) = 1 / (1 + e^(−a)) without overflow: e^(−|a|) is at most 1."""
    e = xp.exp(-xp.abs(a))
    return xp.where(a >= 0, 1 / (1 + e), e / (1 + e))


def _rows_matmul(a, W):
    xp = array_namespace(a)
    rows = xp.reshape(a, (-1, a.shape[-1])) @ W
    return xp.reshape(rows, (*a.shape[:-1], W.shape[-1]))


def _rows_outer(a, b):
    xp = array_namespace(a)
    return xp.reshape(a, (-1, a.shape[-1])).T @ xp.reshape(b, (-1, b.shape[-1]))


def _check(x, w, v, w2, grad_output=None):
    xp = _checks.namespace(x, w, v, w2, grad_output,
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
    return xp

"""The residual sub-layer (the paper's §3.1): every attention and feed-forward network
of the encoder and the decoder sits inside one, "LayerNorm(x + Sublayer(x))", with
dropout on the sub-layer's output before the sum (§5.4)."""

from __future__ import annotations

from . import _checks
from .dropout import dropout
from .layernorm import layer_norm, layer_norm_backward
from .params import LayerNormParams


def _check(x, sublayer, norm, drop_mask=None, *, eps=1e-5, **_):
    _checks.normalisation(x, {"gamma": norm.gamma, "beta": norm.beta})
    _checks.dropout_masks(x, [drop_mask], 1)
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")


@_checks.at_door(_check)
def residual(x, sublayer, norm, drop_mask=None, *, eps=1e-5, norm_first=False,
             saved=None):
    """One sub-layer with its residual connection and its LayerNorm:

        post-LN (the paper's, norm_first=False):  LN(x + Dropout(Sublayer(x)))
        pre-LN (norm_first=True):                 x + Dropout(Sublayer(LN(x)))

    sublayer: the attention or the feed-forward network, a function of one array.
    norm: the LayerNorm's ``LayerNormParams``; eps: its ε.
    drop_mask: the mask Dropout multiplies by, of x's shape (``dropout.dropout_mask``),
    or None (no dropout).
    saved: a dict the forward fills for ``residual_backward``: the input ``x``, ``n``
    = LN(x) (pre-LN) or the sum ``r`` = x + Dropout(Sublayer(x)) (post-LN), and the
    LayerNorm's own (``ln``); None keeps nothing.
    """
    s = {} if saved is None else saved
    s["x"], s["ln"] = x, {}
    if norm_first:
        s["n"] = layer_norm(x, norm.gamma, norm.beta, eps, s["ln"])
        return x + dropout(sublayer(s["n"]), drop_mask)
    s["r"] = x + dropout(sublayer(x), drop_mask)
    return layer_norm(s["r"], norm.gamma, norm.beta, eps, s["ln"])


def _check_backward(sublayer_backward, norm, grad_output, drop_mask=None, *, saved,
                    **_):
    _check(saved["x"], None, norm, drop_mask)
    _checks.namespace(saved["x"], grad_output, names=("x", "grad_output"))
    _checks.same(tuple(grad_output.shape), tuple(saved["x"].shape), "grad_output must "
                 f"have x's shape {tuple(saved['x'].shape)}, got "
                 f"{tuple(grad_output.shape)}")


@_checks.at_door(_check_backward)
def residual_backward(sublayer_backward, norm, grad_output, drop_mask=None, *,
                      eps=1e-5, norm_first=False, saved):
    """The gradients of ``residual``, from what its forward filled in ``saved``.

    The sum x + F(x) passes its gradient g twice, to x directly and through F:
    g_x = g + J_Fᵀ g, with J_Fᵀ g the vector–Jacobian product that F's backward
    computes at the forward's input; the dropout mask multiplies the gradient into
    the sub-layer as it multiplied its output:

        post-LN:  g_r = J_LNᵀ g,   g_x = g_r + J_Sublayerᵀ Dropout(g_r)
        pre-LN:   g_x = g + J_LNᵀ J_Sublayerᵀ Dropout(g)

    (Dropout here multiplies by the forward's mask.)

    sublayer_backward(h, g) -> (grad_h, grads): the sub-layer's backward at its input
    h, grads being what the caller wants back (its parameters' gradients).
    Returns (grad_x, grad_norm (a ``LayerNormParams``), grads).
    """
    s = saved
    if norm_first:
        g_n, grads = sublayer_backward(s["n"], dropout(grad_output, drop_mask))
        g_ln, *g_norm = layer_norm_backward(s["x"], norm.gamma, g_n, eps, s["ln"])
        return grad_output + g_ln, LayerNormParams(*g_norm), grads
    g_r, *g_norm = layer_norm_backward(s["r"], norm.gamma, grad_output, eps, s["ln"])
    g_h, grads = sublayer_backward(s["x"], dropout(g_r, drop_mask))
    return g_r + g_h, LayerNormParams(*g_norm), grads

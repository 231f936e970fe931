"""The encoder layer and the encoder stack (chapter 8)."""

from __future__ import annotations

import dataclasses

from . import _checks
from .dropout import dropout
from .feedforward import check_feed_forward, feed_forward, feed_forward_backward
from .layernorm import layer_norm, layer_norm_backward
from .multihead import (check_multi_head, multi_head_attention,
                        multi_head_attention_backward)
from .params import LayerNormParams


def check_encoder_layer(x, params, mask=None, grad_output=None, **_):
    """Refuse what the layer's attention or feed-forward network would refuse, and a
    gradient of another shape than x."""
    check_multi_head(x, params.attn, mask)
    check_feed_forward(x, params.ffn)
    for norm in (params.norm1, params.norm2):
        _checks.normalisation(x, {"gamma": norm.gamma, "beta": norm.beta})
    if grad_output is not None:
        _checks.namespace(x, grad_output, names=("x", "grad_output"))
        _checks.same(tuple(grad_output.shape), tuple(x.shape), "grad_output must have "
                     f"x's shape {tuple(x.shape)}, got {tuple(grad_output.shape)}")


def check_encoder(x, layers, mask=None, **_):
    for params in layers:
        check_encoder_layer(x, params, mask)


@_checks.at_door(check_encoder_layer)
def encoder_layer(x, params, mask=None, masks=None, *, norm_first=False, attention=None,
                  saved=None):
    """One encoder layer.

    Post-LN, as in the paper (norm_first=False):
        X' = LayerNorm(X + MultiHead(X)),  X'' = LayerNorm(X' + FFN(X'))
    Pre-LN (norm_first=True):
        X' = X + MultiHead(LayerNorm(X)),  X'' = X' + FFN(LayerNorm(X'))
    x: (..., n, d_model); mask as in ``multi_head_attention``.
    masks: None, or two dropout masks (..., n, d_model) (``dropout.dropout_mask``),
    one per sub-layer, applied to its output before the residual add (§5.4).
    saved: a dict the forward fills with what ``encoder_layer_backward`` reads: the
    sums and LayerNorm outputs between the sub-layers (post-LN: a = X + MultiHead(X),
    X' = LN₁(a), b = X' + FFN(X'); pre-LN: n₁ = LN₁(X), X' = X + MultiHead(n₁),
    n₂ = LN₂(X')) and what the attention and the feed-forward network kept
    (``saved["attn"]``, ``saved["ffn"]``); None keeps nothing.
    """
    p = params
    m_attn, m_ffn = (None, None) if masks is None else masks
    s = {} if saved is None else saved
    s["attn"], s["ffn"] = {}, {}

    def norm(i, h):       # LayerNorm i (1, 2), keeping x̂ and 1/σ in s["ln<i>"]
        ln, s[f"ln{i}"] = (p.norm1, p.norm2)[i - 1], {}
        return layer_norm(h, ln.gamma, ln.beta, p.eps, s[f"ln{i}"])

    def attend(h):
        return dropout(multi_head_attention(h, p.attn, mask, attention=attention,
                                            saved=s["attn"])[0], m_attn)

    def ffn(h):
        return dropout(feed_forward(h, p.ffn, s["ffn"]), m_ffn)

    if norm_first:
        s["n1"] = norm(1, x)
        s["x1"] = x + attend(s["n1"])
        s["n2"] = norm(2, s["x1"])
        return s["x1"] + ffn(s["n2"])
    s["a"] = x + attend(x)
    s["x1"] = norm(1, s["a"])
    s["b"] = s["x1"] + ffn(s["x1"])
    return norm(2, s["b"])


@_checks.at_door(check_encoder)
def encoder(x, layers, mask=None, masks=None, *, norm_first=False, attention=None,
            saved=None):
    """A stack of encoder layers (the paper uses 6): x -> layer_N(...layer_1(x)).

    masks: None, or one pair of dropout masks per layer (``encoder_layer``).
    saved: a dict the forward fills for ``encoder_backward``: ``inputs``, each
    layer's input, and ``layers``, each layer's own ``saved``.
    """
    inputs, layer_saved = [], []
    for i, params in enumerate(layers):
        s = None if saved is None else {}
        inputs.append(x)
        layer_saved.append(s)
        x = encoder_layer(x, params, mask, None if masks is None else masks[i],
                          norm_first=norm_first, attention=attention, saved=s)
    if saved is not None:
        saved.update(inputs=inputs, layers=layer_saved)
    return x


@_checks.at_door(check_encoder_layer)
def encoder_layer_backward(x, params, grad_output, mask=None, masks=None, *,
                           norm_first=False, saved=None):
    """The gradients of ``encoder_layer``: its lines in reverse order, each sub-layer's
    backward called on the input it saw in the forward.

    A residual X + F(X) passes its gradient twice, to X directly and through F:
    ∂L/∂X = g + ∂L/∂X via F. Post-LN (the paper's), forward and backward:

        R₁ = X + MultiHead(X),  X' = LN₁(R₁),  R₂ = X' + FFN(X'),  X'' = LN₂(R₂)
        g_R₂ = J_LN₂ᵀ g,  g_X' = g_R₂ + J_FFNᵀ g_R₂,
        g_R₁ = J_LN₁ᵀ g_X',  g_X = g_R₁ + J_MultiHeadᵀ g_R₁

    where J_Fᵀ g, the transposed Jacobian of F at the forward's input times g, is the
    vector–Jacobian product that F's backward computes.
    With dropout masks M₁, M₂ (the forward's), R₁ = X + M₁ ⊙ MultiHead(X) and so on:
    the gradient into each sub-layer is multiplied by the same mask, e.g.
    g_X = g_R₁ + J_MultiHeadᵀ (M₁ ⊙ g_R₁).
    saved: what the forward filled (``encoder_layer(..., saved=saved)``); by
    default the forward is run again to fill it.
    Returns (grad_x, grad_params), grad_params an ``EncoderLayerParams``.
    """
    p = params
    m_attn, m_ffn = (None, None) if masks is None else masks
    if not saved:
        saved = {}
        encoder_layer(x, p, mask, masks, norm_first=norm_first, saved=saved)
    s = saved

    def norm_backward(i, h, g):
        ln = (p.norm1, p.norm2)[i - 1]
        return layer_norm_backward(h, ln.gamma, g, p.eps, s[f"ln{i}"])

    if norm_first:  # X' = X + MultiHead(LN₁(X)),  X'' = X' + FFN(LN₂(X'))
        g_n2, g_ffn = feed_forward_backward(s["n2"], p.ffn,
                                            dropout(grad_output, m_ffn), s["ffn"])
        g_ln2, *g_norm2 = norm_backward(2, s["x1"], g_n2)
        g_x1 = grad_output + g_ln2
        g_n1, _, g_attn = multi_head_attention_backward(
            s["n1"], p.attn, dropout(g_x1, m_attn), mask, saved=s["attn"])
        g_ln1, *g_norm1 = norm_backward(1, x, g_n1)
        g_x = g_x1 + g_ln1
    else:
        g_b, *g_norm2 = norm_backward(2, s["b"], grad_output)
        g_ffn_x1, g_ffn = feed_forward_backward(s["x1"], p.ffn, dropout(g_b, m_ffn),
                                                s["ffn"])
        g_a, *g_norm1 = norm_backward(1, s["a"], g_b + g_ffn_x1)
        g_attn_x, _, g_attn = multi_head_attention_backward(
            x, p.attn, dropout(g_a, m_attn), mask, saved=s["attn"])
        g_x = g_a + g_attn_x
    grads = dataclasses.replace(p, attn=g_attn, ffn=g_ffn,
                                norm1=LayerNormParams(*g_norm1),
                                norm2=LayerNormParams(*g_norm2))
    return g_x, grads


def _check_backward(layers, grad_output, saved, **_):
    if saved["inputs"]:
        check_encoder_layer(saved["inputs"][-1], layers[-1], grad_output=grad_output)


@_checks.at_door(_check_backward)
def encoder_backward(layers, grad_output, mask=None, masks=None, *, norm_first=False,
                     saved):
    """The gradients of ``encoder``, from what its forward filled in ``saved``: the
    layers in reverse, each layer's backward at the input it saw.
    Returns (grad_x, (grad_params of each layer, first to last))."""
    grads = [None] * len(layers)
    for i in reversed(range(len(layers))):
        grad_output, grads[i] = encoder_layer_backward(
            saved["inputs"][i], layers[i], grad_output, mask,
            None if masks is None else masks[i], norm_first=norm_first,
            saved=saved["layers"][i])
    return grad_output, tuple(grads)

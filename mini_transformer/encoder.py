"""The encoder layer and the encoder stack (chapter 8)."""

from __future__ import annotations

import dataclasses
import functools

from . import _checks
from .feedforward import check_feed_forward, feed_forward, feed_forward_backward
from .multihead import (check_multi_head, multi_head_attention,
                        multi_head_attention_backward)
from .residual import residual, residual_backward


def check_encoder_layer(x, params, mask=None, masks=None, grad_output=None, **_):
    """Refuse what the layer's attention or feed-forward network would refuse,
    dropout masks of another shape than x, and a gradient of another shape than x."""
    check_multi_head(x, params.attn, mask)
    _checks.dropout_masks(x, masks, 2)
    check_feed_forward(x, params.ffn)
    for norm in (params.norm1, params.norm2):
        _checks.normalisation(x, {"gamma": norm.gamma, "beta": norm.beta})
    if grad_output is not None:
        _checks.namespace(x, grad_output, names=("x", "grad_output"))
        _checks.same(tuple(grad_output.shape), tuple(x.shape), "grad_output must have "
                     f"x's shape {tuple(x.shape)}, got {tuple(grad_output.shape)}")


def check_encoder(x, layers, mask=None, masks=None, **_):
    if masks is not None and len(masks) != len(layers):
        raise ValueError(f"masks must hold one pair of dropout masks per layer "
                         f"({len(layers)}), got {len(masks)}")
    for i, params in enumerate(layers):
        check_encoder_layer(x, params, mask, None if masks is None else masks[i])


@_checks.at_door(check_encoder_layer)
def encoder_layer(x, params, mask=None, masks=None, *, norm_first=False, attention=None,
                  saved=None):
    """One encoder layer: a self-attention sub-layer, then a feed-forward sub-layer,
    each inside a residual connection with its LayerNorm (``residual``).

    Post-LN, as in the paper (norm_first=False):
        X' = LayerNorm(X + MultiHead(X)),  X'' = LayerNorm(X' + FFN(X'))
    Pre-LN (norm_first=True):
        X' = X + MultiHead(LayerNorm(X)),  X'' = X' + FFN(LayerNorm(X'))
    x: (..., n, d_model); mask as in ``multi_head_attention``.
    masks: None, or two dropout masks (..., n, d_model) (``dropout.dropout_mask``),
    one per sub-layer, applied to its output before the residual add (§5.4).
    saved: a dict the forward fills for ``encoder_layer_backward``, one dict per
    sub-layer (``saved["self"]``, ``saved["ffn"]``) holding what the sub-layer and
    its residual kept; None keeps nothing.
    """
    p = params
    m_self, m_ffn = (None, None) if masks is None else masks
    s = {} if saved is None else saved
    s["self"], s["ffn"] = {}, {}
    # residual with this layer's eps and placement fixed: res(x, F, norm, mask)
    res = functools.partial(residual, eps=p.eps, norm_first=norm_first)

    def self_attn(h):
        return multi_head_attention(h, p.attn, mask, attention=attention,
                                    saved=s["self"])[0]

    def ffn(h):
        return feed_forward(h, p.ffn, s["ffn"])

    x = res(x, self_attn, p.norm1, m_self, saved=s["self"])    # X'
    return res(x, ffn, p.norm2, m_ffn, saved=s["ffn"])         # X''


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
    """The gradients of ``encoder_layer``: its sub-layers in reverse order, each
    residual's backward (``residual_backward``) at the input it saw in the forward.

    A residual X + F(X) passes its gradient twice, to X directly and through F:
    g_X = g + J_Fᵀ g (defined below). Post-LN (the paper's), forward and backward:

        R₁ = X + MultiHead(X),  X' = LN₁(R₁),  R₂ = X' + FFN(X'),  X'' = LN₂(R₂)
        g_R₂ = J_LN₂ᵀ g,  g_X' = g_R₂ + J_FFNᵀ g_R₂,
        g_R₁ = J_LN₁ᵀ g_X',  g_X = g_R₁ + J_MultiHeadᵀ g_R₁

    where J_Fᵀ g, the transposed Jacobian of F at the forward's input times g, is the
    vector–Jacobian product that F's backward computes.
    With dropout, R₁ = X + Dropout(MultiHead(X)) and so on: the gradient into each
    sub-layer is multiplied by the forward's mask,
    g_X = g_R₁ + J_MultiHeadᵀ Dropout(g_R₁).
    saved: what the forward filled (``encoder_layer(..., saved=saved)``); by
    default the forward is run again to fill it.
    Returns (grad_x, grad_params), grad_params an ``EncoderLayerParams``.
    """
    p = params
    m_self, m_ffn = (None, None) if masks is None else masks
    if not saved:
        saved = {}
        encoder_layer(x, p, mask, masks, norm_first=norm_first, saved=saved)
    s = saved
    # residual_backward with this layer's eps and placement fixed
    res_backward = functools.partial(residual_backward, eps=p.eps,
                                     norm_first=norm_first)

    def self_attn(h, g):        # each sub-layer's backward at its input h
        g_h, _, g_p = multi_head_attention_backward(h, p.attn, g, mask,
                                                    saved=s["self"])
        return g_h, g_p

    def ffn(h, g):
        return feed_forward_backward(h, p.ffn, g, s["ffn"])

    g, g_norm2, g_ffn = res_backward(ffn, p.norm2, grad_output, m_ffn,
                                          saved=s["ffn"])
    g, g_norm1, g_attn = res_backward(self_attn, p.norm1, g, m_self,
                                           saved=s["self"])
    return g, dataclasses.replace(p, attn=g_attn, ffn=g_ffn, norm1=g_norm1,
                                  norm2=g_norm2)


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

"""The encoder layer and the encoder stack (chapter 8)."""

from __future__ import annotations

import dataclasses

from .dropout import dropout as drop
from .feedforward import feed_forward, feed_forward_backward
from .layernorm import layer_norm, layer_norm_backward
from .multihead import multi_head_attention, multi_head_attention_backward


def encoder_layer(x, params, mask=None, norm_first=False, attention=None,
                  dropout=None):
    """One encoder layer.

    Post-LN, as in the paper (norm_first=False):
        X' = LayerNorm(X + MultiHead(X)),  X'' = LayerNorm(X' + FFN(X'))
    Pre-LN (norm_first=True):
        X' = X + MultiHead(LayerNorm(X)),  X'' = X' + FFN(LayerNorm(X'))
    x: (..., n, d_model); mask as in ``multi_head_attention``.
    dropout: None, or two masks (..., n, d_model) (``dropout.dropout_mask``), one per
    sub-layer, applied to its output before the residual add (§5.4).
    """
    p = params
    m_attn, m_ffn = (None, None) if dropout is None else dropout

    def norm1(h):
        return layer_norm(h, p.norm1_gamma, p.norm1_beta, p.eps)

    def norm2(h):
        return layer_norm(h, p.norm2_gamma, p.norm2_beta, p.eps)

    def attend(h):
        return multi_head_attention(h, p.attn, mask, attention=attention)[0]

    if norm_first:
        x = x + drop(attend(norm1(x)), m_attn)
        return x + drop(feed_forward(norm2(x), p.ffn), m_ffn)
    x = norm1(x + drop(attend(x), m_attn))
    return norm2(x + drop(feed_forward(x, p.ffn), m_ffn))


def encoder(x, layers, mask=None, norm_first=False, attention=None, dropout=None):
    """A stack of encoder layers (the paper uses 6): x -> layer_N(...layer_1(x)).

    dropout: None, or one pair of masks per layer (``encoder_layer``).
    """
    for i, params in enumerate(layers):
        x = encoder_layer(x, params, mask, norm_first=norm_first, attention=attention,
                          dropout=None if dropout is None else dropout[i])
    return x


def encoder_layer_saved(x, params, mask=None, norm_first=False, dropout=None):
    """``encoder_layer``'s output and the values its backward reads: (out, saved).

    saved holds the sub-layers' inputs and sums (post-LN: a = X + MultiHead(X),
    X' = LN₁(a), b = X' + FFN(X'); pre-LN: n₁ = LN₁(X), X' = X + MultiHead(n₁),
    n₂ = LN₂(X')) and what the attention and the feed-forward network kept
    (``saved["attn"]``, ``saved["ffn"]``). The training path calls this in place of
    ``encoder_layer`` and hands ``saved`` to ``encoder_layer_backward``.
    """
    p = params
    m_attn, m_ffn = (None, None) if dropout is None else dropout
    s = {"attn": {}, "ffn": {}}

    def attend(h):
        return multi_head_attention(h, p.attn, mask, saved=s["attn"])[0]

    if norm_first:
        s["n1"] = layer_norm(x, p.norm1_gamma, p.norm1_beta, p.eps)
        s["x1"] = x + drop(attend(s["n1"]), m_attn)
        s["n2"] = layer_norm(s["x1"], p.norm2_gamma, p.norm2_beta, p.eps)
        return s["x1"] + drop(feed_forward(s["n2"], p.ffn, s["ffn"]), m_ffn), s
    s["a"] = x + drop(attend(x), m_attn)
    s["x1"] = layer_norm(s["a"], p.norm1_gamma, p.norm1_beta, p.eps)
    s["b"] = s["x1"] + drop(feed_forward(s["x1"], p.ffn, s["ffn"]), m_ffn)
    return layer_norm(s["b"], p.norm2_gamma, p.norm2_beta, p.eps), s


def encoder_layer_backward(x, params, grad_output, mask=None, norm_first=False,
                           dropout=None, saved=None):
    """The gradients of ``encoder_layer``: its lines in reverse order, each sub-layer's
    backward called on the input it saw in the forward.

    A residual X + F(X) passes its gradient twice, to X directly and through F:
    ∂L/∂X = g + ∂L/∂X via F. Post-LN (the paper's), forward and backward:

        R₁ = X + MultiHead(X),  X' = LN₁(R₁),  R₂ = X' + FFN(X'),  X'' = LN₂(R₂)
        g_R₂ = LN₂ᵀ(g),  g_X' = g_R₂ + FFNᵀ(g_R₂),
        g_R₁ = LN₁ᵀ(g_X'),  g_X = g_R₁ + MultiHeadᵀ(g_R₁)

    where Fᵀ(g) is the vector–Jacobian product of F at the forward's input.
    With dropout masks M₁, M₂ (the forward's), R₁ = X + M₁ ⊙ MultiHead(X) and so on:
    the gradient into each sub-layer is multiplied by the same mask, e.g.
    g_X = g_R₁ + MultiHeadᵀ(M₁ ⊙ g_R₁).
    saved: the forward's values (``encoder_layer_saved``); by default recomputed.
    Returns (grad_x, grad_params), grad_params an ``EncoderLayerParams``.
    """
    p = params
    m_attn, m_ffn = (None, None) if dropout is None else dropout
    if saved is None:
        _, saved = encoder_layer_saved(x, p, mask, norm_first, dropout)
    s = saved
    if norm_first:  # X' = X + MultiHead(LN₁(X)),  X'' = X' + FFN(LN₂(X'))
        g_n2, g_ffn = feed_forward_backward(s["n2"], p.ffn, drop(grad_output, m_ffn),
                                            s["ffn"])
        g_ln2, g_gamma2, g_beta2 = layer_norm_backward(s["x1"], p.norm2_gamma, g_n2,
                                                       p.eps)
        g_x1 = grad_output + g_ln2
        g_n1, _, g_attn = multi_head_attention_backward(
            s["n1"], p.attn, drop(g_x1, m_attn), mask, saved=s["attn"])
        g_ln1, g_gamma1, g_beta1 = layer_norm_backward(x, p.norm1_gamma, g_n1, p.eps)
        g_x = g_x1 + g_ln1
    else:
        g_b, g_gamma2, g_beta2 = layer_norm_backward(
            s["b"], p.norm2_gamma, grad_output, p.eps
        )
        g_ffn_x1, g_ffn = feed_forward_backward(s["x1"], p.ffn, drop(g_b, m_ffn),
                                                s["ffn"])
        g_a, g_gamma1, g_beta1 = layer_norm_backward(
            s["a"], p.norm1_gamma, g_b + g_ffn_x1, p.eps
        )
        g_attn_x, _, g_attn = multi_head_attention_backward(
            x, p.attn, drop(g_a, m_attn), mask, saved=s["attn"])
        g_x = g_a + g_attn_x
    grads = dataclasses.replace(p, attn=g_attn, ffn=g_ffn,
                                norm1_gamma=g_gamma1, norm1_beta=g_beta1,
                                norm2_gamma=g_gamma2, norm2_beta=g_beta2)
    return g_x, grads

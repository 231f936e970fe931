"""The encoder layer and the encoder stack (chapter 8)."""

from __future__ import annotations

import dataclasses

from .feedforward import feed_forward, feed_forward_backward
from .layernorm import layer_norm, layer_norm_backward
from .multihead import multi_head_attention, multi_head_attention_backward


def encoder_layer(x, params, mask=None, norm_first=False, attention=None):
    """One encoder layer.

    Post-LN, as in the paper (norm_first=False):
        X' = LayerNorm(X + MultiHead(X)),  X'' = LayerNorm(X' + FFN(X'))
    Pre-LN (norm_first=True):
        X' = X + MultiHead(LayerNorm(X)),  X'' = X' + FFN(LayerNorm(X'))
    x: (..., n, d_model); mask as in ``multi_head_attention``.
    """
    p = params

    def norm1(h):
        return layer_norm(h, p.norm1_gamma, p.norm1_beta, p.eps)

    def norm2(h):
        return layer_norm(h, p.norm2_gamma, p.norm2_beta, p.eps)

    def attend(h):
        return multi_head_attention(h, p.attn, mask, attention=attention)[0]

    if norm_first:
        x = x + attend(norm1(x))
        return x + feed_forward(norm2(x), p.ffn)
    x = norm1(x + attend(x))
    return norm2(x + feed_forward(x, p.ffn))


def encoder(x, layers, mask=None, norm_first=False, attention=None):
    """A stack of encoder layers (the paper uses 6): x -> layer_N(...layer_1(x))."""
    for params in layers:
        x = encoder_layer(x, params, mask, norm_first=norm_first, attention=attention)
    return x


def encoder_layer_backward(x, params, grad_output, mask=None, norm_first=False):
    """The gradients of ``encoder_layer``: its lines in reverse order, each sub-layer's
    backward called on the input it saw in the forward (recomputed here).

    A residual X + F(X) passes its gradient twice, to X directly and through F:
    ∂L/∂X = g + ∂L/∂X via F. Post-LN (the paper's), forward and backward:

        A = X + MultiHead(X),  X' = LN₁(A),  B = X' + FFN(X'),  X'' = LN₂(B)
        g_B = LN₂ᵀ(g),  g_X' = g_B + FFNᵀ(g_B),  g_A = LN₁ᵀ(g_X'),  g_X = g_A + MultiHeadᵀ(g_A)

    where Fᵀ(g) is the vector–Jacobian product of F at the forward's input.
    Returns (grad_x, grad_params), grad_params an ``EncoderLayerParams``.
    """
    p = params

    def attend(h):
        return multi_head_attention(h, p.attn, mask)[0]

    if norm_first:  # X' = X + MultiHead(LN₁(X)),  X'' = X' + FFN(LN₂(X'))
        n1 = layer_norm(x, p.norm1_gamma, p.norm1_beta, p.eps)
        x1 = x + attend(n1)
        n2 = layer_norm(x1, p.norm2_gamma, p.norm2_beta, p.eps)
        g_n2, g_ffn = feed_forward_backward(n2, p.ffn, grad_output)
        g_ln2, g_gamma2, g_beta2 = layer_norm_backward(x1, p.norm2_gamma, g_n2, p.eps)
        g_x1 = grad_output + g_ln2
        g_n1, _, g_attn = multi_head_attention_backward(n1, p.attn, g_x1, mask)
        g_ln1, g_gamma1, g_beta1 = layer_norm_backward(x, p.norm1_gamma, g_n1, p.eps)
        g_x = g_x1 + g_ln1
    else:
        a = x + attend(x)
        x1 = layer_norm(a, p.norm1_gamma, p.norm1_beta, p.eps)
        b = x1 + feed_forward(x1, p.ffn)
        g_b, g_gamma2, g_beta2 = layer_norm_backward(b, p.norm2_gamma, grad_output, p.eps)
        g_ffn_x1, g_ffn = feed_forward_backward(x1, p.ffn, g_b)
        g_a, g_gamma1, g_beta1 = layer_norm_backward(a, p.norm1_gamma, g_b + g_ffn_x1, p.eps)
        g_attn_x, _, g_attn = multi_head_attention_backward(x, p.attn, g_a, mask)
        g_x = g_a + g_attn_x
    grads = dataclasses.replace(p, attn=g_attn, ffn=g_ffn,
                                norm1_gamma=g_gamma1, norm1_beta=g_beta1,
                                norm2_gamma=g_gamma2, norm2_beta=g_beta2)
    return g_x, grads

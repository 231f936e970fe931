"""The encoder layer and the encoder stack (chapter 8)."""

from __future__ import annotations

from .feedforward import feed_forward
from .layernorm import layer_norm
from .multihead import multi_head_attention


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

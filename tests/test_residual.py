"""The residual sub-layer LN(x + M ⊙ F(x)) / x + M ⊙ F(LN(x)) and its backward, against
torch.nn.LayerNorm and autograd; the encoder layer and the decoder-only layer, both made
of it, agree; dropout masks of the wrong shape are refused."""

import numpy as np
import pytest
import torch

from helpers import TOL64, max_abs, t64
import mini_transformer as mt
from mini_transformer.residual import residual, residual_backward


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("with_dropout", [False, True])
def test_residual_against_autograd(rng, norm_first, with_dropout):
    x, g = rng.normal(size=(2, 5, 6)), rng.normal(size=(2, 5, 6))
    W = rng.normal(size=(6, 6))
    norm = mt.LayerNormParams(rng.normal(size=6), rng.normal(size=6))
    m = mt.dropout.dropout_mask(rng, 0.3, x.shape, x) if with_dropout else None

    tx, tW = t64(x, requires_grad=True), t64(W, requires_grad=True)
    ln = torch.nn.LayerNorm(6, eps=1e-5, dtype=torch.float64)
    with torch.no_grad():
        ln.weight.copy_(t64(norm.gamma))
        ln.bias.copy_(t64(norm.beta))
    tm = 1.0 if m is None else t64(m)
    F = lambda h: torch.tanh(h @ tW)                      # noqa: E731
    out = tx + tm * F(ln(tx)) if norm_first else ln(tx + tm * F(tx))
    out.backward(t64(g))

    saved = {}
    ours = residual(x, lambda h: np.tanh(h @ W), norm, m, norm_first=norm_first,
                    saved=saved)
    assert max_abs(ours, out) < TOL64

    def tanh_backward(h, g_out):                  # y = tanh(h W): (g_h, g_W)
        g_z = g_out * (1 - np.tanh(h @ W) ** 2)
        return g_z @ W.T, h.reshape(-1, 6).T @ g_z.reshape(-1, 6)

    g_x, g_norm, g_W = residual_backward(tanh_backward, norm, g, m,
                                         norm_first=norm_first, saved=saved)
    assert max_abs(g_x, tx.grad) < TOL64
    assert max_abs(g_W, tW.grad) < TOL64
    assert max_abs(g_norm.gamma, ln.weight.grad) < TOL64
    assert max_abs(g_norm.beta, ln.bias.grad) < TOL64


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_is_the_decoder_only_layer(rng, norm_first):
    """Self-attention then feed-forward, each in its residual: one layer, two names."""
    e = mt.EncoderLayerParams.random(rng, d_model=8, n_heads=2)
    d = mt.DecoderLayerParams(self_attn=e.attn, cross_attn=None, ffn=e.ffn,
                              norm1=e.norm1, norm2=e.norm2, eps=e.eps)
    x, g = rng.normal(size=(3, 4, 8)), rng.normal(size=(3, 4, 8))
    assert np.array_equal(mt.encoder_layer(x, e, norm_first=norm_first),
                          mt.decoder_layer(x, None, d, norm_first=norm_first))
    g_e = mt.encoder_layer_backward(x, e, g, norm_first=norm_first)
    g_d = mt.decoder_layer_backward(x, None, d, g, norm_first=norm_first)
    assert np.array_equal(g_e[0], g_d[0])
    assert np.array_equal(g_e[1].attn.W_Q, g_d[2].self_attn.W_Q)
    assert np.array_equal(g_e[1].norm2.gamma, g_d[2].norm2.gamma)


def test_dropout_masks_of_the_wrong_shape_are_refused(rng):
    e = mt.EncoderLayerParams.random(rng, d_model=8, n_heads=2)
    d = mt.DecoderLayerParams.random(rng, d_model=8, n_heads=2, cross_attention=True)
    x = rng.normal(size=(3, 4, 8))
    good, bad = np.ones((3, 4, 8)), np.ones((1, 4, 8))     # bad would broadcast
    with pytest.raises(ValueError, match=r"dropout mask 1 must have x's shape "
                       r"\(3, 4, 8\), got \(1, 4, 8\)"):
        mt.encoder_layer(x, e, masks=(good, bad))
    with pytest.raises(ValueError, match="masks must hold 2 dropout masks"):
        mt.encoder_layer(x, e, masks=(good,))
    with pytest.raises(ValueError, match=r"dropout mask 0 must have y's shape"):
        mt.decoder_layer(x, x, d, masks=(bad, good, good))
    with pytest.raises(ValueError, match="masks must hold 3 dropout masks"):
        mt.decoder_layer(x, x, d, masks=(good, good))
    with pytest.raises(ValueError, match="one pair of dropout masks per layer"):
        mt.encoder(x, [e, e], masks=[(good, good)])
    with pytest.raises(ValueError, match=r"dropout mask 0 must have x's shape"):
        residual(x, lambda h: h, e.norm1, bad)

"""encoder_layer and encoder: hand-derived wiring, torch.nn.TransformerEncoderLayer as oracle.

Post-LN (the paper):  X' = LN(X + MultiHead(X)),  X'' = LN(X' + FFN(X'))
Pre-LN:               X' = X + MultiHead(LN(X)),  X'' = X' + FFN(LN(X'))
"""

import dataclasses
import math

import numpy as np
import pytest
import torch

from helpers import TOL32, TOL64, max_abs, t64
from mini_transformer import (EncoderLayerParams, LayerNormParams, causal_mask, encoder,
                              encoder_layer, padding_mask)
from mini_transformer.torch.convert import encoder_layer_from_torch, to_torch

EPS = 1e-5


def silent_layer(d_model=3, n_heads=1, b_O=None, b_2=None):
    """A layer whose attention and FFN outputs are constants (b_O and b_2).

    W_O = 0 makes MultiHead(X) = b_O whatever X; W_2 = 0 makes FFN(X) = b_2;
    γ = 1, β = 0. Only the residual connections and the LayerNorms remain.
    """
    p = EncoderLayerParams.random(np.random.default_rng(0), d_model=d_model,
                                  n_heads=n_heads)
    zero_b = np.zeros(d_model)
    attn = dataclasses.replace(p.attn, W_O=np.zeros_like(p.attn.W_O),
                               b_O=zero_b if b_O is None else np.asarray(b_O, float))
    ffn = dataclasses.replace(p.ffn, W_2=np.zeros_like(p.ffn.W_2),
                              b_2=zero_b if b_2 is None else np.asarray(b_2, float))
    ones = np.ones(d_model)
    return EncoderLayerParams(attn=attn, ffn=ffn, norm1=LayerNormParams(ones, zero_b),
                              norm2=LayerNormParams(ones, zero_b), eps=EPS)


def ln_twice(u, v):
    """LN(LN(x)) by hand for x - μ = u with biased variance v (γ = 1, β = 0):
    y = u / √(v + ε) has variance v / (v + ε), so
    LN(y) = y / √(v / (v + ε) + ε) = u / √(v + ε (v + ε))."""
    return np.asarray(u, float) / math.sqrt(v + EPS * (v + EPS))


# --- hand-derived values -----------------------------------------------------

def test_post_ln_with_silent_sublayers_by_hand():
    # x = [1, 2, 3]: both sublayers add 0, so X'' = LN(LN(x));
    # x - μ = [-1, 0, 1], v = 2/3
    out = encoder_layer(np.array([[1.0, 2.0, 3.0]]), silent_layer())
    np.testing.assert_allclose(out, [ln_twice([-1, 0, 1], 2 / 3)], rtol=1e-14)


def test_pre_ln_with_silent_sublayers_is_the_identity():
    # pre-LN adds 0 twice to the residual stream: X'' = X exactly
    x = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    np.testing.assert_array_equal(encoder_layer(x, silent_layer(), norm_first=True), x)


def test_residual_and_norm_wiring_by_hand():
    # b_O = [1, 0, -1]: X + MultiHead(X) = X + b_O
    #   token 1: [1, 2, 3] + b_O = [2, 2, 2] -> LN = [0, 0, 0] (constant row)
    #   token 2: [3, 2, 1] + b_O = [4, 2, 0] -> x - μ = [2, 0, -2], v = 8/3
    # FFN adds b_2 = 0, then the second LN: LN(0) = 0 and LN(LN(.)) as above.
    p = silent_layer(b_O=[1.0, 0.0, -1.0])
    x = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    out = encoder_layer(x, p)
    np.testing.assert_allclose(out[0], 0, atol=1e-15)
    np.testing.assert_allclose(out[1], ln_twice([2, 0, -2], 8 / 3), rtol=1e-14)
    # pre-LN: X'' = X + b_O + b_2 with b_2 = [0.5, 0.5, 0.5]
    p = silent_layer(b_O=[1.0, 0.0, -1.0], b_2=[0.5, 0.5, 0.5])
    np.testing.assert_allclose(encoder_layer(x, p, norm_first=True),
                               [[2.5, 2.5, 2.5], [4.5, 2.5, 0.5]], rtol=1e-15)


def test_post_ln_output_rows_are_normalised(rng):
    # with γ = 1, β = 0 every output row has mean 0 and variance v / (v + ε) ≈ 1
    p = EncoderLayerParams.random(rng, d_model=8, n_heads=2)
    ones, zeros = np.ones(8), np.zeros(8)
    p = dataclasses.replace(p, norm2=LayerNormParams(ones, zeros))
    out = encoder_layer(rng.normal(size=(2, 5, 8)) * 3, p)
    np.testing.assert_allclose(out.mean(-1), 0, atol=1e-14)
    np.testing.assert_allclose(out.var(-1), 1, atol=1e-3)


def test_encoder_of_no_layers_is_the_identity(rng):
    x = rng.normal(size=(2, 3, 4))
    assert encoder(x, []) is x


def test_fully_masked_sequence_stays_finite_with_finite_gradients(rng):
    p = EncoderLayerParams.random(rng, d_model=8, n_heads=2)
    pt = p.map(lambda a: t64(a, requires_grad=True))
    x = t64(rng.normal(size=(2, 3, 8)), requires_grad=True)
    out = encoder(x, [pt, pt], mask=padding_mask([0, 2], 3))
    assert torch.isfinite(out).all()
    out.square().sum().backward()
    assert torch.isfinite(x.grad).all()
    assert torch.isfinite(pt.attn.W_Q.grad).all() and torch.isfinite(pt.ffn.W_1.grad).all()


# --- oracle: torch.nn.TransformerEncoderLayer ----------------------------------

CASES = [  # d_model, n_heads, d_ff, batch, n
    (8, 2, 16, 2, 3),
    (12, 3, 7, 1, 5),
    (16, 4, 64, 3, 4),
    (6, 1, 24, 2, 1),
]


def _masks(kind, batch, n, rng):
    """(our mask, torch kwargs): torch's bool masks are True = ignore."""
    lengths = rng.integers(1, n + 1, size=batch)
    pad = padding_mask(lengths, n)
    causal = causal_mask(n)
    if kind is None:
        return None, {}
    if kind == "padding":
        return pad, {"src_key_padding_mask": torch.as_tensor(~pad[:, 0])}
    if kind == "causal":
        return causal, {"src_mask": torch.as_tensor(~causal)}
    if kind == "both":
        return pad & causal, {"src_key_padding_mask": torch.as_tensor(~pad[:, 0]),
                              "src_mask": torch.as_tensor(~causal)}
    f = rng.normal(size=(n, n))
    return f, {"src_mask": t64(f)}


@pytest.mark.parametrize("d_model,n_heads,d_ff,batch,n", CASES)
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("kind", [None, "padding", "causal", "both", "float"])
def test_matches_torch_encoder_layer(d_model, n_heads, d_ff, batch, n, norm_first, kind,
                                     rng):
    p = EncoderLayerParams.random(rng, d_model=d_model, n_heads=n_heads, d_ff=d_ff)
    x = rng.normal(size=(batch, n, d_model))
    mask, kw = _masks(kind, batch, n, rng)

    layer = to_torch(p, norm_first=norm_first, dtype=torch.float64)
    assert layer.norm_first == norm_first
    expected = layer(t64(x), **kw)
    out = encoder_layer(x, p, mask=mask, norm_first=norm_first)
    assert out.shape == x.shape
    assert max_abs(out, expected) < TOL64

    layer32 = to_torch(p, norm_first=norm_first, dtype=torch.float32)
    kw32 = {k: (v.float() if v.is_floating_point() else v) for k, v in kw.items()}
    x32 = torch.tensor(x, dtype=torch.float32)
    expected32 = layer32(x32, **kw32)
    out32 = encoder_layer(x.astype(np.float32), p.map(lambda a: a.astype(np.float32)),
                          mask=mask, norm_first=norm_first)
    assert out32.dtype == np.float32
    assert max_abs(out32, expected32) < TOL32
    pt = p.map(lambda a: torch.tensor(a, dtype=torch.float32))
    out_t = encoder_layer(x32, pt, mask=mask, norm_first=norm_first)
    assert max_abs(out_t, expected32) < TOL32


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_weights_from_a_torch_layer(norm_first, rng):
    # torch's own initialisation, with LayerNorm weights and biases made non-trivial
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.0,
                                             batch_first=True, norm_first=norm_first,
                                             layer_norm_eps=1e-6, dtype=torch.float64)
    with torch.no_grad():
        for norm in (layer.norm1, layer.norm2):
            norm.weight.normal_(1, 0.2)
            norm.bias.normal_(0, 0.2)
        layer.self_attn.in_proj_bias.normal_(0, 0.2)
    layer.eval()
    p = encoder_layer_from_torch(layer)
    assert p.eps == 1e-6
    x = rng.normal(size=(2, 5, 8))
    kpm = np.zeros((2, 5), bool)
    kpm[0, 3:] = True  # torch: True = padding
    expected = layer(t64(x), src_key_padding_mask=torch.as_tensor(kpm))
    out = encoder_layer(x, p, mask=~kpm[:, None, :], norm_first=norm_first)
    assert max_abs(out, expected) < TOL64


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_encoder_stack_matches_torch_layers_in_sequence(norm_first, rng):
    layers = [EncoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16)
              for _ in range(3)]
    x = rng.normal(size=(2, 4, 8))
    pad = padding_mask([4, 2], 4)
    expected = t64(x)
    for p in layers:
        expected = to_torch(p, norm_first=norm_first)(
            expected, src_key_padding_mask=torch.as_tensor(~pad[:, 0]))
    out = encoder(x, layers, mask=pad, norm_first=norm_first)
    assert max_abs(out, expected) < TOL64

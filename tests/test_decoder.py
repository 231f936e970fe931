"""decoder_layer and decoder: a one-token decoder by hand, torch.nn.TransformerDecoderLayer
as oracle, and the key/value cache against recomputing the whole prefix.

Post-LN (the paper):  Y1 = LN(Y + SelfAttn(Y)),  Y2 = LN(Y1 + CrossAttn(Y1, M)),
                      Y3 = LN(Y2 + FFN(Y2))
Pre-LN:               Y1 = Y + SelfAttn(LN(Y)), and so on
"""

import math

import numpy as np
import pytest
import torch

from helpers import TOL32, TOL64, max_abs, t64
from mini_transformer import (DecoderLayerParams, FeedForwardParams, KVCache, LayerNormParams,
                              MultiHeadParams,
                              causal_mask, decoder, decoder_layer, padding_mask)
from mini_transformer.torch.convert import decoder_layer_from_torch, to_torch

EPS = 1e-5


# --- hand-derived values: one target token -------------------------------------

def one_token_layer(rng):
    """d_model = 2, one head. Self-attention: W_V = I, W_O = swap, b_O = [1, 0];
    cross-attention: W_K = 0 (every score 0: uniform weights), W_V = W_O = I,
    b_V = [0.5, 0]; FFN: W_1 = I, W_2 = [[3, 0], [0, 0]], b_2 = [0, 1].
    W_Q of both and W_K of the self-attention are random: with one target token
    the self-attention's softmax is over one key (weight exactly 1), and with
    W_K = 0 the cross-attention's scores are all 0, so neither matters."""
    z, I = np.zeros((1, 2)), np.eye(2)[None]
    self_attn = MultiHeadParams(
        W_Q=rng.normal(size=(1, 2, 2)), W_K=rng.normal(size=(1, 2, 2)), W_V=I,
        W_O=np.array([[0.0, 1.0], [1.0, 0.0]]), b_Q=rng.normal(size=(1, 2)),
        b_K=rng.normal(size=(1, 2)), b_V=z, b_O=np.array([1.0, 0.0]))
    cross_attn = MultiHeadParams(
        W_Q=rng.normal(size=(1, 2, 2)), W_K=np.zeros((1, 2, 2)), W_V=I, W_O=np.eye(2),
        b_Q=rng.normal(size=(1, 2)), b_K=z, b_V=np.array([[0.5, 0.0]]), b_O=np.zeros(2))
    ffn = FeedForwardParams(W_1=np.eye(2), b_1=np.zeros(2),
                            W_2=np.array([[3.0, 0.0], [0.0, 0.0]]), b_2=np.array([0.0, 1.0]))
    ones, zeros = np.ones(2), np.zeros(2)
    return DecoderLayerParams(self_attn, cross_attn, ffn,
                              norm1=LayerNormParams(np.array([2.0, 1.0]), np.array([0.0, 1.0])),
                              norm2=LayerNormParams(ones, zeros),
                              norm3=LayerNormParams(ones, zeros), eps=EPS)


def ln2(a, b):
    """LayerNorm of the two numbers [a, b] (γ = 1, β = 0): μ = (a + b) / 2, σ² = (a - b)² / 4,
    so LN = [s, -s] with s = (a - b) / √((a - b)² + 4ε)."""
    return (a - b) / math.sqrt((a - b) ** 2 + 4 * EPS)


def test_one_token_post_ln_by_hand(rng):
    p = one_token_layer(rng)
    y = np.array([[1.0, 3.0]])                          # n_tgt = 1
    memory = np.array([[1.0, 0.0], [3.0, 2.0]])         # n_src = 2, mean [2, 1]
    # SelfAttn(y) = y W_V W_O + b_O = [3, 1] + [1, 0] = [4, 1]; y + SelfAttn(y) = [5, 4]
    # Y1 = γ1 [s1, -s1] + β1 = [2 s1, 1 - s1], s1 = ln2(5, 4)
    s1 = ln2(5, 4)
    # CrossAttn = mean(memory) W_V + b_V = [2, 1] + [0.5, 0] = [2.5, 1]
    # Y1 + CrossAttn = [2 s1 + 2.5, 2 - s1] -> Y2 = [s2, -s2]
    s2 = ln2(2 * s1 + 2.5, 2 - s1)
    # FFN(Y2) = ReLU([s2, -s2]) W_2 + b_2 = [3 s2, 0] + [0, 1] (s2 > 0)
    # Y2 + FFN = [4 s2, 1 - s2] -> Y3 = [s3, -s3]
    s3 = ln2(4 * s2, 1 - s2)
    out = decoder_layer(y, memory, p)
    np.testing.assert_allclose(out, [[s3, -s3]], rtol=1e-14)
    # the same numbers in a batch, with a causal mask (one key: nothing to mask)
    out = decoder_layer(np.stack([y, y]), np.stack([memory, memory]), p,
                        self_mask=causal_mask(1))
    np.testing.assert_allclose(out, [[[s3, -s3]]] * 2, rtol=1e-14)


def test_one_token_pre_ln_by_hand(rng):
    p = one_token_layer(rng)
    y = np.array([[1.0, 3.0]])
    memory = np.array([[1.0, 0.0], [3.0, 2.0]])
    # LN1(y) = γ1 [t, -t] + β1 = [2t, 1 - t], t = ln2(1, 3) (negative)
    t = ln2(1, 3)
    # SelfAttn(LN1(y)) = swap([2t, 1 - t]) + [1, 0] = [2 - t, 2t]
    y1 = np.array([1 + 2 - t, 3 + 2 * t])
    # CrossAttn ignores its query: [2.5, 1] whatever LN2(y1) is
    y2 = y1 + [2.5, 1.0]
    # LN3(y2) = [u, -u]; FFN = [3 max(u, 0), 0] + [0, 1]
    u = ln2(*y2)
    y3 = y2 + [3 * max(u, 0.0), 1.0]
    np.testing.assert_allclose(decoder_layer(y, memory, p, norm_first=True), [y3],
                               rtol=1e-14)


def test_decoder_of_no_layers_is_the_identity(rng):
    y = rng.normal(size=(2, 3, 4))
    assert decoder(y, rng.normal(size=(2, 5, 4)), []) is y


def test_future_tokens_do_not_change_earlier_outputs(rng):
    # with the causal mask, output i depends on tokens 0..i only
    p = DecoderLayerParams.random(rng, d_model=8, n_heads=2)
    y, memory = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 4, 8))
    out = decoder_layer(y, memory, p, self_mask=causal_mask(5))
    y2 = y.copy()
    y2[:, 3:] = rng.normal(size=(2, 2, 8))
    out2 = decoder_layer(y2, memory, p, self_mask=causal_mask(5))
    np.testing.assert_array_equal(out[:, :3], out2[:, :3])
    assert np.abs(out[:, 3:] - out2[:, 3:]).min() > 0


# --- oracle: torch.nn.TransformerDecoderLayer -----------------------------------

CASES = [  # d_model, n_heads, d_ff, batch, n_tgt, n_src
    (8, 2, 16, 2, 3, 5),
    (12, 3, 7, 1, 5, 2),
    (16, 4, 64, 3, 4, 4),
    (6, 1, 24, 2, 1, 3),
]


def _masks(kind, batch, n_tgt, n_src, rng):
    """(self_mask, memory_mask, torch kwargs): torch's bool masks are True = ignore."""
    tgt_pad = padding_mask(rng.integers(1, n_tgt + 1, size=batch), n_tgt)
    src_pad = padding_mask(rng.integers(1, n_src + 1, size=batch), n_src)
    causal = causal_mask(n_tgt)
    if kind is None:
        return None, None, {}
    if kind == "causal":
        return causal, None, {"tgt_mask": torch.as_tensor(~causal)}
    if kind == "padding":  # target and memory padding, and causal
        return tgt_pad & causal, src_pad, {
            "tgt_mask": torch.as_tensor(~causal),
            "tgt_key_padding_mask": torch.as_tensor(~tgt_pad[:, 0]),
            "memory_key_padding_mask": torch.as_tensor(~src_pad[:, 0])}
    f, g = rng.normal(size=(n_tgt, n_tgt)), rng.normal(size=(n_tgt, n_src))
    return f, g, {"tgt_mask": t64(f), "memory_mask": t64(g)}


@pytest.mark.parametrize("d_model,n_heads,d_ff,batch,n_tgt,n_src", CASES)
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("kind", [None, "causal", "padding", "float"])
def test_matches_torch_decoder_layer(d_model, n_heads, d_ff, batch, n_tgt, n_src,
                                     norm_first, kind, rng):
    p = DecoderLayerParams.random(rng, d_model=d_model, n_heads=n_heads, d_ff=d_ff)
    y, memory = rng.normal(size=(batch, n_tgt, d_model)), rng.normal(size=(batch, n_src,
                                                                           d_model))
    self_mask, memory_mask, kw = _masks(kind, batch, n_tgt, n_src, rng)

    layer = to_torch(p, norm_first=norm_first, dtype=torch.float64)
    assert layer.norm_first == norm_first
    expected = layer(t64(y), t64(memory), **kw)
    out = decoder_layer(y, memory, p, self_mask, memory_mask, norm_first=norm_first)
    assert out.shape == y.shape
    assert max_abs(out, expected) < TOL64

    layer32 = to_torch(p, norm_first=norm_first, dtype=torch.float32)
    kw32 = {k: (v.float() if v.is_floating_point() else v) for k, v in kw.items()}
    y32, m32 = torch.tensor(y, dtype=torch.float32), torch.tensor(memory, dtype=torch.float32)
    expected32 = layer32(y32, m32, **kw32)
    p32 = p.map(lambda a: a.astype(np.float32))
    out32 = decoder_layer(y.astype(np.float32), memory.astype(np.float32), p32, self_mask,
                          memory_mask, norm_first=norm_first)
    assert out32.dtype == np.float32
    assert max_abs(out32, expected32) < TOL32
    out_t = decoder_layer(y32, m32, p.map(lambda a: torch.tensor(a, dtype=torch.float32)),
                          self_mask, memory_mask, norm_first=norm_first)
    assert out_t.dtype == torch.float32 and max_abs(out_t, expected32) < TOL32


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_weights_from_a_torch_layer(norm_first, rng):
    # torch's own initialisation, with LayerNorm weights and biases made non-trivial
    torch.manual_seed(1)
    layer = torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, dropout=0.0,
                                             batch_first=True, norm_first=norm_first,
                                             layer_norm_eps=1e-6, dtype=torch.float64)
    with torch.no_grad():
        for norm in (layer.norm1, layer.norm2, layer.norm3):
            norm.weight.normal_(1, 0.2)
            norm.bias.normal_(0, 0.2)
        layer.self_attn.in_proj_bias.normal_(0, 0.2)
        layer.multihead_attn.in_proj_bias.normal_(0, 0.2)
    layer.eval()
    p = decoder_layer_from_torch(layer)
    assert p.eps == 1e-6
    y, memory = rng.normal(size=(2, 4, 8)), rng.normal(size=(2, 5, 8))
    kpm = np.zeros((2, 5), bool)
    kpm[0, 3:] = True  # torch: True = padding
    expected = layer(t64(y), t64(memory), tgt_mask=torch.as_tensor(~causal_mask(4)),
                     memory_key_padding_mask=torch.as_tensor(kpm))
    out = decoder_layer(y, memory, p, causal_mask(4), ~kpm[:, None, :], norm_first=norm_first)
    assert max_abs(out, expected) < TOL64


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_decoder_stack_matches_torch_decoder(norm_first, rng):
    layers = [DecoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16) for _ in range(3)]
    y, memory = rng.normal(size=(2, 4, 8)), rng.normal(size=(2, 6, 8))
    src_pad = padding_mask([6, 2], 6)
    stack = torch.nn.TransformerDecoder(to_torch(layers[0], norm_first=norm_first), 3)
    stack.layers = torch.nn.ModuleList(to_torch(p, norm_first=norm_first) for p in layers)
    expected = stack(t64(y), t64(memory), tgt_mask=torch.as_tensor(~causal_mask(4)),
                     memory_key_padding_mask=torch.as_tensor(~src_pad[:, 0]))
    out = decoder(y, memory, layers, causal_mask(4), src_pad, norm_first=norm_first)
    assert max_abs(out, expected) < TOL64


# --- the key/value cache -----------------------------------------------------------

@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_cache_one_position_at_a_time_equals_the_causal_decoder(norm_first, rng):
    # feeding positions 0, 1, ... one at a time through a cache gives, row by row,
    # what the whole sequence with the causal mask gives
    layers = [DecoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16) for _ in range(2)]
    y, memory = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 3, 8))
    src_pad = padding_mask([3, 2], 3)
    full = decoder(y, memory, layers, causal_mask(5), src_pad, norm_first=norm_first)
    caches = [KVCache() for _ in layers]
    for t in range(5):
        step = decoder(y[:, t:t + 1], memory, layers, None, src_pad, norm_first=norm_first,
                       caches=caches)
        assert step.shape == (2, 1, 8)
        assert max_abs(step[:, 0], full[:, t]) < 1e-12
    assert [c.length for c in caches] == [5, 5]
    assert caches[0].self_kv[0].shape == (2, 2, 5, 4)   # (batch, h, t, d_k)
    assert caches[0].cross_kv[0].shape == (2, 2, 3, 4)  # (batch, h, n_src, d_k)


def test_cache_two_positions_at_a_time_with_a_mask(rng):
    # a block of new positions needs the causal mask shifted by the cached length
    p = DecoderLayerParams.random(rng, d_model=8, n_heads=2)
    y, memory = rng.normal(size=(4, 8)), rng.normal(size=(3, 8))
    full = decoder_layer(y, memory, p, causal_mask(4))
    cache = KVCache()
    first = decoder_layer(y[:2], memory, p, causal_mask(2), cache=cache)
    shifted = np.tril(np.ones((2, 4), bool), k=2)  # new queries 2, 3 over keys 0..3
    second = decoder_layer(y[2:], memory, p, shifted, cache=cache)
    assert max_abs(np.concatenate([first, second]), full) < 1e-12


def test_cache_reorder_follows_the_rows(rng):
    """After ``reorder(rows)`` the cache holds what decoding the rows in that order
    would have cached: the next step on the reordered rows equals the whole causal
    decoder on the reordered batch (a beam's hypotheses moving between rows)."""
    layers = [DecoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16) for _ in range(2)]
    y, memory = rng.normal(size=(3, 4, 8)), rng.normal(size=(3, 5, 8))
    rows = np.array([2, 0, 0])
    caches = [KVCache() for _ in layers]
    for t in range(3):
        decoder(y[:, t:t + 1], memory, layers, None, None, caches=caches)
    for cache in caches:
        cache.reorder(rows)
    step = decoder(y[rows, 3:4], memory[rows], layers, None, None, caches=caches)
    full = decoder(y[rows], memory[rows], layers, causal_mask(4))
    assert max_abs(step[:, 0], full[:, 3]) < 1e-12

"""The weight containers: layout, .random, .map, and exact interop with torch.nn."""

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers import t64, to_numpy
from mini_transformer import EncoderLayerParams, FeedForwardParams, MultiHeadParams
from mini_transformer.torch.convert import (encoder_layer_from_torch, multi_head_from_torch,
                                            to_torch)


def test_random_shapes(rng):
    p = MultiHeadParams.random(rng, d_model=12, n_heads=3)
    assert (p.n_heads, p.d_model, p.d_k, p.d_v) == (3, 12, 4, 4)
    assert p.W_Q.shape == p.W_K.shape == p.W_V.shape == (3, 12, 4)
    assert p.W_O.shape == (12, 12)
    assert p.b_Q.shape == p.b_K.shape == p.b_V.shape == (3, 4) and p.b_O.shape == (12,)
    lp = EncoderLayerParams.random(rng, d_model=12, n_heads=3, d_ff=20)
    assert lp.d_model == 12 and lp.ffn.d_ff == 20 and lp.eps == 1e-5
    for a in (lp.norm1.gamma, lp.norm1.beta, lp.norm2.gamma, lp.norm2.beta):
        assert a.shape == (12,) and a.dtype == np.float64


def test_random_is_reproducible_and_glorot_bounded():
    a = MultiHeadParams.random(np.random.default_rng(3), d_model=8, n_heads=2)
    b = MultiHeadParams.random(np.random.default_rng(3), d_model=8, n_heads=2)
    np.testing.assert_array_equal(a.W_Q, b.W_Q)
    # Glorot uniform: |W| <= √(6 / (fan_in + fan_out)) = √(6 / 16)
    assert np.abs(a.W_Q).max() <= np.sqrt(6 / 16)


def test_map_copies_every_array_nested(rng):
    lp = EncoderLayerParams.random(rng, d_model=4, n_heads=2)
    seen = []
    moved = lp.map(lambda a: seen.append(a.shape) or torch.as_tensor(a, dtype=torch.float32))
    assert len(seen) == 8 + 4 + 4  # attention, feed-forward, the two LayerNorms
    assert moved.attn.W_Q.dtype == torch.float32 and moved.ffn.b_2.dtype == torch.float32
    assert moved.norm2.beta.dtype == torch.float32 and moved.eps == lp.eps
    assert isinstance(lp.attn.W_Q, np.ndarray)  # the original is unchanged
    with pytest.raises(dataclasses.FrozenInstanceError):
        lp.eps = 0.1


def test_per_head_layout_matches_torch_in_proj(rng):
    # torch computes q = x Wᵀ + b with in_proj_weight[:E] of shape (E, E); head i
    # owns rows i d_k ... (i + 1) d_k. Ours: q_i = x W_Q[i] + b_Q[i].
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(6, 3, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_bias.normal_()
    p = multi_head_from_torch(mha)
    x = rng.normal(size=(4, 6))
    E, d_k = 6, 2
    for j, (W, b) in enumerate(((p.W_Q, p.b_Q), (p.W_K, p.b_K), (p.W_V, p.b_V))):
        full = F.linear(t64(x), mha.in_proj_weight[j * E:(j + 1) * E],
                        mha.in_proj_bias[j * E:(j + 1) * E])
        for i in range(3):
            np.testing.assert_allclose(x @ W[i] + b[i], to_numpy(full[:, i * d_k:(i + 1) * d_k]),
                                       rtol=1e-13)
    out_proj = F.linear(t64(x), mha.out_proj.weight, mha.out_proj.bias)
    np.testing.assert_allclose(x @ p.W_O + p.b_O, to_numpy(out_proj), rtol=1e-13)


def test_multihead_round_trip_is_exact(rng):
    p = MultiHeadParams.random(rng, d_model=8, n_heads=4)
    back = multi_head_from_torch(to_torch(p))
    for f in dataclasses.fields(p):
        np.testing.assert_array_equal(getattr(back, f.name), getattr(p, f.name))
        assert getattr(back, f.name).dtype == np.float64


def test_encoder_layer_round_trip_is_exact(rng):
    p = dataclasses.replace(EncoderLayerParams.random(rng, d_model=6, n_heads=2, d_ff=10),
                            eps=1e-7)
    layer = to_torch(p, norm_first=True)
    assert layer.norm_first and not layer.training
    assert layer.linear1.out_features == 10 and layer.norm1.eps == 1e-7
    back = encoder_layer_from_torch(layer)
    flat = [p.attn, p.ffn]
    for a, b in zip(flat, [back.attn, back.ffn]):
        for f in dataclasses.fields(a):
            np.testing.assert_array_equal(getattr(b, f.name), getattr(a, f.name))
    for name in ("norm1", "norm2"):
        for w in ("gamma", "beta"):
            np.testing.assert_array_equal(getattr(getattr(back, name), w),
                                          getattr(getattr(p, name), w))
    assert back.eps == 1e-7


def test_torch_state_survives_from_torch_to_torch():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                             batch_first=True, dtype=torch.float64)
    again = to_torch(encoder_layer_from_torch(layer))
    for (name, a), (_, b) in zip(layer.state_dict().items(), again.state_dict().items()):
        assert torch.equal(a, b), name


def test_from_torch_reads_float32_as_float64_numpy():
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(4, 2, batch_first=True)  # float32
    p = multi_head_from_torch(mha)
    assert isinstance(p.W_Q, np.ndarray) and p.W_Q.dtype == np.float64
    np.testing.assert_array_equal(p.W_O, mha.out_proj.weight.detach().numpy().T)


def test_from_torch_without_biases():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0,
                                             bias=False, batch_first=True)
    p = encoder_layer_from_torch(layer)
    for b in (p.attn.b_Q, p.attn.b_O, p.ffn.b_1, p.ffn.b_2, p.norm1.beta, p.norm2.beta):
        np.testing.assert_array_equal(b, 0)
    np.testing.assert_array_equal(p.norm1.gamma, layer.norm1.weight.detach().numpy())


def test_to_torch_dtype_and_device(rng):
    p = EncoderLayerParams.random(rng, d_model=4, n_heads=2)
    layer = to_torch(p, dtype=torch.float32, device="meta")
    assert {q.dtype for q in layer.parameters()} == {torch.float32}
    assert {q.device.type for q in layer.parameters()} == {"meta"}
    mha = to_torch(p.attn, dtype=torch.float16)
    assert mha.in_proj_weight.dtype == torch.float16
    assert mha.batch_first and mha.dropout == 0.0
    np.testing.assert_allclose(to_numpy(mha.out_proj.weight), p.attn.W_O.T,
                               rtol=1e-3)


def test_feed_forward_params_random_refuses_zero(rng):
    with pytest.raises(ValueError, match="d_model and d_ff must be positive"):
        FeedForwardParams.random(rng, d_model=4, d_ff=0)

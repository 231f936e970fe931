"""mini_transformer.torch: the nn.Module wrappers and the fused attention path.

Oracles: torch.nn.MultiheadAttention and torch.nn.TransformerEncoderLayer
(weights copied by ``from_torch``), and for ``fused=True`` the readable path.
"""

import numpy as np
import pytest
import torch

from helpers import TOL32, TOL64, max_abs, t64
from mini_transformer import causal_mask, padding_mask, scaled_dot_product_attention
from mini_transformer.torch import Encoder, EncoderLayer, MultiHeadAttention, fused_attention
from mini_transformer.torch.convert import to_torch


def torch_mha(d_model=8, n_heads=2, dtype=torch.float64, seed=0):
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(d_model, n_heads, batch_first=True, dtype=dtype)
    with torch.no_grad():
        mha.in_proj_bias.normal_(0, 0.1)
        mha.out_proj.bias.normal_(0, 0.1)
    return mha


def torch_layer(norm_first, dtype=torch.float64, seed=0):
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                             batch_first=True, norm_first=norm_first,
                                             dtype=dtype)
    with torch.no_grad():
        layer.norm1.bias.normal_(0, 0.1)
        layer.norm2.weight.normal_(1, 0.1)
    return layer.eval()


# --- fused_attention -----------------------------------------------------------

@pytest.mark.parametrize("mask", [None, "bool", "numpy-bool", "float", "causal"])
def test_fused_attention_matches_the_readable_path(mask, rng):
    q, k, v = (t64(rng.normal(size=s)) for s in [(2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5)])
    m = {None: None,
         "bool": torch.as_tensor(rng.random((2, 1, 4, 6)) < 0.6) | (torch.arange(6) == 0),
         "numpy-bool": padding_mask([6, 2], 6)[:, None],
         "float": t64(rng.normal(size=(4, 6))),
         "causal": causal_mask(4, 6)}[mask]
    out, w = fused_attention(q, k, v, m)
    assert w is None  # the fused kernel never forms the weights
    expected, _ = scaled_dot_product_attention(q, k, v, m)
    assert max_abs(out, expected) < TOL64


# --- MultiHeadAttention ----------------------------------------------------------

@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("dtype,tol", [(torch.float64, TOL64), (torch.float32, TOL32)])
def test_multihead_module_matches_torch(fused, dtype, tol, rng):
    mha = torch_mha(dtype=dtype)
    ours = MultiHeadAttention.from_torch(mha, fused=fused)
    assert ours.W_Q.dtype == dtype and len(list(ours.parameters())) == 8
    x = torch.tensor(rng.normal(size=(2, 5, 8)), dtype=dtype)
    mem = torch.tensor(rng.normal(size=(2, 7, 8)), dtype=dtype)
    pad = padding_mask([7, 3], 7)
    expected, expected_w = mha(x, mem, mem, key_padding_mask=torch.as_tensor(~pad[:, 0]),
                               average_attn_weights=False)
    out, w = ours(x, mask=pad, memory=mem)
    assert max_abs(out, expected) < tol
    if fused:
        assert w is None
    else:
        assert max_abs(w, expected_w) < tol
    # self-attention with a causal mask
    expected, _ = mha(x, x, x, attn_mask=torch.as_tensor(~causal_mask(5)))
    assert max_abs(ours(x, mask=causal_mask(5))[0], expected) < tol


def test_multihead_gradients_match_torch(rng):
    # backprop through our equations gives torch's gradients, in our layout:
    # in_proj_weight[:E] rows of head i are W_Q[i]ᵀ
    mha = torch_mha(d_model=6, n_heads=3)
    ours = MultiHeadAttention.from_torch(mha)
    x = t64(rng.normal(size=(2, 4, 6)))
    g = t64(rng.normal(size=(2, 4, 6)))
    (mha(x, x, x)[0] * g).sum().backward()
    (ours(x)[0] * g).sum().backward()
    E, h, d_k = 6, 3, 2
    for j, name in enumerate(("W_Q", "W_K", "W_V")):
        theirs = mha.in_proj_weight.grad[j * E:(j + 1) * E].reshape(h, d_k, E).transpose(1, 2)
        assert max_abs(getattr(ours, name).grad, theirs) < TOL64
    assert max_abs(ours.W_O.grad, mha.out_proj.weight.grad.T) < TOL64
    assert max_abs(ours.b_O.grad, mha.out_proj.bias.grad) < TOL64
    assert max_abs(ours.b_Q.grad.reshape(-1), mha.in_proj_bias.grad[:E]) < TOL64


def test_multihead_module_constructor():
    m = MultiHeadAttention(8, 4, seed=3)
    assert m.W_Q.shape == (4, 8, 2) and m.W_Q.dtype == torch.get_default_dtype()
    assert torch.equal(MultiHeadAttention(8, 4, seed=3).W_Q, m.W_Q)
    m64 = MultiHeadAttention(8, 4, dtype=torch.float64, fused=True)
    assert m64.fused and m64.b_O.dtype == torch.float64
    out, w = MultiHeadAttention(8, 4)(torch.zeros(3, 8))
    assert out.shape == (3, 8) and w.shape == (4, 3, 3)


# --- EncoderLayer and Encoder ----------------------------------------------------

@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("dtype,tol", [(torch.float64, TOL64), (torch.float32, TOL32)])
def test_encoder_layer_module_matches_torch(norm_first, fused, dtype, tol, rng):
    layer = torch_layer(norm_first, dtype=dtype)
    ours = EncoderLayer.from_torch(layer, fused=fused)
    assert ours.norm_first == norm_first and ours.ffn.W_1.dtype == dtype
    x = torch.tensor(rng.normal(size=(3, 4, 8)), dtype=dtype)
    pad = padding_mask([4, 1, 3], 4)
    expected = layer(x, src_key_padding_mask=torch.as_tensor(~pad[:, 0]))
    assert max_abs(ours(x, pad), expected) < tol
    expected = layer(x, src_mask=torch.as_tensor(~causal_mask(4)))
    assert max_abs(ours(x, causal_mask(4)), expected) < tol


def test_encoder_layer_fused_equals_readable_with_gradients(rng):
    a = EncoderLayer(8, 2, 16, seed=5, dtype=torch.float64)
    b = EncoderLayer(8, 2, 16, seed=5, dtype=torch.float64, fused=True)
    x = t64(rng.normal(size=(2, 3, 8)))
    mask = padding_mask([3, 2], 3)
    ya, yb = a(x, mask), b(x, mask)
    assert max_abs(ya, yb) < TOL64
    ya.square().sum().backward()
    yb.square().sum().backward()
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert max_abs(pa.grad, pb.grad) < 1e-9, name


def test_encoder_stack(rng):
    enc = Encoder(3, 8, 2, 16, seed=7, dtype=torch.float64, norm_first=True)
    assert len(enc.layers) == 3
    x = t64(rng.normal(size=(2, 5, 8)))
    pad = padding_mask([5, 3], 5)
    expected = x
    for layer in enc.layers:  # each layer's weights in a torch.nn layer, in sequence
        ref = to_torch(layer.params.map(lambda a: a.detach().numpy()), norm_first=True)
        expected = ref(expected, src_key_padding_mask=torch.as_tensor(~pad[:, 0]))
    assert max_abs(enc(x, pad), expected) < TOL64
    # layers get different seeds
    assert not torch.equal(enc.layers[0].ffn.W_1, enc.layers[1].ffn.W_1)


# --- devices (the meta-device run is in test_backends.py) ----------------------

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_fused_and_readable_agree():
    torch.manual_seed(0)
    x = torch.randn(2, 64, 32, device="cuda")
    pad = padding_mask([64, 40], 64)  # NumPy mask, moved to the GPU
    for dtype, tol in ((torch.float32, 1e-4), (torch.float16, 1e-2)):
        a = Encoder(2, 32, 4, device="cuda", dtype=dtype)
        b = Encoder(2, 32, 4, device="cuda", dtype=dtype, fused=True)
        ya, yb = a(x.to(dtype), pad), b(x.to(dtype), pad)
        assert ya.device.type == "cuda" and ya.dtype == dtype
        assert max_abs(ya, yb) < tol
        ref = Encoder(2, 32, 4, dtype=torch.float64)(x.double().cpu(), pad)
        assert max_abs(ya, ref) < 10 * tol

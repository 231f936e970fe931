"""mini_transformer.torch: DecoderLayer, Decoder and Transformer modules.

Oracles: torch.nn.TransformerDecoderLayer and torch.nn.Transformer (weights copied
by ``from_torch``), and for ``fused=True`` the readable path.
"""

import dataclasses

import numpy as np
import pytest
import torch

from helpers import TOL32, TOL64, max_abs, t64
from mini_transformer import (TransformerParams, causal_mask, greedy_decode, padding_mask,
                              transformer)
from mini_transformer.torch import Decoder, DecoderLayer, Transformer
from mini_transformer.torch.convert import to_torch

pytestmark = [pytest.mark.filterwarnings("ignore:enable_nested_tensor is True"),
              pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")]


def torch_decoder_layer(norm_first, dtype=torch.float64, seed=0):
    torch.manual_seed(seed)
    layer = torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                             batch_first=True, norm_first=norm_first,
                                             dtype=dtype)
    with torch.no_grad():
        layer.norm1.bias.normal_(0, 0.1)
        layer.norm3.weight.normal_(1, 0.1)
        layer.multihead_attn.in_proj_bias.normal_(0, 0.1)
    return layer.eval()


def torch_transformer(norm_first, dtype=torch.float64, seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Transformer(8, 2, 2, 2, 16, dropout=0.0, batch_first=True,
                                 norm_first=norm_first, dtype=dtype)
    with torch.no_grad():
        model.encoder.norm.bias.normal_(0, 0.1)
        model.decoder.norm.weight.normal_(1, 0.1)
    return model.eval()


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("dtype,tol", [(torch.float64, TOL64), (torch.float32, TOL32)])
def test_decoder_layer_module_matches_torch(norm_first, fused, dtype, tol, rng):
    layer = torch_decoder_layer(norm_first, dtype=dtype)
    ours = DecoderLayer.from_torch(layer, fused=fused)
    assert ours.norm_first == norm_first and ours.ffn.W_1.dtype == dtype
    assert sum(p.numel() for p in ours.parameters()) == sum(
        p.numel() for p in layer.parameters())
    y = torch.tensor(rng.normal(size=(3, 4, 8)), dtype=dtype)
    memory = torch.tensor(rng.normal(size=(3, 5, 8)), dtype=dtype)
    src_pad = padding_mask([5, 1, 3], 5)
    expected = layer(y, memory, tgt_mask=torch.as_tensor(~causal_mask(4)),
                     memory_key_padding_mask=torch.as_tensor(~src_pad[:, 0]))
    assert max_abs(ours(y, memory, causal_mask(4), src_pad), expected) < tol


def test_decoder_layer_fused_equals_readable_with_gradients(rng):
    a = DecoderLayer(8, 2, 16, seed=5, dtype=torch.float64)
    b = DecoderLayer(8, 2, 16, seed=5, dtype=torch.float64, fused=True)
    y, memory = t64(rng.normal(size=(2, 3, 8))), t64(rng.normal(size=(2, 4, 8)))
    ya = a(y, memory, causal_mask(3), padding_mask([4, 2], 4))
    yb = b(y, memory, causal_mask(3), padding_mask([4, 2], 4))
    assert max_abs(ya, yb) < TOL64
    ya.square().sum().backward()
    yb.square().sum().backward()
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert max_abs(pa.grad, pb.grad) < 1e-9, name


def test_decoder_stack(rng):
    dec = Decoder(3, 8, 2, 16, seed=7, dtype=torch.float64, norm_first=True)
    assert len(dec.layers) == 3
    y, memory = t64(rng.normal(size=(2, 5, 8))), t64(rng.normal(size=(2, 3, 8)))
    expected = y
    for layer in dec.layers:  # each layer's weights in a torch.nn layer, in sequence
        ref = to_torch(layer.params.map(lambda a: a.detach().numpy()), norm_first=True)
        expected = ref(expected, memory, tgt_mask=torch.as_tensor(~causal_mask(5)))
    assert max_abs(dec(y, memory, causal_mask(5)), expected) < TOL64
    assert not torch.equal(dec.layers[0].ffn.W_1, dec.layers[1].ffn.W_1)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("dtype,tol", [(torch.float64, TOL64), (torch.float32, TOL32)])
def test_transformer_module_matches_torch(norm_first, fused, dtype, tol, rng):
    model = torch_transformer(norm_first, dtype=dtype)
    emb = torch.nn.Embedding(11, 8, dtype=dtype)
    ours = Transformer.from_torch(model, embedding=emb, fused=fused)
    assert ours.norm_first == norm_first and ours.embedding.dtype == dtype
    # as many scalars as torch's model and the embedding
    n_ours = sum(p.numel() for p in ours.parameters())
    assert n_ours == sum(p.numel() for p in model.parameters()) + emb.weight.numel()
    src = torch.tensor(rng.normal(size=(2, 5, 8)), dtype=dtype)
    tgt = torch.tensor(rng.normal(size=(2, 3, 8)), dtype=dtype)
    src_pad = padding_mask([5, 2], 5)
    kpm = torch.as_tensor(~src_pad[:, 0])
    expected = model(src, tgt, tgt_mask=torch.as_tensor(~causal_mask(3)),
                     src_key_padding_mask=kpm, memory_key_padding_mask=kpm)
    out = ours.encoder_decoder(src, tgt, src_pad, causal_mask(3), src_pad)
    assert max_abs(out, expected) < tol
    # logits and greedy decoding, against the functions on the same weights in float64
    p64 = ours.params.map(lambda a: a.detach().double())
    tokens = torch.as_tensor(rng.integers(0, 11, size=(2, 5)))
    logits = ours(tokens, tokens[:, :3], src_pad)
    assert logits.shape == (2, 3, 11)
    assert max_abs(logits, transformer(tokens, tokens[:, :3], p64, src_pad,
                                       norm_first=norm_first)) < tol
    got = ours.greedy_decode(tokens, 6, bos=0, eos=1, src_mask=src_pad)
    np.testing.assert_array_equal(
        got.numpy(), greedy_decode(tokens, p64, 6, 0, 1, src_pad, norm_first=norm_first))


def test_transformer_module_constructor_and_params(rng):
    m = Transformer(13, 8, 2, 16, n_layers=2, seed=3, dtype=torch.float64)
    assert m.encoder_norm is None and m.embedding.shape == (13, 8)
    p = m.params
    assert isinstance(p, TransformerParams) and len(p.decoder_layers) == 2
    # from_params of the paper's model is the same module
    m2 = Transformer.from_params(p.map(lambda a: a.detach().numpy()), dtype=torch.float64)
    tokens = torch.as_tensor(rng.integers(0, 13, size=(2, 4)))
    assert torch.equal(m(tokens, tokens), m2(tokens, tokens))
    # gradients reach the tied embedding from all three uses
    m(tokens, tokens).square().sum().backward()
    assert m.embedding.grad is not None and torch.isfinite(m.embedding.grad).all()


def test_modules_run_on_the_meta_device():
    y, memory = torch.empty(2, 3, 8, device="meta"), torch.empty(2, 5, 8, device="meta")
    dec = Decoder(2, 8, 2, device="meta", fused=True)
    out = dec(y, memory, causal_mask(3), padding_mask([5, 2], 5))
    assert out.device.type == "meta" and out.shape == (2, 3, 8)
    model = Transformer(11, 8, 2, n_layers=1, device="meta")
    out = model.encoder_decoder(memory, y, None, causal_mask(3), padding_mask([5, 2], 5))
    assert out.device.type == "meta" and out.shape == (2, 3, 8)


def test_state_dict_keys_are_the_checkpoint_names(tmp_path, rng):
    """A checkpoint's arrays load into a module with ``load_state_dict`` (and the
    module's state_dict is a checkpoint's arrays): the module then computes what the
    functions compute on the checkpoint."""
    from mini_transformer.tree import named_leaves

    p = dataclasses.replace(TransformerParams.random(rng, vocab_size=13, d_model=8,
                                                     n_heads=2, d_ff=16, n_layers=2),
                            norm_first=True)
    p.save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as f:
        arrays = {k: torch.as_tensor(f[k]) for k in f.files if k != "__header__"}
    m = Transformer(13, 8, 2, 16, n_layers=2, seed=9, dtype=torch.float64,
                    norm_first=True)
    assert sorted(m.state_dict()) == sorted(named_leaves(p)) == sorted(arrays)
    m.load_state_dict(arrays)
    tokens = torch.as_tensor(rng.integers(0, 13, size=(2, 4)))
    q = TransformerParams.load(tmp_path / "m.npz")
    assert max_abs(m(tokens, tokens), transformer(tokens.numpy(), tokens.numpy(),
                                                  q)) < 1e-12
    back = {k: v.numpy() for k, v in m.state_dict().items()}
    assert all(np.array_equal(back[k], a) for k, a in named_leaves(q).items())

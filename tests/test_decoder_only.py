"""decoder_layer and decoder without memory: a decoder-only (language-model) block,
masked self-attention and the feed-forward network, each with its LayerNorm. Its
oracle is torch.nn.TransformerEncoderLayer under a causal mask, which computes the
same two sub-layers; the backward against torch.autograd through that layer."""

import numpy as np
import pytest
import torch

from helpers import TOL64, FixedMask, max_abs, t64
import mini_transformer as mt
from mini_transformer.decoder import decoder_backward
from mini_transformer.torch.convert import to_torch


def decoder_only_layer(rng):
    """A decoder layer with no cross-attention and no third LayerNorm, and the
    encoder layer holding the same weights (its oracle's weights)."""
    p = mt.DecoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16,
                                     cross_attention=False)
    assert p.cross_attn is None and p.norm3 is None
    enc = mt.EncoderLayerParams(attn=p.self_attn, ffn=p.ffn, norm1=p.norm1, norm2=p.norm2)
    return p, enc


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("with_dropout", [False, True])
def test_decoder_only_layer_against_torch_nn(rng, norm_first, with_dropout):
    p, enc = decoder_only_layer(rng)
    y, g = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 5, 8))
    masks = None
    layer = to_torch(enc, norm_first=norm_first, dtype=torch.float64)
    if with_dropout:
        masks = tuple(mt.dropout.dropout_mask(rng, 0.3, y.shape, y) for _ in range(2))
        layer.train()
        layer.dropout1, layer.dropout2 = (FixedMask(t64(m)) for m in masks)
    ty = t64(y, requires_grad=True)
    blocked = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)   # torch: True = blocked
    out = layer(ty, src_mask=blocked)
    out.backward(t64(g))
    saved = {}
    ours = mt.decoder_layer(y, None, p, mt.causal_mask(5), None, masks,
                            norm_first=norm_first, saved=saved)
    assert max_abs(ours, out) < TOL64
    grad_y, grad_m, grads = mt.decoder_layer_backward(
        y, None, p, g, mt.causal_mask(5), None, masks, norm_first=norm_first,
        saved=saved)
    assert grad_m is None and grads.cross_attn is None and grads.norm3 is None
    assert max_abs(grad_y, ty.grad) < TOL64
    assert max_abs(grads.self_attn.W_O, layer.self_attn.out_proj.weight.grad.T) < TOL64
    assert max_abs(grads.ffn.W_1, layer.linear1.weight.grad.T) < TOL64
    assert max_abs(grads.norm1.gamma, layer.norm1.weight.grad) < TOL64
    assert max_abs(grads.norm2.beta, layer.norm2.bias.grad) < TOL64
    # the recomputing backward (no saved values) gives the same
    again = mt.decoder_layer_backward(y, None, p, g, mt.causal_mask(5), None, masks,
                                      norm_first=norm_first)
    assert max_abs(again[0], grad_y) < 1e-14


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_only_stack_and_its_backward(rng, norm_first):
    """Two decoder-only layers: the stack equals a torch.nn.TransformerEncoder with
    a causal mask; decoder_backward's input gradient equals autograd's."""
    layers = [decoder_only_layer(rng) for _ in range(2)]
    y, g = rng.normal(size=(3, 4, 8)), rng.normal(size=(3, 4, 8))
    ty = t64(y, requires_grad=True)
    blocked = torch.triu(torch.ones(4, 4, dtype=torch.bool), 1)
    out = ty
    for _, enc in layers:
        out = to_torch(enc, norm_first=norm_first, dtype=torch.float64)(out,
                                                                       src_mask=blocked)
    out.backward(t64(g))
    saved = {}
    ours = mt.decoder(y, None, [p for p, _ in layers], mt.causal_mask(4),
                      norm_first=norm_first, saved=saved)
    assert max_abs(ours, out) < TOL64
    grad_y, grad_m, _ = decoder_backward(
        None, [p for p, _ in layers], g, mt.causal_mask(4), norm_first=norm_first,
        saved=saved)
    assert grad_m is None and max_abs(grad_y, ty.grad) < TOL64


def test_memory_none_refused_with_a_cross_attention(rng):
    p = mt.DecoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16)
    with pytest.raises(ValueError, match="pass the encoder's output as memory"):
        mt.decoder_layer(rng.normal(size=(2, 3, 8)), None, p)

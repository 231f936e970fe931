"""Residual dropout (§5.4): where it goes, checked against torch.nn's layers in
training mode with their dropout modules replaced by the same fixed masks; the hand
backward with those masks against torch.autograd (float64, 1e-10); the masks are
inverted dropout as torch's; p_drop = 0 changes nothing, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import FixedMask, max_abs, t64

import mini_transformer as mt
from mini_transformer.dropout import DropoutMasks, dropout_mask
from mini_transformer.tree import tree_leaves
from mini_transformer.torch.convert import to_torch

TOL = 1e-10


def masks(rng, n, shape, p=0.3):
    return [dropout_mask(rng, p, shape, np.zeros(1)) for _ in range(n)]


def test_masks_are_inverted_dropout_as_torch():
    m = dropout_mask(np.random.default_rng(0), 0.25, (200, 100), np.zeros(1))
    theirs = torch.nn.functional.dropout(torch.ones(200, 100, dtype=torch.float64),
                                         0.25, training=True)
    # the same two values: 0 and 1 / (1 - p) = 4/3
    assert set(np.unique(m)) == set(torch.unique(theirs).tolist()) == {0.0, 4 / 3}
    assert abs(np.mean(m == 0) - 0.25) < 0.01
    assert dropout_mask(np.random.default_rng(0), 0.0, (3,), np.zeros(1)) is None


def test_torch_generator_draws_on_the_arrays_device():
    like = torch.zeros(1, dtype=torch.float32)
    m = dropout_mask(torch.Generator().manual_seed(0), 0.5, (4, 5), like)
    assert m.dtype == torch.float32 and m.device == like.device
    assert set(torch.unique(m).tolist()) <= {0.0, 2.0}


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_dropout_equals_torch_nn(rng, norm_first):
    p = mt.EncoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16)
    x, g = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 5, 8))
    m = masks(rng, 2, x.shape)
    layer = to_torch(p, norm_first=norm_first).train()
    layer.dropout1, layer.dropout2 = FixedMask(t64(m[0])), FixedMask(t64(m[1]))
    tx = t64(x, requires_grad=True)
    out = layer(tx)
    out.backward(t64(g))
    assert max_abs(mt.encoder_layer(x, p, None, m, norm_first=norm_first), out) < TOL
    grad_x, grads = mt.encoder_layer_backward(x, p, g, None, m, norm_first=norm_first)
    assert max_abs(grad_x, tx.grad) < TOL
    assert max_abs(grads.ffn.W_1, layer.linear1.weight.grad.T) < TOL
    assert max_abs(grads.attn.W_O, layer.self_attn.out_proj.weight.grad.T) < TOL
    assert max_abs(grads.norm1.gamma, layer.norm1.weight.grad) < TOL
    # the masks matter: without them the output differs
    assert max_abs(mt.encoder_layer(x, p, norm_first=norm_first), out) > 0.1


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_dropout_equals_torch_nn(rng, norm_first):
    p = mt.DecoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16)
    y, memory = rng.normal(size=(2, 4, 8)), rng.normal(size=(2, 6, 8))
    g = rng.normal(size=(2, 4, 8))
    m = masks(rng, 3, y.shape)
    layer = to_torch(p, norm_first=norm_first).train()
    layer.dropout1, layer.dropout2, layer.dropout3 = (FixedMask(t64(a)) for a in m)
    ty, tm = t64(y, requires_grad=True), t64(memory, requires_grad=True)
    causal = torch.triu(torch.ones(4, 4, dtype=torch.bool), 1)  # torch: True = blocked
    out = layer(ty, tm, tgt_mask=causal)
    out.backward(t64(g))
    ours = mt.decoder_layer(y, memory, p, mt.causal_mask(4), None, m,
                            norm_first=norm_first)
    assert max_abs(ours, out) < TOL
    grad_y, grad_m, grads = mt.decoder_layer_backward(
        y, memory, p, g, mt.causal_mask(4), None, m, norm_first=norm_first)
    assert max_abs(grad_y, ty.grad) < TOL and max_abs(grad_m, tm.grad) < TOL
    assert max_abs(grads.ffn.W_2, layer.linear2.weight.grad.T) < TOL
    cross_W_O = layer.multihead_attn.out_proj.weight.grad.T
    assert max_abs(grads.cross_attn.W_O, cross_W_O) < TOL
    assert max_abs(grads.norm3.beta, layer.norm3.bias.grad) < TOL


@pytest.mark.parametrize("norm_first", [False, True])
def test_loss_and_grads_with_dropout_against_autograd(rng, norm_first):
    """The same NumPy seed draws the same masks in ``loss_and_grads`` and in
    ``transformer`` on torch tensors, which autograd differentiates."""
    p = mt.TransformerParams.random(rng, vocab_size=11, d_model=8, n_heads=2, d_ff=16,
                                    n_layers=2)
    src, tgt_in = rng.integers(2, 11, size=(3, 5)), rng.integers(0, 11, size=(3, 4))
    tgt_out = rng.integers(0, 11, size=(3, 4))
    src_mask = mt.padding_mask([5, 3, 4], 5)
    loss, grads = mt.loss_and_grads(p, src, tgt_in, tgt_out, label_smoothing=0.1,
                                    src_mask=src_mask, norm_first=norm_first, p_drop=0.3,
                                    rng=np.random.default_rng(7))
    tp = p.map(lambda a: t64(a, requires_grad=True))
    logits = mt.transformer(torch.as_tensor(src), torch.as_tensor(tgt_in), tp,
                            torch.as_tensor(src_mask), norm_first=norm_first,
                            p_drop=0.3, rng=np.random.default_rng(7))
    want = torch.nn.functional.cross_entropy(logits.reshape(-1, 11),
                                             torch.as_tensor(tgt_out).ravel(),
                                             label_smoothing=0.1)
    want.backward()
    assert abs(loss - want.item()) < TOL
    pairs = list(zip(tree_leaves(grads), tree_leaves(tp), strict=True))
    assert max(max_abs(a, b.grad) for a, b in pairs) < TOL
    # dropout was on: the loss differs from evaluation's
    evaluation, _ = mt.loss_and_grads(p, src, tgt_in, tgt_out, label_smoothing=0.1,
                                      src_mask=src_mask, norm_first=norm_first)
    assert abs(loss - evaluation) > 1e-3


def test_masks_cover_every_site(rng):
    p = mt.TransformerParams.random(rng, vocab_size=11, d_model=8, n_heads=2,
                                    n_layers=2)
    x, y = np.zeros((3, 5, 8)), np.zeros((3, 4, 8))
    m = DropoutMasks.draw(np.random.default_rng(0), 0.1, p, x, y)
    # 2 embeddings + 2 encoder layers x 2 sub-layers + 2 decoder layers x 3 = 12
    shapes = [m.src.shape, m.tgt.shape] \
        + [a.shape for pair in m.encoder for a in pair] \
        + [a.shape for triple in m.decoder for a in triple]
    assert shapes == [x.shape, y.shape] + [x.shape] * 4 + [y.shape] * 6


def test_p_drop_zero_changes_nothing_bit_for_bit(rng):
    p = mt.TransformerParams.random(rng, vocab_size=11, d_model=8, n_heads=2,
                                    n_layers=1)
    src, tgt = rng.integers(2, 11, size=(2, 5)), rng.integers(0, 11, size=(2, 4))
    a = mt.transformer(src, tgt, p)
    b = mt.transformer(src, tgt, p, p_drop=0.0, rng=np.random.default_rng(0))
    assert np.array_equal(a, b)
    la, ga = mt.loss_and_grads(p, src, tgt, tgt)
    lb, gb = mt.loss_and_grads(p, src, tgt, tgt, p_drop=0.0, rng=None)
    assert la == lb and all(np.array_equal(u, v)
                            for u, v in zip(tree_leaves(ga), tree_leaves(gb)))


@pytest.mark.parametrize("kw, match", [
    (dict(p_drop=1.0, rng=np.random.default_rng(0)),
     r"p_drop must be a number in \[0, 1\)"),
    (dict(p_drop=-0.1, rng=np.random.default_rng(0)), "p_drop must be a number"),
    (dict(p_drop=0.1), "p_drop=0.1 needs an rng"),
])
def test_refused(rng, kw, match):
    p = mt.TransformerParams.random(rng, vocab_size=11, d_model=8, n_heads=2,
                                    n_layers=1)
    with pytest.raises(ValueError, match=match):
        mt.transformer(np.array([[2, 3]]), np.array([[0, 4]]), p, **kw)


class CountingGenerator:
    """A NumPy Generator that records each call of ``random`` (size, dtype)."""

    def __init__(self, seed):
        self.rng, self.calls = np.random.default_rng(seed), []

    def random(self, size=None, dtype=np.float64):
        self.calls.append((size, np.dtype(dtype)))
        return self.rng.random(size, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_draw_per_step_at_the_working_precision(rng, dtype):
    p = mt.TransformerParams.random(rng, vocab_size=11, d_model=8, n_heads=2,
                                    n_layers=2).map(lambda a: a.astype(dtype))
    x, y = np.zeros((3, 5, 8), dtype), np.zeros((3, 4, 8), dtype)
    counting = CountingGenerator(0)
    m = DropoutMasks.draw(counting, 0.1, p, x, y)
    # one call for the 12 sites: 120 + 96 + 4 x 120 + 6 x 96 numbers, in x's dtype
    assert counting.calls == [((120 + 96 + 4 * 120 + 6 * 96,), np.dtype(dtype))]
    leaves = [m.src, m.tgt, *(a for pair in m.encoder for a in pair),
              *(a for triple in m.decoder for a in triple)]
    assert {a.dtype for a in leaves} == {np.dtype(dtype)}
    # the same stream in a step of loss_and_grads: one call
    counting = CountingGenerator(0)
    src, tgt = rng.integers(2, 11, size=(3, 5)), rng.integers(0, 11, size=(3, 5))
    mt.loss_and_grads(p, src, tgt[:, :-1], tgt[:, 1:], p_drop=0.1, rng=counting)
    assert len(counting.calls) == 1


def test_float64_masks_are_the_per_site_draws_in_order(rng):
    """In float64 one call gives the numbers that one call per site gave, in the
    order source, target, encoder (attention, FFN), decoder (self, cross, FFN):
    NumPy's Generator fills an array from the same stream of doubles."""
    p = mt.TransformerParams.random(rng, vocab_size=11, d_model=8, n_heads=2,
                                    n_layers=2)
    x, y = np.zeros((3, 5, 8)), np.zeros((3, 4, 8))
    m = DropoutMasks.draw(np.random.default_rng(4), 0.3, p, x, y)
    old = np.random.default_rng(4)
    want = [(old.random(s.shape) >= 0.3) / 0.7
            for s in (x, y, x, x, x, x, y, y, y, y, y, y)]
    got = [m.src, m.tgt, *(a for pair in m.encoder for a in pair),
           *(a for triple in m.decoder for a in triple)]
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


def test_float32_masks_keep_the_rate(rng):
    like = np.zeros(1, np.float32)
    m = dropout_mask(np.random.default_rng(0), 0.1, (400, 500), like)
    assert m.dtype == np.float32 and set(np.unique(m)) == {0.0, np.float32(1 / 0.9)}
    assert abs(np.mean(m == 0) - 0.1) < 0.003   # 200,000 draws: σ ≈ 0.0007

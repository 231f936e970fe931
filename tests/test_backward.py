"""The hand-derived backward passes against independent oracles.

Oracles: ``torch.autograd`` through the package's own forward functions run on
torch tensors (autograd differentiates the forward, it never sees the backward),
``torch.autograd.gradcheck`` (finite differences) on the backward wrapped as a
``torch.autograd.Function``, ``torch.nn.functional.cross_entropy``, the explicit
softmax Jacobian diag(p) − p pᵀ, and small cases derived by hand.
"""

from __future__ import annotations

import dataclasses
import importlib
import tracemalloc

import numpy as np
import pytest
import torch
from helpers import max_abs, t64

import mini_transformer as mt
from mini_transformer.dropout import dropout_mask
from mini_transformer.tree import tree_leaves

TOL = 1e-10        # float64, every backward
TOL_MODEL = 1e-9   # float64, loss_and_grads, every parameter


def leaf(a):
    return t64(a, requires_grad=True)


def grads_of(tensors):
    return [t.grad for t in tensors]


def autograd_params(params):
    """params as float64 torch leaves that require grad (a new leaf per array)."""
    return params.map(leaf)


def worst(ours, torch_params):
    """max |ours − autograd| over every array of two containers of one layout."""
    pairs = list(zip(tree_leaves(ours), tree_leaves(torch_params), strict=True))
    return max(max_abs(a, b.grad) for a, b in pairs)


# --- softmax ----------------------------------------------------------------

def test_softmax_backward_equals_the_explicit_jacobian(rng):
    x, g = rng.normal(size=6), rng.normal(size=6)
    p = mt.softmax(x)
    jacobian = np.diag(p) - np.outer(p, p)           # ∂p_i/∂x_j = p_i (δ_ij − p_j)
    assert max_abs(mt.softmax_backward(p, g), jacobian.T @ g) < 1e-15


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_backward_against_autograd(rng, axis):
    x, g = rng.normal(size=(3, 4, 5)), rng.normal(size=(3, 4, 5))
    tx = leaf(x)
    torch.softmax(tx, dim=axis).backward(t64(g))
    assert max_abs(mt.softmax_backward(mt.softmax(x, axis=axis), g, axis=axis), tx.grad) < TOL


def test_softmax_backward_by_hand():
    # p = (1/2, 1/2), g = (1, 0): Σ p g = 1/2, so p ∘ (g − 1/2) = (1/4, −1/4).
    assert np.array_equal(mt.softmax_backward(np.array([0.5, 0.5]), np.array([1.0, 0.0])),
                          [0.25, -0.25])


# --- scaled dot-product attention ------------------------------------------

def sdpa_cases(rng):
    mask = rng.random((5, 7)) > 0.4
    mask[2] = False                                  # a query with every key masked
    return {
        "plain": ((5, 4), (7, 4), (7, 3), None),
        "batch-heads": ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), None),
        "broadcast": ((2, 1, 5, 4), (3, 7, 4), (1, 3, 7, 6), None),
        "bool-mask": ((2, 5, 4), (2, 7, 4), (2, 7, 3), mask),
        "float-mask": ((2, 5, 4), (7, 4), (7, 3), rng.normal(size=(2, 5, 7))),
        "causal": ((5, 4), (5, 4), (5, 2), mt.causal_mask(5)),
    }


@pytest.mark.parametrize("case", ["plain", "batch-heads", "broadcast", "bool-mask",
                                  "float-mask", "causal"])
def test_attention_backward_against_autograd(rng, case):
    q_shape, k_shape, v_shape, mask = sdpa_cases(rng)[case]
    q, k, v = (rng.normal(size=s) for s in (q_shape, k_shape, v_shape))
    out, _ = mt.scaled_dot_product_attention(q, k, v, mask)
    g = rng.normal(size=out.shape)
    tq, tk, tv = leaf(q), leaf(k), leaf(v)
    tmask = None if mask is None else torch.as_tensor(mask)
    mt.scaled_dot_product_attention(tq, tk, tv, tmask)[0].backward(t64(g))
    ours = mt.scaled_dot_product_attention_backward(q, k, v, g, mask)
    for a, t in zip(ours, (tq, tk, tv), strict=True):
        assert a.shape == tuple(t.shape)
        assert max_abs(a, t.grad) < TOL


def test_attention_backward_fully_masked_row_is_zero_and_finite(rng):
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = np.ones((3, 5), bool)
    mask[1] = False
    g = rng.normal(size=(3, 2))
    grad_q, grad_k, grad_v = mt.scaled_dot_product_attention_backward(q, k, v, g, mask)
    assert np.all(np.isfinite(grad_q)) and np.all(grad_q[1] == 0)
    # Query 1 reaches no key: dropping its gradient changes nothing for k and v.
    g0 = g.copy()
    g0[1] = 0
    _, grad_k0, grad_v0 = mt.scaled_dot_product_attention_backward(q, k, v, g0, mask)
    assert np.array_equal(grad_k, grad_k0) and np.array_equal(grad_v, grad_v0)


def test_attention_backward_one_key_by_hand():
    # One key: the weight is 1 whatever the score, so dQ = dK = 0 and dV = Σ_i dO_i.
    q, k, v = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([[0.5, 0.5]]), np.array([[7.0]])
    g = np.array([[2.0], [5.0]])
    grad_q, grad_k, grad_v = mt.scaled_dot_product_attention_backward(q, k, v, g)
    assert np.all(grad_q == 0) and np.all(grad_k == 0) and np.array_equal(grad_v, [[7.0]])


class HandAttention(torch.autograd.Function):
    """Forward: the package's attention; backward: the package's hand backward."""

    @staticmethod
    def forward(ctx, q, k, v):
        ctx.save_for_backward(q, k, v)
        return mt.scaled_dot_product_attention(q, k, v)[0]

    @staticmethod
    def backward(ctx, grad_output):
        return mt.scaled_dot_product_attention_backward(*ctx.saved_tensors, grad_output)


class HandLayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, gamma, beta):
        ctx.save_for_backward(x, gamma)
        return mt.layer_norm(x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_output):
        x, gamma = ctx.saved_tensors
        return mt.layer_norm_backward(x, gamma, grad_output)


def test_gradcheck_attention_backward(rng):
    inputs = tuple(leaf(rng.normal(size=s)) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3)))
    assert torch.autograd.gradcheck(HandAttention.apply, inputs)


def test_gradcheck_layer_norm_backward(rng):
    inputs = (leaf(rng.normal(size=(3, 6))), leaf(1 + rng.normal(size=6)),
              leaf(rng.normal(size=6)))
    assert torch.autograd.gradcheck(HandLayerNorm.apply, inputs)


# --- layer norm, feed-forward ----------------------------------------------

@pytest.mark.parametrize("shape", [(6,), (4, 6), (2, 3, 6)])
def test_layer_norm_backward_against_autograd(rng, shape):
    x, g = rng.normal(size=shape), rng.normal(size=shape)
    gamma, beta = 1 + rng.normal(size=6) * 0.1, rng.normal(size=6)
    tx, tg, tb = leaf(x), leaf(gamma), leaf(beta)
    torch.nn.functional.layer_norm(tx, (6,), tg, tb, eps=1e-5).backward(t64(g))
    for a, t in zip(mt.layer_norm_backward(x, gamma, g), (tx, tg, tb), strict=True):
        assert max_abs(a, t.grad) < TOL


def test_layer_norm_backward_is_orthogonal_to_shift_and_scale(rng):
    # LN(x + c) = LN(x) and LN(a x) = LN(x) (eps = 0): the gradient w.r.t. x is
    # orthogonal to the all-ones direction and to x − μ.
    x, g = rng.normal(size=8), rng.normal(size=8)
    grad_x, _, _ = mt.layer_norm_backward(x, np.ones(8), g, eps=0.0)
    assert abs(grad_x.sum()) < 1e-14 and abs(grad_x @ (x - x.mean())) < 1e-14


def test_feed_forward_backward_against_autograd(rng):
    p = mt.FeedForwardParams.random(rng, d_model=6, d_ff=10)
    x, g = rng.normal(size=(2, 4, 6)), rng.normal(size=(2, 4, 6))
    tp, tx = autograd_params(p), leaf(x)
    mt.feed_forward(tx, tp).backward(t64(g))
    grad_x, grads = mt.feed_forward_backward(x, p, g)
    assert isinstance(grads, mt.FeedForwardParams)
    assert max_abs(grad_x, tx.grad) < TOL and worst(grads, tp) < TOL


# --- multi-head attention, encoder and decoder layers -----------------------

@pytest.mark.parametrize("cross", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_multi_head_attention_backward_against_autograd(rng, cross, masked):
    p = mt.MultiHeadParams.random(rng, d_model=8, n_heads=2)
    x = rng.normal(size=(3, 5, 8))
    memory = rng.normal(size=(3, 4, 8)) if cross else None
    n_k = 4 if cross else 5
    mask = mt.padding_mask([n_k, 2, 0], n_k) if masked else None   # sequence 3: all masked
    g = rng.normal(size=(3, 5, 8))
    tp, tx = autograd_params(p), leaf(x)
    tm = None if memory is None else leaf(memory)
    tmask = None if mask is None else torch.as_tensor(mask)
    mt.multi_head_attention(tx, tp, tmask, tm)[0].backward(t64(g))
    grad_x, grad_m, grads = mt.multi_head_attention_backward(x, p, g, mask, memory)
    assert isinstance(grads, mt.MultiHeadParams)
    assert max_abs(grad_x, tx.grad) < TOL and worst(grads, tp) < TOL
    if cross:
        assert max_abs(grad_m, tm.grad) < TOL
    else:
        assert grad_m is None


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_backward_against_autograd(rng, norm_first):
    p = mt.EncoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16)
    x, g = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 5, 8))
    mask = mt.padding_mask([5, 3], 5)
    tp, tx = autograd_params(p), leaf(x)
    mt.encoder_layer(tx, tp, torch.as_tensor(mask), norm_first=norm_first).backward(t64(g))
    grad_x, grads = mt.encoder_layer_backward(x, p, g, mask, norm_first=norm_first)
    assert isinstance(grads, mt.EncoderLayerParams) and grads.eps == p.eps
    assert max_abs(grad_x, tx.grad) < TOL and worst(grads, tp) < TOL


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_backward_against_autograd(rng, norm_first):
    p = mt.DecoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16)
    y, memory, g = rng.normal(size=(2, 4, 8)), rng.normal(size=(2, 6, 8)), rng.normal(size=(2, 4, 8))
    self_mask = mt.causal_mask(4) & mt.padding_mask([4, 2], 4)
    memory_mask = mt.padding_mask([6, 3], 6)
    tp, ty, tm = autograd_params(p), leaf(y), leaf(memory)
    mt.decoder_layer(ty, tm, tp, torch.as_tensor(self_mask), torch.as_tensor(memory_mask),
                     norm_first=norm_first).backward(t64(g))
    grad_y, grad_m, grads = mt.decoder_layer_backward(y, memory, p, g, self_mask, memory_mask,
                                                      norm_first=norm_first)
    assert isinstance(grads, mt.DecoderLayerParams)
    assert max_abs(grad_y, ty.grad) < TOL and max_abs(grad_m, tm.grad) < TOL
    assert worst(grads, tp) < TOL


# --- cross-entropy ------------------------------------------------------------

@pytest.mark.parametrize("label_smoothing", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("ignore_index", [None, 0, -100])
def test_cross_entropy_equals_torch(rng, label_smoothing, ignore_index):
    logits = rng.normal(size=(3, 5, 7)) * 3
    targets = rng.integers(0, 7, size=(3, 5))
    if ignore_index == -100:
        targets[0, 1] = targets[2, 4] = -100
    z = leaf(logits)
    kw = dict(label_smoothing=label_smoothing,
              ignore_index=-100 if ignore_index is None else ignore_index)
    want = torch.nn.functional.cross_entropy(z.reshape(-1, 7), torch.as_tensor(targets).ravel(),
                                             **kw)
    want.backward()
    got = mt.cross_entropy(logits, targets, label_smoothing, ignore_index)
    assert abs(got - want.item()) < TOL
    grad = mt.cross_entropy_backward(logits, targets, label_smoothing, ignore_index)
    assert max_abs(grad, z.grad) < TOL
    # the training step's form: both from one log-softmax
    loss, grad = mt.cross_entropy_with_grad(logits, targets, label_smoothing, ignore_index)
    assert abs(loss - want.item()) < TOL
    assert grad.shape == logits.shape and max_abs(grad, z.grad) < TOL


def test_cross_entropy_by_hand():
    # Two classes, logits (0, 0): p = (1/2, 1/2). Target 0, ε = 0.1: q = (0.95, 0.05),
    # loss = −(0.95 + 0.05) log(1/2) = log 2, gradient p − q = (−0.45, 0.45).
    logits, targets = np.zeros((1, 2)), np.array([0])
    assert abs(mt.cross_entropy(logits, targets, 0.1) - np.log(2)) < 1e-15
    assert np.allclose(mt.cross_entropy_backward(logits, targets, 0.1), [[-0.45, 0.45]],
                       atol=1e-15, rtol=0)
    loss, grad = mt.cross_entropy_with_grad(logits, targets, 0.1)
    assert abs(loss - np.log(2)) < 1e-15
    np.testing.assert_allclose(grad, [[-0.45, 0.45]], atol=1e-15, rtol=0)


def test_cross_entropy_on_torch_tensors(rng):
    logits, targets = rng.normal(size=(4, 6)), rng.integers(0, 6, size=4)
    z = leaf(logits)
    loss = mt.cross_entropy(z, torch.as_tensor(targets), 0.1)
    loss.backward()          # the forward is differentiable by autograd too
    assert max_abs(mt.cross_entropy_backward(logits, targets, 0.1), z.grad) < TOL


@pytest.mark.parametrize("call, match", [
    (lambda z, t: mt.cross_entropy(z, t + 7), r"targets must lie in \[0, vocab_size=7\)"),
    (lambda z, t: mt.cross_entropy(z, t[:2]), "targets must have the shape of logits"),
    (lambda z, t: mt.cross_entropy(z, t * 1.0), "targets must be integer token ids"),
    (lambda z, t: mt.cross_entropy(z, t, label_smoothing=1.5), "label_smoothing must lie"),
    (lambda z, t: mt.cross_entropy(z, t * 0 - 1, ignore_index=-1), "every target equals"),
    (lambda z, t: mt.cross_entropy_backward(z, t - 9), "targets must lie"),
])
def test_cross_entropy_refuses(rng, call, match):
    with pytest.raises(ValueError, match=match):
        call(rng.normal(size=(3, 7)), np.array([1, 2, 3]))


# --- the whole model ------------------------------------------------------------

def model_case(rng, final_norms):
    p = mt.TransformerParams.random(rng, vocab_size=11, d_model=8, n_heads=2, d_ff=16,
                                    n_layers=2)
    if final_norms:
        p = dataclasses.replace(p, **{f"{s}_norm": mt.LayerNormParams(
            1.0 + 0.1 * rng.normal(size=8), 0.1 * rng.normal(size=8))
            for s in ("encoder", "decoder")})
    src = rng.integers(2, 11, size=(3, 5))
    tgt_in = rng.integers(0, 11, size=(3, 4))
    tgt_out = rng.integers(0, 11, size=(3, 4))
    return p, src, tgt_in, tgt_out


@pytest.mark.parametrize("final_norms", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("smoothing, ignore, masked", [(0.0, None, False), (0.1, 1, True)])
def test_loss_and_grads_against_autograd(rng, final_norms, norm_first, smoothing, ignore,
                                         masked):
    p, src, tgt_in, tgt_out = model_case(rng, final_norms)
    if ignore is not None:
        tgt_out[1, 2:] = ignore                      # padded target positions
    src_mask = mt.padding_mask([5, 3, 4], 5) if masked else None
    loss, grads = mt.loss_and_grads(p, src, tgt_in, tgt_out, label_smoothing=smoothing,
                                    ignore_index=ignore, src_mask=src_mask,
                                    norm_first=norm_first)
    tp = autograd_params(p)
    logits = mt.transformer(torch.as_tensor(src), torch.as_tensor(tgt_in), tp,
                            None if src_mask is None else torch.as_tensor(src_mask),
                            norm_first=norm_first)
    want = torch.nn.functional.cross_entropy(
        logits.reshape(-1, 11), torch.as_tensor(tgt_out).ravel(), label_smoothing=smoothing,
        ignore_index=-100 if ignore is None else ignore)
    want.backward()
    assert isinstance(grads, mt.TransformerParams)
    assert len(tree_leaves(grads)) == len(tree_leaves(p))
    assert abs(loss - want.item()) < TOL_MODEL
    assert worst(grads, tp) < TOL_MODEL


def test_tied_embedding_gets_the_sum_of_its_three_uses(rng):
    # Untie by hand: three copies of E as separate leaves, used once each.
    p, src, tgt_in, tgt_out = model_case(rng, False)
    _, grads = mt.loss_and_grads(p, src, tgt_in, tgt_out)
    tp = autograd_params(p)
    E_src, E_tgt, E_out = (leaf(p.embedding) for _ in range(3))
    d = 8 ** 0.5
    pe = lambda n: t64(mt.positional_encoding(n, 8))            # noqa: E731
    x = E_src[torch.as_tensor(src)] * d + pe(5)
    y = E_tgt[torch.as_tensor(tgt_in)] * d + pe(4)
    h = mt.encoder_decoder(x, y, tp, tgt_mask=torch.as_tensor(mt.causal_mask(4)))
    torch.nn.functional.cross_entropy((h @ E_out.T).reshape(-1, 11),
                                      torch.as_tensor(tgt_out).ravel()).backward()
    uses = [E_src.grad, E_tgt.grad, E_out.grad]
    assert all(float(u.abs().max()) > 1e-3 for u in uses)      # each use contributes
    assert max_abs(grads.embedding, sum(uses)) < TOL_MODEL


def test_loss_is_the_forward_models_cross_entropy(rng):
    p, src, tgt_in, tgt_out = model_case(rng, False)
    loss, _ = mt.loss_and_grads(p, src, tgt_in, tgt_out, label_smoothing=0.1)
    assert abs(loss - mt.cross_entropy(mt.transformer(src, tgt_in, p), tgt_out, 0.1)) < 1e-14


# --- float32 on torch -----------------------------------------------------------

def test_float32_backward_on_torch_within_dtype_tolerance(rng):
    """The same backward code on float32 tensors, against float32 autograd: the error is
    a few float32 ulps of the gradient's size (≤ 1e-4 relative)."""
    p = mt.EncoderLayerParams.random(rng, d_model=16, n_heads=4, d_ff=32)
    x, g = rng.normal(size=(2, 6, 16)), rng.normal(size=(2, 6, 16))
    f32 = lambda a: torch.tensor(a, dtype=torch.float32)        # noqa: E731
    p32 = p.map(f32)
    grad_x, grads = mt.encoder_layer_backward(f32(x), p32, f32(g))
    assert grad_x.dtype == torch.float32
    tp = p.map(lambda a: f32(a).requires_grad_())
    tx = f32(x).requires_grad_()
    mt.encoder_layer(tx, tp).backward(f32(g))
    for ours, t in zip([grad_x, *tree_leaves(grads)], [tx, *tree_leaves(tp)], strict=True):
        scale = float(t.grad.abs().max())
        assert max_abs(ours, t.grad) <= 1e-4 * scale + 1e-6


# --- tiled backward -------------------------------------------------------------

@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mask_kind", [None, "bool", "float"])
@pytest.mark.parametrize("block_size", [(3, 4), (512, 512)])
def test_tiled_backward_equals_reference_backward(rng, causal, mask_kind, block_size):
    q, k, v = rng.normal(size=(2, 1, 13, 4)), rng.normal(size=(2, 3, 17, 4)), \
        rng.normal(size=(1, 3, 17, 5))
    g = rng.normal(size=(2, 3, 13, 5))
    mask = None
    if mask_kind == "bool":
        mask = rng.random((13, 17)) > 0.5
        mask[2] = False                              # a query with every key masked
    elif mask_kind == "float":
        mask = rng.normal(size=(3, 13, 17))
    out, lse = mt.tiled_attention(q, k, v, mask, causal=causal, block_size=block_size,
                                  return_lse=True)
    full = mask
    if causal:
        c = mt.causal_mask(13, 17)
        full = c if mask is None else (c & mask if mask.dtype == bool
                                       else np.where(c, mask, -np.inf))
    want = mt.scaled_dot_product_attention_backward(q, k, v, g, full)
    got = mt.tiled_attention_backward(q, k, v, out, lse, g, mask, causal=causal,
                                      block_size=block_size, threads=2)
    for a, b in zip(got, want, strict=True):
        assert a.shape == b.shape and max_abs(a, b) < TOL


def test_tiled_lse_is_the_row_log_sum_exp(rng):
    q, k, v = rng.normal(size=(6, 4)), rng.normal(size=(9, 4)), rng.normal(size=(9, 2))
    mask = np.ones((6, 9), bool)
    mask[4] = False
    _, lse = mt.tiled_attention(q, k, v, mask, block_size=(2, 4), return_lse=True)
    scores = np.where(mask, q @ k.T / 2.0, -np.inf)
    want = mt.log_sum_exp(scores, axis=-1)
    assert lse[4] == -np.inf and max_abs(lse[[0, 1, 2, 3, 5]], want[[0, 1, 2, 3, 5]]) < 1e-13


def test_tiled_backward_memory_grows_linearly_not_quadratically():
    """Peak NumPy memory of the tiled backward, float32: O(T), far below T×T."""
    rng = np.random.default_rng(0)
    peaks = {}
    for T in (4096, 16384):
        q, k, v, g = (rng.standard_normal((T, 16)).astype(np.float32) for _ in range(4))
        out, lse = mt.tiled_attention(q, k, v, causal=True, return_lse=True)
        tracemalloc.start()
        try:
            mt.tiled_attention_backward(q, k, v, out, lse, g, causal=True)
            peaks[T] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peaks[16384] < 64 * 2**20                 # T×T float32 would be 1 GiB
    assert peaks[16384] < 6 * peaks[4096]            # ×4 in T: linear ~4×, quadratic 16×


def test_tiled_backward_refuses_torch_and_wrong_shapes(rng):
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    out, lse = mt.tiled_attention(q, k, v, return_lse=True)
    g = rng.normal(size=(3, 2))
    with pytest.raises(ValueError, match="NumPy-only"):
        mt.tiled_attention_backward(q, k, v, out, lse, torch.as_tensor(g))
    with pytest.raises(ValueError, match=r"lse must have shape \(3,\)"):
        mt.tiled_attention_backward(q, k, v, out, lse[:2], g)
    with pytest.raises(ValueError, match="grad_output must have shape"):
        mt.tiled_attention_backward(q, k, v, out, lse, g.T)


# --- refused gradients of the wrong shape ---------------------------------------

def test_backward_refuses_grad_output_of_the_wrong_shape(rng):
    x = rng.normal(size=(2, 3, 8))
    mha = mt.MultiHeadParams.random(rng, d_model=8, n_heads=2)
    ffn = mt.FeedForwardParams.random(rng, d_model=8)
    with pytest.raises(ValueError, match=r"grad_output must have the output's shape \(2, 3, 8\)"):
        mt.multi_head_attention_backward(x, mha, x[:, :2])
    with pytest.raises(ValueError, match="grad_output must have the output's shape"):
        mt.feed_forward_backward(x, ffn, x[..., :4])
    with pytest.raises(ValueError, match="grad_output must have x's shape"):
        mt.layer_norm_backward(x, np.ones(8), x[0])
    with pytest.raises(ValueError, match="grad_output must have the output's shape"):
        mt.scaled_dot_product_attention_backward(x, x, x, x[..., :2])
    with pytest.raises(ValueError, match="same shape"):
        mt.softmax_backward(x, x[0])


# --- the training path: the forward's saved values -------------------------------

def module(name):
    return importlib.import_module(f"mini_transformer.{name}")


def _no_forward(*args, **kwargs):
    raise AssertionError("the backward ran a forward although it had the saved values")


def _same_tree(a, b, tol):
    pairs = list(zip(tree_leaves(a), tree_leaves(b), strict=True))
    return max(max_abs(u, v) for u, v in pairs) <= tol


@pytest.mark.parametrize("norm_first", [False, True])
def test_saved_and_recomputing_backward_agree(rng, norm_first, monkeypatch):
    """encoder/decoder layers: the backward reading the forward's saved values gives
    what the backward that recomputes them gives, and runs no forward; the saving
    forward's output is the readable layer's."""
    enc = mt.EncoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16)
    dec = mt.DecoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16)
    x, y = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 4, 8))
    gx, gy = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 4, 8))
    src_mask, causal = mt.padding_mask([5, 3], 5), mt.causal_mask(4)
    saved = {}
    out = mt.encoder_layer(x, enc, src_mask, norm_first=norm_first, saved=saved)
    assert max_abs(out, mt.encoder_layer(x, enc, src_mask, norm_first=norm_first)) < 1e-14
    b = mt.encoder_layer_backward(x, enc, gx, src_mask, norm_first=norm_first)
    with monkeypatch.context() as m:
        for name in ("multi_head_attention", "feed_forward"):
            m.setattr(module("encoder"), name, _no_forward)
            m.setattr(module("multihead"), name, _no_forward, raising=False)
        a = mt.encoder_layer_backward(x, enc, gx, src_mask, norm_first=norm_first,
                                      saved=saved)
    assert max_abs(a[0], b[0]) < 1e-14 and _same_tree(a[1], b[1], 1e-14)
    saved = {}
    out = mt.decoder_layer(y, x, dec, causal, src_mask, norm_first=norm_first, saved=saved)
    want = mt.decoder_layer(y, x, dec, causal, src_mask, norm_first=norm_first)
    assert max_abs(out, want) < 1e-14
    b = mt.decoder_layer_backward(y, x, dec, gy, causal, src_mask, norm_first=norm_first)
    with monkeypatch.context() as m:
        for name in ("multi_head_attention", "feed_forward"):
            m.setattr(module("decoder"), name, _no_forward)
            m.setattr(module("multihead"), name, _no_forward, raising=False)
        a = mt.decoder_layer_backward(y, x, dec, gy, causal, src_mask,
                                      norm_first=norm_first, saved=saved)
    assert max_abs(a[0], b[0]) < 1e-14 and max_abs(a[1], b[1]) < 1e-14
    assert _same_tree(a[2], b[2], 1e-14)


@pytest.mark.parametrize("norm_first", [False, True])
def test_saved_backward_against_autograd(rng, norm_first):
    """The saved-values backward of a decoder layer, with dropout, on the saving
    forward's values, against autograd through the readable forward (float64)."""
    p = mt.DecoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16)
    y, memory, g = rng.normal(size=(2, 4, 8)), rng.normal(size=(2, 6, 8)), \
        rng.normal(size=(2, 4, 8))
    masks = tuple(dropout_mask(rng, 0.3, y.shape, y) for _ in range(3))
    self_mask, memory_mask = mt.causal_mask(4), mt.padding_mask([6, 3], 6)
    saved = {}
    mt.decoder_layer(y, memory, p, self_mask, memory_mask, masks, norm_first=norm_first,
                     saved=saved)
    grad_y, grad_m, grads = mt.decoder_layer_backward(
        y, memory, p, g, self_mask, memory_mask, masks, norm_first=norm_first,
        saved=saved)
    tp, ty, tm = autograd_params(p), leaf(y), leaf(memory)
    mt.decoder_layer(ty, tm, tp, torch.as_tensor(self_mask),
                     torch.as_tensor(memory_mask), tuple(t64(m) for m in masks),
                     norm_first=norm_first).backward(t64(g))
    assert max_abs(grad_y, ty.grad) < TOL and max_abs(grad_m, tm.grad) < TOL
    assert worst(grads, tp) < TOL


def test_saved_sub_layers_against_autograd(rng):
    """multi-head attention and the FFN: backward from the forward's saved dict."""
    p, f = mt.MultiHeadParams.random(rng, d_model=8, n_heads=2), \
        mt.FeedForwardParams.random(rng, d_model=8, d_ff=12)
    x, g = rng.normal(size=(3, 5, 8)), rng.normal(size=(3, 5, 8))
    saved_attn, saved_ffn = {}, {}
    mt.multi_head_attention(x, p, mt.causal_mask(5), saved=saved_attn)
    mt.feed_forward(x, f, saved=saved_ffn)
    assert set(saved_attn) == {"q", "k", "v", "weights", "concat"}
    assert set(saved_ffn) == {"hidden"}
    tp, tf, tx, tx2 = autograd_params(p), autograd_params(f), leaf(x), leaf(x)
    causal = torch.as_tensor(mt.causal_mask(5))
    mt.multi_head_attention(tx, tp, causal)[0].backward(t64(g))
    mt.feed_forward(tx2, tf).backward(t64(g))
    grad_x, _, grads = mt.multi_head_attention_backward(x, p, g, mt.causal_mask(5),
                                                        saved=saved_attn)
    assert max_abs(grad_x, tx.grad) < TOL and worst(grads, tp) < TOL
    grad_x, grads = mt.feed_forward_backward(x, f, g, saved=saved_ffn)
    assert max_abs(grad_x, tx2.grad) < TOL and worst(grads, tf) < TOL


def test_training_step_stays_float32(rng):
    """float32 params and masks: the loss, every gradient and every saved value are
    float32 (NumPy 2 would promote on a float64 array or NumPy scalar)."""
    p, src, tgt_in, tgt_out = model_case(rng, True)
    p32 = p.map(lambda a: a.astype(np.float32))
    loss, grads = mt.loss_and_grads(p32, src, tgt_in, tgt_out, label_smoothing=0.1,
                                    ignore_index=1, src_mask=mt.padding_mask([5, 3, 4], 5), p_drop=0.1,
                                    rng=np.random.default_rng(0))
    assert np.asarray(loss).dtype == np.float32
    assert {a.dtype for a in tree_leaves(grads)} == {np.dtype(np.float32)}
    x = p32.embedding[src]
    saved = {}
    mt.encoder_layer(x, p32.encoder_layers[0], saved=saved)

    def leaves(d):
        for v in d.values():
            yield from leaves(v) if isinstance(v, dict) else [v]

    assert {a.dtype for a in leaves(saved)} == {np.dtype(np.float32)}


def test_saved_backward_on_torch_tensors(rng):
    """The same saving forward and backward run on torch tensors (the Array API)."""
    p = mt.EncoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16)
    x, g = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 5, 8))
    tp = p.map(t64)
    saved = {}
    mt.encoder_layer(t64(x), tp, saved=saved)
    grad_x, grads = mt.encoder_layer_backward(t64(x), tp, t64(g), saved=saved)
    want_x, want = mt.encoder_layer_backward(x, p, g)
    assert isinstance(grad_x, torch.Tensor)
    assert max_abs(grad_x, want_x) < 1e-13 and _same_tree(grads, want, 1e-13)

"""multi_head_attention: hand-derived heads, and torch.nn.MultiheadAttention as oracle.

torch.nn.MultiheadAttention's bool masks have the opposite polarity to ours:
its ``key_padding_mask`` and ``attn_mask`` are True where a key is *ignored*,
so the oracle gets ``~mask``. A 3-D ``attn_mask`` there is (batch * n_heads,
n_q, n_k), batch-major, which checks that our head axis is inserted right.
"""

import dataclasses
import math

import numpy as np
import pytest
import torch

from helpers import TOL32, TOL64, max_abs, t64
from mini_transformer import (MultiHeadParams, causal_mask, multi_head_attention,
                              padding_mask)
from mini_transformer.torch.convert import multi_head_from_torch, to_torch

E = math.e


def two_head_params(b_O=(0.0, 0.0)):
    """d_model = 2, two heads with d_k = 1: head 0 reads feature 0, head 1 feature 1.

    W_Q_i = W_K_i = W_V_i = e_i (a column), W_O = I, no biases except b_O.
    """
    W = np.array([[[1.0], [0.0]], [[0.0], [1.0]]])  # (h=2, d_model=2, d_k=1)
    z = np.zeros((2, 1))
    return MultiHeadParams(W_Q=W, W_K=W.copy(), W_V=W.copy(), W_O=np.eye(2),
                           b_Q=z, b_K=z.copy(), b_V=z.copy(), b_O=np.array(b_O))


# --- hand-derived values -----------------------------------------------------

def test_two_heads_by_hand():
    # X = [[1, 0], [0, 1]].  Head 0 sees feature 0: q = k = v = [1, 0] (d_k = 1,
    # √d_k = 1); scores q kᵀ = [[1, 0], [0, 0]];
    # weights [[e, 1]/(e+1), [1/2, 1/2]]; output [e/(e+1), 1/2].
    # Head 1 sees feature 1: q = k = v = [0, 1]; scores [[0, 0], [0, 1]];
    # weights [[1/2, 1/2], [1, e]/(1+e)]; output [1/2, e/(1+e)].
    # Concat(head_0, head_1) W_O with W_O = I, plus b_O = [10, 20].
    X = np.eye(2)
    out, w = multi_head_attention(X, two_head_params(b_O=(10.0, 20.0)))
    s = E / (E + 1)
    assert w.shape == (2, 2, 2)  # (n_heads, n_q, n_k)
    np.testing.assert_allclose(w[0], [[s, 1 - s], [0.5, 0.5]], rtol=1e-15)
    np.testing.assert_allclose(w[1], [[0.5, 0.5], [1 - s, s]], rtol=1e-15)
    np.testing.assert_allclose(out, [[s + 10, 0.5 + 20], [0.5 + 10, s + 20]], rtol=1e-15)


def test_cross_attention_by_hand():
    # one query x = [1, 0]; memory rows [1, 0], [0, 1], [1, 1]
    # head 0: q = 1, keys = values = [1, 0, 1]; scores [1, 0, 1]
    #   weights [e, 1, e] / (2e + 1); output 2e / (2e + 1)
    # head 1: q = 0, so all scores are 0: weights 1/3 each; values [0, 1, 1] -> 2/3
    x = np.array([[1.0, 0.0]])
    memory = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    out, w = multi_head_attention(x, two_head_params(), memory=memory)
    assert w.shape == (2, 1, 3)
    np.testing.assert_allclose(w[0], np.array([[E, 1, E]]) / (2 * E + 1), rtol=1e-15)
    np.testing.assert_allclose(w[1], [[1 / 3] * 3], rtol=1e-15)
    np.testing.assert_allclose(out, [[2 * E / (2 * E + 1), 2 / 3]], rtol=1e-15)


def test_chai_piyo_as_one_head():
    # Seed 000's example as a single head with W_O = [I_2 0]: output [Z, 0, 0],
    # Z = [[2a, 2b], [2b, 2a]], a = 1/(1 + e^{2√2}), b = 1 - a (see test_attention)
    X = np.array([[1.0, 0, 1, 0], [0, 1, 0, 1]])
    W_Q = np.array([[[1.0, 0], [0, 1], [1, 0], [0, 1]]])
    W_K = np.array([[[0.0, 1], [1, 0], [0, 1], [1, 0]]])
    z = np.zeros((1, 2))
    p = MultiHeadParams(W_Q=W_Q, W_K=W_K, W_V=W_Q.copy(), W_O=np.eye(2, 4),
                        b_Q=z, b_K=z, b_V=z, b_O=np.zeros(4))
    a = 1 / (1 + math.exp(2 * math.sqrt(2)))
    b = 1 - a
    out, w = multi_head_attention(X, p)
    np.testing.assert_allclose(w, [[[a, b], [b, a]]], rtol=1e-14)
    np.testing.assert_allclose(out, [[2 * a, 2 * b, 0, 0], [2 * b, 2 * a, 0, 0]],
                               rtol=1e-14, atol=1e-300)


def test_padding_mask_by_hand():
    # two sequences of the two-head example; the second has length 1, so both
    # its queries see only key 0 = [1, 0]: head 0 value 1, head 1 value 0
    X = np.stack([np.eye(2), np.eye(2)])
    out, w = multi_head_attention(X, two_head_params(), mask=padding_mask([2, 1], 2))
    np.testing.assert_allclose(out[1], [[1, 0], [1, 0]], rtol=1e-15)
    np.testing.assert_array_equal(w[1, :, :, 1], 0)
    s = E / (E + 1)
    np.testing.assert_allclose(out[0], [[s, 0.5], [0.5, s]], rtol=1e-15)


# --- masks and shapes --------------------------------------------------------

def test_every_mask_layout_gives_the_same_answer(rng):
    p = MultiHeadParams.random(rng, d_model=8, n_heads=2)
    x = rng.normal(size=(2, 3, 8))
    key = np.array([True, True, False])
    full = np.broadcast_to(key, (2, 3, 3))
    expected = multi_head_attention(x, p, mask=full)
    for mask in (key, key[None, :], key[None, None, :], np.array([[1, 1, 0]]) == 1):
        out, w = multi_head_attention(x, p, mask=mask)
        np.testing.assert_array_equal(out, expected[0])
        np.testing.assert_array_equal(w, expected[1])


def test_fully_masked_sequence_gives_bias_only_and_zero_weights(rng):
    # every key masked: each head outputs 0, so MultiHead = 0 W_O + b_O
    p = MultiHeadParams.random(rng, d_model=6, n_heads=3)
    x = rng.normal(size=(2, 4, 6))
    out, w = multi_head_attention(x, p, mask=padding_mask([0, 4], 4))
    np.testing.assert_array_equal(w[0], 0)
    np.testing.assert_allclose(out[0], np.broadcast_to(p.b_O, (4, 6)), rtol=1e-15)
    np.testing.assert_allclose(w[1].sum(-1), 1, rtol=1e-14)


def test_leading_axes_broadcast(rng):
    p = MultiHeadParams.random(rng, d_model=4, n_heads=2)
    x = rng.normal(size=(2, 3, 5, 4))
    out, w = multi_head_attention(x, p)
    assert out.shape == (2, 3, 5, 4) and w.shape == (2, 3, 2, 5, 5)


def test_without_biases_by_construction(rng):
    p = MultiHeadParams.random(rng, d_model=4, n_heads=2, bias=False)
    for b in (p.b_Q, p.b_K, p.b_V, p.b_O):
        np.testing.assert_array_equal(b, 0)
    # no bias: MultiHead(0) = 0 (every head attends uniformly to zero values)
    out, _ = multi_head_attention(np.zeros((3, 4)), p)
    np.testing.assert_array_equal(out, 0)


# --- oracle: torch.nn.MultiheadAttention ---------------------------------------

CASES = [  # d_model, n_heads, batch, n_q, n_k (n_k != n_q: cross-attention only)
    (8, 2, 2, 3, 3),
    (12, 3, 1, 4, 6),
    (6, 1, 3, 2, 5),
    (16, 4, 2, 5, 5),
]
MASKS = [None, "padding", "causal", "padding+causal", "per-batch", "float"]


def _masks(kind, batch, n_q, n_k, n_heads, rng):
    """(our mask, torch kwargs) for one kind; no query is left without keys."""
    lengths = rng.integers(1, n_k + 1, size=batch)
    lengths[0] = n_k
    pad = padding_mask(lengths, n_k)                    # (batch, 1, n_k), True = attend
    causal = causal_mask(n_q, n_k)                      # (n_q, n_k)
    if kind is None:
        return None, {}
    if kind == "padding":
        return pad, {"key_padding_mask": torch.as_tensor(~pad[:, 0])}
    if kind == "causal":
        return causal, {"attn_mask": torch.as_tensor(~causal)}
    if kind == "padding+causal":
        return pad & causal, {"key_padding_mask": torch.as_tensor(~pad[:, 0]),
                              "attn_mask": torch.as_tensor(~causal)}
    if kind == "per-batch":  # (batch, n_q, n_k); torch wants (batch * n_heads, n_q, n_k)
        m = rng.random((batch, n_q, n_k)) < 0.5
        m[..., 0] = True
        rep = np.repeat(m, n_heads, axis=0)
        return m, {"attn_mask": torch.as_tensor(~rep)}
    f = rng.normal(size=(n_q, n_k))                     # float, added to the scores
    return f, {"attn_mask": t64(f)}


@pytest.mark.parametrize("d_model,n_heads,batch,n_q,n_k", CASES)
@pytest.mark.parametrize("kind", MASKS)
def test_matches_torch_multihead_attention(d_model, n_heads, batch, n_q, n_k, kind, rng):
    p = MultiHeadParams.random(rng, d_model=d_model, n_heads=n_heads)
    x = rng.normal(size=(batch, n_q, d_model))
    memory = rng.normal(size=(batch, n_k, d_model)) if n_k != n_q else None
    mask, kw = _masks(kind, batch, n_q, n_k, n_heads, rng)
    kv = x if memory is None else memory

    mha = to_torch(p, dtype=torch.float64)
    expected, expected_w = mha(t64(x), t64(kv), t64(kv), need_weights=True,
                               average_attn_weights=False, **kw)
    out, w = multi_head_attention(x, p, mask=mask, memory=memory)
    assert out.shape == (batch, n_q, d_model) and w.shape == (batch, n_heads, n_q, n_k)
    assert max_abs(out, expected) < TOL64
    assert max_abs(w, expected_w) < TOL64

    # float32: our NumPy path and the package on torch tensors, against torch float32
    mha32 = to_torch(p, dtype=torch.float32)
    kw32 = {k: (v.float() if v.is_floating_point() else v) for k, v in kw.items()}
    x32, kv32 = torch.tensor(x, dtype=torch.float32), torch.tensor(kv, dtype=torch.float32)
    expected32, _ = mha32(x32, kv32, kv32, need_weights=False, **kw32)
    p32 = p.map(lambda a: a.astype(np.float32))
    mem32 = None if memory is None else memory.astype(np.float32)
    out32, _ = multi_head_attention(x.astype(np.float32), p32, mask=mask, memory=mem32)
    assert out32.dtype == np.float32
    assert max_abs(out32, expected32) < TOL32
    pt = p.map(lambda a: torch.tensor(a, dtype=torch.float32))
    mask_t = None if mask is None else torch.as_tensor(mask)
    out_t, _ = multi_head_attention(x32, pt, mask=mask_t, memory=None if memory is None
                                    else kv32)
    assert max_abs(out_t, expected32) < TOL32


@pytest.mark.parametrize("d_model,n_heads", [(8, 2), (6, 3)])
def test_weights_from_a_torch_module(d_model, n_heads, rng):
    # torch's own initialisation (biases made non-zero), read by from_torch
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(d_model, n_heads, batch_first=True,
                                      dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_bias.normal_()
        mha.out_proj.bias.normal_()
    p = multi_head_from_torch(mha)
    x = rng.normal(size=(2, 4, d_model))
    memory = rng.normal(size=(2, 7, d_model))
    kpm = np.zeros((2, 7), bool)
    kpm[1, 5:] = True  # torch: True = ignore
    expected, _ = mha(t64(x), t64(memory), t64(memory), key_padding_mask=torch.as_tensor(kpm))
    out, _ = multi_head_attention(x, p, memory=memory, mask=~kpm[:, None, :])
    assert max_abs(out, expected) < TOL64


def test_head_dimensions_may_differ_from_d_model_over_h(rng):
    # the paper's d_k = d_v = d_model / h is a choice, not a rule: 2 heads of d_k = 3,
    # d_v = 5 on d_model = 4, checked head by head against a loop
    h, d, d_k, d_v = 2, 4, 3, 5
    p = MultiHeadParams(W_Q=rng.normal(size=(h, d, d_k)), W_K=rng.normal(size=(h, d, d_k)),
                        W_V=rng.normal(size=(h, d, d_v)), W_O=rng.normal(size=(h * d_v, d)),
                        b_Q=np.zeros((h, d_k)), b_K=np.zeros((h, d_k)),
                        b_V=np.zeros((h, d_v)), b_O=np.zeros(d))
    x = rng.normal(size=(3, d))
    out, w = multi_head_attention(x, p)
    heads = []
    for i in range(h):  # the loop: softmax(Q Kᵀ / √d_k) V, head by head
        Q, K, V = x @ p.W_Q[i], x @ p.W_K[i], x @ p.W_V[i]
        S = Q @ K.T / math.sqrt(d_k)
        A = np.exp(S - S.max(-1, keepdims=True))
        A /= A.sum(-1, keepdims=True)
        np.testing.assert_allclose(w[i], A, rtol=1e-13)
        heads.append(A @ V)
    np.testing.assert_allclose(out, np.concatenate(heads, -1) @ p.W_O, rtol=1e-12)
    # ... and torch.nn.MultiheadAttention cannot hold it
    with pytest.raises(ValueError, match="d_k = d_v = d_model / n_heads"):
        to_torch(p)
    bad = dataclasses.replace(p, W_O=rng.normal(size=(h * d_v + 1, d)))
    with pytest.raises(ValueError, match="W_O has shape"):
        multi_head_attention(x, bad)

"""scaled_dot_product_attention, causal_mask, padding_mask, apply_mask.

Oracle: torch.nn.functional.scaled_dot_product_attention (F.sdpa), which uses
the same mask convention (bool True = may attend, float added to the scores).
F.sdpa never returns the weights, but with V = I (n_k x n_k) its output *is*
the weight matrix, which gives an independent check of the weights too.
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers import TOL32, TOL64, max_abs, t64, to_numpy
from mini_transformer import (apply_mask, causal_mask, padding_mask,
                              scaled_dot_product_attention)

T, Fa = True, False


# --- hand-derived values -----------------------------------------------------

def test_chai_piyo_by_hand():
    # Seed 000's "Chai piyo" example, recomputed.
    # X = [[1,0,1,0],[0,1,0,1]];  Q = X W^Q = [[2,0],[0,2]],
    # K = X W^K = [[0,2],[2,0]],  V = X W^V = [[2,0],[0,2]].
    X = np.array([[1.0, 0, 1, 0], [0, 1, 0, 1]])
    W_Q = np.array([[1.0, 0], [0, 1], [1, 0], [0, 1]])
    W_K = np.array([[0.0, 1], [1, 0], [0, 1], [1, 0]])
    W_V = W_Q
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    np.testing.assert_array_equal(Q, [[2, 0], [0, 2]])
    np.testing.assert_array_equal(K, [[0, 2], [2, 0]])
    # Q Kᵀ = [[0, 4], [4, 0]];  / √2  ->  [[0, 2√2], [2√2, 0]]
    # row 1: softmax([0, 2√2]) = [1, e^{2√2}] / (1 + e^{2√2}) = [a, b]
    e = math.exp(2 * math.sqrt(2))      # e^{2√2} = 16.9188... (the seed's 16.923 is off)
    a, b = 1 / (1 + e), e / (1 + e)     # 0.05580..., 0.94419...
    out, weights = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(weights, [[a, b], [b, a]], rtol=1e-14)
    # Z = A V: row 1 = a [2, 0] + b [0, 2] = [2a, 2b]
    np.testing.assert_allclose(out, [[2 * a, 2 * b], [2 * b, 2 * a]], rtol=1e-14)
    assert round(a, 3) == 0.056 and round(2 * a, 3) == 0.112  # the seed's rounding


def test_equal_keys_give_the_mean_of_the_values():
    # every score is the same, so every weight is 1/3 and the output is mean(V)
    q = np.array([[1.0, 2.0]])
    k = np.array([[1.0, 1.0]] * 3)
    v = np.array([[3.0], [6.0], [9.0]])
    out, w = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(w, [[1 / 3] * 3], rtol=1e-15)
    np.testing.assert_allclose(out, [[6.0]], rtol=1e-15)


def test_scaling_by_sqrt_dk_by_hand():
    # d_k = 4, q = [1, 1, 1, 1], k_1 = 0, k_2 = (ln 3 / 2) [1, 1, 1, 1]
    # q·k = [0, 4 (ln 3) / 2] = [0, 2 ln 3];  / √4  ->  [0, ln 3]  ->  weights [1/4, 3/4]
    q = np.ones((1, 4))
    k = np.stack([np.zeros(4), np.full(4, math.log(3) / 2)])
    v = np.array([[4.0], [8.0]])
    out, w = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(w, [[0.25, 0.75]], rtol=1e-14)
    np.testing.assert_allclose(out, [[1 + 6]], rtol=1e-14)  # 4/4 + 3*8/4 = 7


def test_causal_mask_by_hand():
    np.testing.assert_array_equal(causal_mask(3), [[T, Fa, Fa], [T, T, Fa], [T, T, T]])
    np.testing.assert_array_equal(causal_mask(2, 3), [[T, Fa, Fa], [T, T, Fa]])
    np.testing.assert_array_equal(causal_mask(3, 2), [[T, Fa], [T, T], [T, T]])
    assert causal_mask(4).dtype == np.bool_


def test_padding_mask_by_hand():
    m = padding_mask([1, 3, 0], 3)
    assert m.shape == (3, 1, 3) and m.dtype == np.bool_
    np.testing.assert_array_equal(m[:, 0], [[T, Fa, Fa], [T, T, T], [Fa, Fa, Fa]])
    # torch lengths are accepted too
    np.testing.assert_array_equal(padding_mask(torch.tensor([2]), 3), [[[T, T, Fa]]])


def test_causal_attention_by_hand():
    # all scores 0 (q = k = 0); the causal mask leaves 1, 2, 3 keys:
    # weights [1, 0, 0], [1/2, 1/2, 0], [1/3, 1/3, 1/3]; V = [1, 2, 3]
    # outputs: 1, (1 + 2)/2 = 1.5, (1 + 2 + 3)/3 = 2
    z = np.zeros((3, 2))
    v = np.array([[1.0], [2.0], [3.0]])
    out, w = scaled_dot_product_attention(z, z, v, mask=causal_mask(3))
    np.testing.assert_allclose(w, [[1, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]],
                               rtol=1e-15)
    np.testing.assert_allclose(out, [[1.0], [1.5], [2.0]], rtol=1e-15)


def test_float_mask_is_added_by_hand():
    # scores 0, float mask [0, ln 3]  ->  softmax([0, ln 3]) = [1/4, 3/4]
    z = np.zeros((1, 2))
    out, w = scaled_dot_product_attention(z, np.zeros((2, 2)), np.array([[4.0], [8.0]]),
                                          mask=np.array([[0.0, math.log(3)]]))
    np.testing.assert_allclose(w, [[0.25, 0.75]], rtol=1e-14)
    np.testing.assert_allclose(out, [[7.0]], rtol=1e-14)


def test_bool_mask_equals_float_mask_of_zero_and_minus_inf(rng):
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    m = rng.random((4, 5)) < 0.6
    m[:, 0] = True
    out_b, w_b = scaled_dot_product_attention(q, k, v, mask=m)
    out_f, w_f = scaled_dot_product_attention(q, k, v, mask=np.where(m, 0.0, -np.inf))
    np.testing.assert_allclose(out_b, out_f, rtol=1e-14)
    np.testing.assert_array_equal(w_b == 0, ~m)


def test_apply_mask_by_hand():
    s = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(apply_mask(s, None), s)
    np.testing.assert_array_equal(apply_mask(s, np.array([[T, Fa], [T, T]])),
                                  [[1, -np.inf], [3, 4]])
    np.testing.assert_array_equal(apply_mask(s, np.array([0.5, -1.0])), [[1.5, 1], [3.5, 3]])


def test_mask_given_as_nested_lists():
    z = np.zeros((2, 2))
    _, w = scaled_dot_product_attention(z, z, z, mask=[[True, False], [True, True]])
    np.testing.assert_allclose(w, [[1, 0], [0.5, 0.5]])


# --- edge cases --------------------------------------------------------------

def test_fully_masked_row_gives_zero_weights_and_zero_output(rng):
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 2))
    m = np.ones((3, 3), bool)
    m[1] = False
    out, w = scaled_dot_product_attention(q, k, v, mask=m)
    np.testing.assert_array_equal(w[1], 0)
    np.testing.assert_array_equal(out[1], 0)
    np.testing.assert_allclose(w[[0, 2]].sum(-1), 1, rtol=1e-15)


def test_fully_masked_row_has_finite_gradients(rng):
    q, k, v = (t64(rng.normal(size=s), requires_grad=True) for s in [(3, 4), (3, 4), (3, 2)])
    m = torch.ones(3, 3, dtype=torch.bool)
    m[1] = False
    out, w = scaled_dot_product_attention(q, k, v, mask=m)
    (out.sum() + (w * w).sum()).backward()
    for g in (q.grad, k.grad, v.grad):
        assert torch.isfinite(g).all()
    assert (q.grad[1] == 0).all()  # the masked query influences nothing
    # a padding mask that leaves a sequence empty (length 0), batched
    x = t64(rng.normal(size=(2, 3, 4)), requires_grad=True)
    out, _ = scaled_dot_product_attention(x, x, x, mask=padding_mask([0, 2], 3))
    out.sum().backward()
    assert torch.isfinite(x.grad).all() and (out[0] == 0).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scores_of_1e30_do_not_overflow(dtype):
    # q·k_1 = 1e15 * 1e15 = 1e30, q·k_2 = -1e30 (d_k = 1): weights [1, 0]
    q = np.array([[1e15], [-1e15]], dtype=dtype)
    k = np.array([[1e15], [-1e15]], dtype=dtype)
    v = np.array([[1.0], [2.0]], dtype=dtype)
    out, w = scaled_dot_product_attention(q, k, v)
    assert np.isfinite(w).all()
    np.testing.assert_array_equal(w, [[1, 0], [0, 1]])
    np.testing.assert_array_equal(out, [[1], [2]])


def test_nan_in_a_query_propagates_to_its_row_only(rng):
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 2))
    q[1, 2] = np.nan
    out, w = scaled_dot_product_attention(q, k, v)
    assert np.isnan(w[1]).all() and np.isnan(out[1]).all()
    assert np.isfinite(w[[0, 2]]).all() and np.isfinite(out[[0, 2]]).all()


def test_inputs_are_not_modified(rng):
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    fmask = rng.normal(size=(3, 5))
    copies = [a.copy() for a in (q, k, v, fmask)]
    for mask in (None, fmask, fmask > 0):
        scaled_dot_product_attention(q, k, v, mask=mask)
    for a, c in zip((q, k, v, fmask), copies):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_kept(dtype, rng):
    q = rng.normal(size=(2, 3, 4)).astype(dtype)
    out, w = scaled_dot_product_attention(q, q, q, mask=causal_mask(3))
    assert out.dtype == dtype and w.dtype == dtype


# --- oracle: F.scaled_dot_product_attention -----------------------------------

def _mask(kind, shape, rng):
    """A mask of the given kind for scores of ``shape``; no fully masked row."""
    if kind is None:
        return None
    if kind == "causal":
        return causal_mask(shape[-2], shape[-1])
    if kind == "bool":
        m = rng.random(shape) < 0.5
        m[..., 0] = True
        return m
    if kind == "bool-broadcast":  # (n_k,) key mask shared by every query
        m = rng.random(shape[-1]) < 0.5
        m[0] = True
        return m
    return rng.normal(size=shape)  # float, added


SHAPES = [  # batch, n_q, n_k, d_k, d_v
    ((), 3, 3, 4, 4),
    ((2,), 4, 6, 8, 3),
    ((2, 3), 5, 2, 3, 7),
    ((1,), 1, 1, 1, 1),
    ((3,), 7, 4, 16, 2),
]


@pytest.mark.parametrize("batch,n_q,n_k,d_k,d_v", SHAPES)
@pytest.mark.parametrize("kind", [None, "causal", "bool", "bool-broadcast", "float"])
def test_matches_torch_sdpa(batch, n_q, n_k, d_k, d_v, kind, rng):
    q = rng.normal(size=(*batch, n_q, d_k))
    k = rng.normal(size=(*batch, n_k, d_k))
    v = rng.normal(size=(*batch, n_k, d_v))
    mask = _mask(kind, (*batch, n_q, n_k), rng)
    tm = None if mask is None else torch.as_tensor(mask)
    if tm is not None and tm.ndim == 1:  # F.sdpa wants a (.., n_q, n_k) mask
        tm = tm[None, :]
    eye = torch.eye(n_k, dtype=torch.float64).expand(*batch, n_k, n_k)
    expected = F.scaled_dot_product_attention(t64(q), t64(k), t64(v), attn_mask=tm)
    expected_w = F.scaled_dot_product_attention(t64(q), t64(k), eye, attn_mask=tm)

    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    assert out.shape == (*batch, n_q, d_v) and w.shape == (*batch, n_q, n_k)
    assert max_abs(out, expected) < TOL64
    assert max_abs(w, expected_w) < TOL64

    # float32, NumPy and torch
    f32 = [a.astype(np.float32) for a in (q, k, v)]
    tm32 = None if tm is None else (tm if tm.dtype == torch.bool else tm.float())
    expected32 = F.scaled_dot_product_attention(*map(torch.tensor, f32), attn_mask=tm32)
    assert max_abs(scaled_dot_product_attention(*f32, mask=mask)[0], expected32) < TOL32
    out_t, _ = scaled_dot_product_attention(*map(torch.tensor, f32), mask=tm32)
    assert out_t.dtype == torch.float32
    assert max_abs(out_t, expected32) < TOL32


def test_broadcast_leading_axes_match_torch_sdpa(rng):
    # q (2, 1, n_q, d), k and v (1, 3, n_k, d): the leading axes broadcast to (2, 3)
    q = rng.normal(size=(2, 1, 4, 5))
    k = rng.normal(size=(1, 3, 6, 5))
    v = rng.normal(size=(1, 3, 6, 2))
    mask = rng.random((4, 6)) < 0.7
    mask[:, 0] = True
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    assert out.shape == (2, 3, 4, 2) and w.shape == (2, 3, 4, 6)
    expected = F.scaled_dot_product_attention(
        t64(q).expand(2, 3, 4, 5), t64(k).expand(2, 3, 6, 5), t64(v).expand(2, 3, 6, 2),
        attn_mask=torch.as_tensor(mask))
    assert max_abs(out, expected) < TOL64


@pytest.mark.parametrize("n_q,n_k", [(4, 4), (3, 5), (5, 3)])
def test_causal_mask_matches_torch_is_causal(n_q, n_k, rng):
    # torch documents is_causal as the upper-left aligned tril of ones(L, S)
    q, k, v = rng.normal(size=(n_q, 3)), rng.normal(size=(n_k, 3)), rng.normal(size=(n_k, 2))
    expected = F.scaled_dot_product_attention(t64(q), t64(k), t64(v), is_causal=True)
    out, _ = scaled_dot_product_attention(q, k, v, mask=causal_mask(n_q, n_k))
    assert max_abs(out, expected) < TOL64


def test_numpy_mask_with_torch_inputs(rng):
    q = t64(rng.normal(size=(2, 3, 4)))
    mask = padding_mask([1, 3], 3)  # NumPy bool (2, 1, 3)
    out, w = scaled_dot_product_attention(q, q, q, mask=mask)
    expected = F.scaled_dot_product_attention(q, q, q, attn_mask=torch.as_tensor(mask))
    assert max_abs(out, expected) < TOL64
    assert to_numpy(w)[0, :, 1:].max() == 0

"""Property-based tests (hypothesis): identities that hold for every input, and
NumPy vs torch (and vs torch.nn) on generated shapes, masks and values.

The profile in conftest.py keeps this fast and reproducible (25 examples,
derandomized, no example database).
"""

import math

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from helpers import max_abs, t64
from mini_transformer import (EncoderLayerParams, MultiHeadParams, encoder_layer,
                              layer_norm, multi_head_attention, padding_mask,
                              scaled_dot_product_attention, softmax)
from mini_transformer.torch.convert import to_torch


def floats(lo=-30.0, hi=30.0):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=64)


def float_arrays(shape, lo=-30.0, hi=30.0):
    return arrays(np.float64, shape, elements=floats(lo, hi))


score_arrays = float_arrays(array_shapes(min_dims=1, max_dims=3, max_side=6))


@st.composite
def attention_inputs(draw, masked=True):
    """q, k, v with broadcast leading axes and a bool mask of a broadcastable shape."""
    batch = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    n_q, n_k = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    d_k, d_v = draw(st.integers(1, 6)), draw(st.integers(1, 4))

    def some_ones(shape):  # each leading axis either full or 1 (broadcast)
        return [s if draw(st.booleans()) else 1 for s in shape]

    q = draw(float_arrays((*some_ones(batch), n_q, d_k), -3, 3))
    k = draw(float_arrays((*some_ones(batch), n_k, d_k), -3, 3))
    v = draw(float_arrays((*batch, n_k, d_v), -3, 3))
    mask = None
    if masked and draw(st.booleans()):  # a mask broadcasts to the scores, q kᵀ
        full = (*np.broadcast_shapes(q.shape[:-2], k.shape[:-2]), n_q, n_k)
        shape = some_ones(full)[draw(st.integers(0, len(full) - 1)):]  # maybe fewer axes
        mask = draw(arrays(np.bool_, tuple(shape)))
    return q, k, v, mask


# --- softmax -----------------------------------------------------------------

@given(score_arrays, st.data())
def test_softmax_rows_are_distributions(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    p = softmax(x, axis=axis)
    assert (p >= 0).all() and (p <= 1).all()
    np.testing.assert_allclose(p.sum(axis=axis), 1, rtol=1e-13)


@given(score_arrays, floats(-1e3, 1e3))
def test_softmax_shift_invariance(x, c):
    # softmax(x + c) = softmax(x): e^{c} cancels between numerator and Z
    np.testing.assert_allclose(softmax(x + c), softmax(x), rtol=1e-9, atol=1e-12)


@given(float_arrays(st.integers(2, 8), -100, 100))
def test_softmax_small_temperature_is_argmax(x):
    top2 = np.sort(x)[-2:]
    assume(top2[1] - top2[0] > 1e-3)
    # at T = 1e-6 every other weight is below e^{-1000} = 0 in float64
    np.testing.assert_array_equal(softmax(x, temperature=1e-6), np.eye(x.size)[x.argmax()])


@given(float_arrays(st.integers(1, 8), -1e3, 1e3))
def test_softmax_large_temperature_is_uniform(x):
    # |x / T| <= 1e-9 at T = 1e12, so every weight is 1/n within ~1e-9
    np.testing.assert_allclose(softmax(x, temperature=1e12), 1 / x.size, rtol=1e-8)
    np.testing.assert_allclose(softmax(x, temperature=math.inf), 1 / x.size, rtol=1e-15)


@given(score_arrays, st.data())
def test_softmax_numpy_and_torch_agree_with_masked_entries(x, data):
    drop = data.draw(arrays(np.bool_, x.shape))
    x = np.where(drop, -np.inf, x)  # -inf = masked, whole rows included
    ours = softmax(x)
    np.testing.assert_allclose(softmax(t64(x)).numpy(), ours, rtol=1e-14, atol=1e-300)
    live = ~np.all(drop, axis=-1)  # torch.softmax gives NaN on all -inf rows; we give 0
    np.testing.assert_allclose(torch.softmax(t64(x), -1).numpy()[live], ours[live],
                               rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(ours[~live], 0)


# --- scaled dot-product attention --------------------------------------------

@given(attention_inputs())
def test_attention_weights_sum_to_one_or_zero(inputs):
    q, k, v, mask = inputs
    out, w = scaled_dot_product_attention(q, k, v, mask)
    sums = w.sum(-1)
    if mask is None:
        np.testing.assert_allclose(sums, 1, rtol=1e-13)
    else:
        m = np.broadcast_to(mask, w.shape)
        np.testing.assert_allclose(sums, m.any(-1).astype(float), rtol=1e-13)
        assert (w[~m] == 0).all()
        dead = np.broadcast_to(~m.any(-1), out.shape[:-1])  # v may add batch axes
        assert (out[dead] == 0).all()  # fully masked queries give zeros


@given(attention_inputs())
def test_attention_numpy_torch_and_torch_sdpa_agree(inputs):
    q, k, v, mask = inputs
    out, w = scaled_dot_product_attention(q, k, v, mask)
    tm = None if mask is None else torch.as_tensor(mask)
    out_t, w_t = scaled_dot_product_attention(t64(q), t64(k), t64(v), tm)
    assert max_abs(out_t, out) < 1e-12 and max_abs(w_t, w) < 1e-12
    # torch's own kernel, on the queries that have at least one key
    shape = out.shape[:-1] + (k.shape[-2],)
    live = np.ones(shape[:-1], bool) if mask is None else np.broadcast_to(mask, shape).any(-1)
    if tm is not None and tm.ndim < 2:
        tm = tm.reshape(1, -1)
    expected = F.scaled_dot_product_attention(
        *(t64(np.broadcast_to(a, out.shape[:-2] + a.shape[-2:])) for a in (q, k, v)),
        attn_mask=tm).numpy()
    np.testing.assert_allclose(out[live], expected[live], rtol=1e-10, atol=1e-10)


# --- multi-head attention and the encoder layer ------------------------------

@st.composite
def layer_inputs(draw):
    n_heads = draw(st.integers(1, 3))
    d_model = n_heads * draw(st.integers(1, 4))
    batch, n = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    x = draw(float_arrays((batch, n, d_model), -3, 3))
    lengths = draw(st.lists(st.integers(1, n), min_size=batch, max_size=batch))
    return np.random.default_rng(seed), x, n_heads, lengths


@given(layer_inputs(), st.booleans())
def test_multihead_numpy_torch_and_torch_nn_agree(inputs, cross):
    rng, x, n_heads, lengths = inputs
    batch, n, d_model = x.shape
    p = MultiHeadParams.random(rng, d_model=d_model, n_heads=n_heads)
    memory = rng.normal(size=(batch, n + 2, d_model)) if cross else None
    kv = x if memory is None else memory
    pad = padding_mask(lengths, n) if not cross else padding_mask(lengths, n + 2)
    out, w = multi_head_attention(x, p, pad, memory=memory)
    pt = p.map(t64)
    out_t, w_t = multi_head_attention(t64(x), pt, pad, memory=None if memory is None
                                      else t64(memory))
    assert max_abs(out_t, out) < 1e-12 and max_abs(w_t, w) < 1e-12
    expected, expected_w = to_torch(p)(t64(x), t64(kv), t64(kv),
                                        key_padding_mask=torch.as_tensor(~pad[:, 0]),
                                        average_attn_weights=False)
    assert max_abs(out, expected) < 1e-10 and max_abs(w, expected_w) < 1e-10


@given(layer_inputs(), st.booleans())
def test_encoder_layer_numpy_torch_and_torch_nn_agree(inputs, norm_first):
    rng, x, n_heads, lengths = inputs
    d_model = x.shape[-1]
    p = EncoderLayerParams.random(rng, d_model=d_model, n_heads=n_heads,
                                  d_ff=int(rng.integers(1, 9)))
    pad = padding_mask(lengths, x.shape[1])
    out = encoder_layer(x, p, pad, norm_first=norm_first)
    out_t = encoder_layer(t64(x), p.map(t64), pad, norm_first=norm_first)
    assert max_abs(out_t, out) < 1e-12
    expected = to_torch(p, norm_first=norm_first)(
        t64(x), src_key_padding_mask=torch.as_tensor(~pad[:, 0]))
    assert max_abs(out, expected) < 1e-9


@given(layer_inputs(), st.data())
def test_self_attention_is_permutation_equivariant(inputs, data):
    # without positional encoding, shuffling the tokens shuffles the output the
    # same way: MHA(P X) = P MHA(X), weights P A Pᵀ; and so for the whole layer
    rng, x, n_heads, _ = inputs
    n = x.shape[1]
    perm = np.array(data.draw(st.permutations(range(n))))
    p = EncoderLayerParams.random(rng, d_model=x.shape[-1], n_heads=n_heads)
    out, w = multi_head_attention(x, p.attn)
    out_p, w_p = multi_head_attention(x[:, perm], p.attn)
    np.testing.assert_allclose(out_p, out[:, perm], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w_p, w[..., perm, :][..., perm], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(encoder_layer(x[:, perm], p), encoder_layer(x, p)[:, perm],
                               rtol=1e-10, atol=1e-10)


# --- layer norm ----------------------------------------------------------------

@given(float_arrays(array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=8), -1e3, 1e3))
def test_layer_norm_rows_have_mean_0_and_variance_1(x):
    var = x.var(axis=-1)
    assume((var > 1e-6 * (1 + np.abs(x).max() ** 2)).all())  # not numerically constant
    d = x.shape[-1]
    y = layer_norm(x, np.ones(d), np.zeros(d), eps=0.0)
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-9)
    np.testing.assert_allclose(y.var(-1), 1, rtol=1e-9)
    # γ and β only scale and shift the normalised rows: γ ŷ + β
    gamma, beta = np.linspace(0.5, 2, d), np.linspace(-1, 1, d)
    np.testing.assert_allclose(layer_norm(x, gamma, beta, eps=0.0), gamma * y + beta,
                               rtol=1e-12, atol=1e-12)

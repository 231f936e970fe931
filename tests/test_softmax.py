"""softmax and log_sum_exp: hand-derived values, limits, edge cases, torch oracle."""

import math

import numpy as np
import pytest
import torch

from helpers import TOL32, TOL64, max_abs, t64
from mini_transformer import log_softmax, log_sum_exp, softmax

INF = math.inf
NAN = math.nan


# --- hand-derived values -----------------------------------------------------

def test_two_scores_by_hand():
    # softmax([0, ln 3]) = [e^0, e^{ln 3}] / (1 + 3) = [1, 3] / 4
    np.testing.assert_allclose(softmax(np.array([0.0, math.log(3)])), [0.25, 0.75],
                               rtol=0, atol=1e-15)


def test_three_scores_by_hand():
    # softmax([0, ln 2, ln 5]) = [1, 2, 5] / 8
    out = softmax(np.array([0.0, math.log(2), math.log(5)]))
    np.testing.assert_allclose(out, [1 / 8, 2 / 8, 5 / 8], rtol=0, atol=1e-15)


def test_equal_scores_are_uniform():
    # every e^{x_i} is the same, so each weight is 1/n
    np.testing.assert_allclose(softmax(np.full(3, 7.0)), [1 / 3] * 3, rtol=0, atol=1e-15)


def test_temperature_by_hand():
    # softmax([0, 2 ln 3] / T) with T = 2 is softmax([0, ln 3]) = [1/4, 3/4]
    out = softmax(np.array([0.0, 2 * math.log(3)]), temperature=2.0)
    np.testing.assert_allclose(out, [0.25, 0.75], rtol=0, atol=1e-15)


def test_each_row_normalised_separately():
    # row 0: [1/4, 3/4]; row 1: [0, ln 3] reversed gives [3/4, 1/4]
    x = np.array([[0.0, math.log(3)], [math.log(3), 0.0]])
    np.testing.assert_allclose(softmax(x), [[0.25, 0.75], [0.75, 0.25]], atol=1e-15)


def test_axis_zero_normalises_columns():
    x = np.array([[0.0, math.log(3)], [math.log(3), 0.0]])
    # columns: [0, ln 3] -> [1/4, 3/4] and [ln 3, 0] -> [3/4, 1/4]
    np.testing.assert_allclose(softmax(x, axis=0), [[0.25, 0.75], [0.75, 0.25]],
                               atol=1e-15)


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning")
def test_log_sum_exp_by_hand():
    # log(e^0 + e^{ln 3}) = ln 4;  log(2 e^{1000}) = 1000 + ln 2 (no overflow)
    out = log_sum_exp(np.array([[0.0, math.log(3)], [1000.0, 1000.0]]))
    np.testing.assert_allclose(out, [math.log(4), 1000 + math.log(2)], rtol=1e-15)
    # an all -inf row: log 0 = -inf; a +inf entry: log Z = +inf
    assert log_sum_exp(np.array([-INF, -INF])) == -INF
    assert log_sum_exp(np.array([INF, 0.0])) == INF


def test_softmax_is_exp_of_x_minus_log_sum_exp(rng):
    # identity: softmax(x) = exp(x - log Z)
    x = rng.normal(size=(4, 6)) * 10
    np.testing.assert_allclose(softmax(x), np.exp(x - log_sum_exp(x)[:, None]),
                               rtol=1e-13, atol=1e-300)


# --- temperature limits ------------------------------------------------------

def test_small_temperature_tends_to_argmax():
    # T = 1e-3: the runner-up is 0.5 behind, weight e^{-500} ~ 1e-217
    x = np.array([1.0, 1.5, 0.2])
    np.testing.assert_allclose(softmax(x, temperature=1e-3), [0, 1, 0], atol=1e-200)


def test_large_temperature_tends_to_uniform():
    # T = 1e9: every x_i / T is within 1e-8 of 0
    x = np.array([1.0, -3.0, 20.0])
    np.testing.assert_allclose(softmax(x, temperature=1e9), [1 / 3] * 3, atol=1e-8)


def test_infinite_temperature_is_uniform_over_unmasked_keys():
    assert np.array_equal(softmax(np.array([5.0, -2.0]), temperature=INF), [0.5, 0.5])
    # a masked key (-inf) stays masked: not -inf / inf = NaN
    out = softmax(np.array([[-INF, 3.0, 4.0], [-INF, -INF, -INF]]), temperature=INF)
    np.testing.assert_array_equal(out, [[0, 0.5, 0.5], [0, 0, 0]])


def test_temperature_given_as_numpy_scalar():
    out = softmax(np.array([0.0, 2 * math.log(3)]), temperature=np.float64(2.0))
    np.testing.assert_allclose(out, [0.25, 0.75], atol=1e-15)


# --- edge cases --------------------------------------------------------------

def test_all_minus_inf_row_gives_zeros_not_nan():
    out = softmax(np.array([[-INF, -INF, -INF], [0.0, -INF, math.log(3)]]))
    np.testing.assert_allclose(out, [[0, 0, 0], [0.25, 0, 0.75]], atol=1e-15)


def test_nan_propagates_to_its_row_only():
    out = softmax(np.array([[NAN, 0.0, 1.0], [0.0, math.log(3), -INF]]))
    assert np.isnan(out[0]).all()
    np.testing.assert_allclose(out[1], [0.25, 0.75, 0], atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_huge_scores_do_not_overflow(dtype):
    # exp(1e30) overflows, exp(1e30 - max) does not
    out = softmax(np.array([[1e30, -1e30], [1e30, 1e30], [-1e30, -1e30]], dtype=dtype))
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, [[1, 0], [0.5, 0.5], [0.5, 0.5]])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf
@pytest.mark.parametrize("row", [
    [INF, 0.0, 1.0], [-INF, 0.0, 1.0], [INF, INF, 0.0], [INF, -INF, 0.0],
    [-INF, -INF, 2.0], [NAN, -INF, 0.0],
])
def test_infinities_behave_like_torch_softmax(row):
    # torch.softmax is the oracle for ±inf, NaN included where it gives NaN
    # (+inf - inf is NaN: an overflowed score is a bug to see, not to hide)
    ours = softmax(np.array(row))
    theirs = torch.softmax(t64(row), dim=-1).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-15, atol=0, equal_nan=True)


def test_input_is_not_modified(rng):
    x = rng.normal(size=(3, 5))
    copy = x.copy()
    softmax(x)
    softmax(x, temperature=0.5)
    np.testing.assert_array_equal(x, copy)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_kept(dtype, rng):
    assert softmax(rng.normal(size=(2, 3)).astype(dtype), temperature=0.7).dtype == dtype


# --- oracle: torch.softmax ---------------------------------------------------

@pytest.mark.parametrize("shape,axis", [((5,), -1), ((3, 7), -1), ((2, 3, 4), 1),
                                        ((2, 3, 4), 0)])
@pytest.mark.parametrize("temperature", [1.0, 0.3, 4.0])
def test_matches_torch_softmax(shape, axis, temperature, rng):
    x = rng.normal(size=shape) * 5
    expected = torch.softmax(t64(x) / temperature, dim=axis)
    assert max_abs(softmax(x, axis=axis, temperature=temperature), expected) < TOL64
    x32 = x.astype(np.float32)
    expected32 = torch.softmax(torch.tensor(x32) / temperature, dim=axis)
    assert max_abs(softmax(x32, axis=axis, temperature=temperature), expected32) < TOL32
    # and the package on torch tensors
    assert max_abs(softmax(t64(x), axis=axis, temperature=temperature), expected) < TOL64


def test_torch_gradient_matches_torch_softmax(rng):
    x = rng.normal(size=(3, 4))
    w = t64(rng.normal(size=(3, 4)))
    a = t64(x, requires_grad=True)
    b = t64(x, requires_grad=True)
    (softmax(a) * w).sum().backward()
    (torch.softmax(b, dim=-1) * w).sum().backward()
    assert max_abs(a.grad, b.grad) < TOL64


def test_log_softmax_against_torch(rng):
    x = rng.normal(size=(3, 5, 7)) * 30
    for axis in (-1, 1):
        expected = torch.log_softmax(torch.as_tensor(x), dim=axis).numpy()
        assert max_abs(log_softmax(x, axis=axis), expected) < 1e-12
    # a score of -inf has log-probability -inf; the others stay finite
    out = log_softmax(np.array([0.0, -np.inf, 1.0]))
    assert out[1] == -np.inf and np.isfinite(out[[0, 2]]).all()

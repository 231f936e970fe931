"""layer_norm: biased variance, eps inside the root, against torch.nn.LayerNorm."""

import math

import numpy as np
import pytest
import torch

from helpers import TOL32, TOL64, max_abs, t64
from mini_transformer import layer_norm

ONES, ZEROS = np.ones(3), np.zeros(3)


def test_one_two_three_by_hand():
    # x = [1, 2, 3]: μ = 2, biased σ² = (1 + 0 + 1) / 3 = 2/3
    # (x - μ) / √σ² = [-1, 0, 1] / √(2/3) = [-√1.5, 0, √1.5]   (eps = 0)
    out = layer_norm(np.array([1.0, 2.0, 3.0]), ONES, ZEROS, eps=0.0)
    np.testing.assert_allclose(out, [-math.sqrt(1.5), 0, math.sqrt(1.5)], rtol=1e-15)
    # with the default eps = 1e-5 inside the root: [-1, 0, 1] / √(2/3 + 1e-5)
    out = layer_norm(np.array([1.0, 2.0, 3.0]), ONES, ZEROS)
    s = math.sqrt(2 / 3 + 1e-5)
    np.testing.assert_allclose(out, [-1 / s, 0, 1 / s], rtol=1e-15)


def test_gamma_and_beta_by_hand():
    # γ = 2, β = 1: 1 + 2 [-√1.5, 0, √1.5]
    out = layer_norm(np.array([1.0, 2.0, 3.0]), np.full(3, 2.0), ONES, eps=0.0)
    r = math.sqrt(1.5)
    np.testing.assert_allclose(out, [1 - 2 * r, 1, 1 + 2 * r], rtol=1e-15)


def test_variance_is_biased():
    # x = [0, 2]: μ = 1, biased σ² = 1 (unbiased would be 2): output [-1, 1]
    out = layer_norm(np.array([0.0, 2.0]), np.ones(2), np.zeros(2), eps=0.0)
    np.testing.assert_array_equal(out, [-1.0, 1.0])


def test_constant_row_gives_beta():
    # x - μ = 0 and eps > 0 keeps 0 / √eps = 0: the output is β
    beta = np.array([0.1, 0.2, 0.3])
    np.testing.assert_array_equal(layer_norm(np.full((2, 3), 5.0), ONES, beta), [beta] * 2)


def test_rows_normalised_separately():
    x = np.array([[1.0, 2.0, 3.0], [30.0, 10.0, 20.0]])
    r = math.sqrt(1.5)
    np.testing.assert_allclose(layer_norm(x, ONES, ZEROS, eps=0.0),
                               [[-r, 0, r], [r, -r, 0]], rtol=1e-14, atol=1e-15)


def test_nan_propagates_to_its_row_only():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]])
    out = layer_norm(x, ONES, ZEROS)
    assert np.isnan(out[0]).all() and np.isfinite(out[1]).all()


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 4, 16)])
@pytest.mark.parametrize("eps", [1e-5, 1e-12, 0.1])
def test_matches_torch_layer_norm(shape, eps, rng):
    d = shape[-1]
    x = rng.normal(size=shape) * 3 + 1
    gamma, beta = 1 + rng.normal(size=d) * 0.3, rng.normal(size=d) * 0.3
    for dtype, np_dtype, tol in ((torch.float64, np.float64, TOL64),
                                 (torch.float32, np.float32, TOL32)):
        ln = torch.nn.LayerNorm(d, eps=eps, dtype=dtype)
        with torch.no_grad():
            ln.weight.copy_(t64(gamma))
            ln.bias.copy_(t64(beta))
        expected = ln(torch.tensor(x, dtype=dtype))
        args = [a.astype(np_dtype) for a in (x, gamma, beta)]
        out = layer_norm(*args, eps=eps)
        assert out.dtype == np_dtype
        assert max_abs(out, expected) < tol
        out_t = layer_norm(*(torch.tensor(a) for a in args), eps=eps)
        assert max_abs(out_t, expected) < tol

"""positional_encoding: hand values at d_model = 4, the rotation identity, dtypes."""

import math

import numpy as np
import pytest
import torch

from mini_transformer import positional_encoding


def test_d_model_4_by_hand():
    # d_model = 4: frequencies 1 / 10000^(0/4) = 1 and 1 / 10000^(2/4) = 1/100
    # PE(pos) = [sin pos, cos pos, sin(pos/100), cos(pos/100)]
    pe = positional_encoding(3, 4)
    assert pe.shape == (3, 4) and pe.dtype == np.float64
    np.testing.assert_array_equal(pe[0], [0, 1, 0, 1])  # sin 0 = 0, cos 0 = 1
    expected = [[math.sin(p), math.cos(p), math.sin(p / 100), math.cos(p / 100)]
                for p in range(3)]
    np.testing.assert_allclose(pe, expected, rtol=0, atol=1e-15)


def test_d_model_2_is_sin_and_cos_of_the_position():
    pe = positional_encoding(5, 2)
    np.testing.assert_allclose(pe, [[math.sin(p), math.cos(p)] for p in range(5)],
                               atol=1e-15)


def test_odd_d_model_by_hand():
    # d_model = 3: columns sin(pos), cos(pos), sin(pos / 10000^(2/3)); the last
    # sine has no cosine partner
    pe = positional_encoding(4, 3)
    w = 10000 ** (-2 / 3)
    np.testing.assert_allclose(
        pe, [[math.sin(p), math.cos(p), math.sin(p * w)] for p in range(4)], atol=1e-15)


@pytest.mark.parametrize("d_model", [4, 16, 64])
def test_shift_by_k_is_a_rotation(d_model):
    # identity: [sin(a + b), cos(a + b)] = [[cos b, sin b], [-sin b, cos b]] [sin a, cos a]
    # with a = pos ω_i and b = k ω_i, ω_i = 10000^(-2i/d_model): a fixed rotation
    # per frequency, whatever the position (the paper's "relative positions" claim)
    k = 7
    pe = positional_encoding(50, d_model)
    for i in range(d_model // 2):
        b = k * 10000.0 ** (-2 * i / d_model)
        R = np.array([[math.cos(b), math.sin(b)], [-math.sin(b), math.cos(b)]])
        pair = pe[:, 2 * i:2 * i + 2]                       # (positions, 2)
        np.testing.assert_allclose(pair[k:], pair[:-k] @ R.T, atol=1e-12)


def test_every_row_has_norm_sqrt_d_over_2():
    # sin² + cos² = 1 for each of the d/2 pairs
    pe = positional_encoding(100, 32)
    np.testing.assert_allclose(np.linalg.norm(pe, axis=1), math.sqrt(16), rtol=1e-14)
    assert np.abs(pe).max() <= 1


def test_computed_in_float64_then_cast():
    # at position 10000 the angle is large: a float32 computation would lose
    # digits; casting the float64 result is the exact rounding
    pe64 = positional_encoding(10001, 8)
    pe32 = positional_encoding(10001, 8, dtype=np.float32)
    assert pe32.dtype == np.float32
    np.testing.assert_array_equal(pe32, pe64.astype(np.float32))
    np.testing.assert_allclose(pe64[10000, 0], math.sin(10000), atol=1e-12)


def test_moves_to_torch_as_documented():
    x = torch.zeros(5, 8, dtype=torch.float32)
    pe = torch.as_tensor(positional_encoding(5, 8), device=x.device, dtype=x.dtype)
    assert pe.dtype == torch.float32 and pe.shape == x.shape
    np.testing.assert_allclose(pe.numpy(), positional_encoding(5, 8), atol=1e-7)
    assert positional_encoding(np.int64(2), 4).shape == (2, 4)  # NumPy integers welcome

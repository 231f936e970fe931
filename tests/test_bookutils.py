"""book/bookutils.py: what a notebook may store is the same on every CPU."""

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from bookutils import portable  # noqa: E402


@pytest.mark.parametrize("value, stored", [
    (33.557309761920706, 33.557310),         # the arccos angle that broke nbval on AVX2
    (33.5573097619207, 33.557310),           # ... its value on an AVX-512 machine
    (0.0031622776601683794, 0.0031622777),
    (2.220446049250313e-16, 2.2204460e-16),
    (-1e-20, -1e-20),
    (np.float64(1.870831365997481), 1.8708314),
    (np.float32(0.1), 0.1),
    (torch.tensor(2.5, dtype=torch.float64), 2.5),
])
def test_floats_keep_eight_significant_digits(value, stored):
    assert portable(value) == stored


@pytest.mark.parametrize("value", [68719476736, 68719476736.0, 2.0**52, True, "1e-13",
                                   Fraction(64, 9), np.int64(35218731827200)])
def test_exact_values_stay_exact(value):
    out = portable(value)
    assert out == value and type(out) in (type(value), int, float)


def test_negative_zero_and_non_finite():
    assert str(portable(-1e-30 * 0.0)) == "0.0"
    assert portable(float("inf")) == float("inf")
    assert np.isnan(portable(float("nan")))


def test_digits_and_refusals():
    assert portable(1002.4076057894, digits=6) == 1002.41
    with pytest.raises(TypeError, match="glue a number"):
        portable([1.0, 2.0])

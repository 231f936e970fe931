"""book/exercises/ch06.py: each checker accepts a reference answer written here
by another route, and names the mistake of wrong answers written as a reader would
make them."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch06  # noqa: E402


def refused(verdict, key, word):
    assert verdict.ok is False, verdict.message
    assert verdict.mistake == key, verdict.message
    assert word in verdict.message


# --- exercise 1: the closest two encodings, d_model = 2 -------------------------------
# With one pair (omega = 1), rows k apart are at distance |e^{ik} - 1| = 2 |sin(k / 2)|,
# the same for every starting position: the closest pair has the offset k <= 1000 with
# the smallest 2 |sin(k / 2)|, a loop over k, not over pairs of rows.

def by_offset(k_max):
    dist = [2 * abs(math.sin(k / 2)) for k in range(1, k_max + 1)]
    k = 1 + int(np.argmin(dist))
    return k, dist[k - 1]


K, D = by_offset(1000)


def test_1_reference_is_right():
    assert K == 710 and 6.0e-5 < D < 6.1e-5              # 710 ~ 113 turns of 2 pi
    assert ch06.check_1((K, D)).ok is True
    assert ch06.check_1([710, 6.0e-5]).ok is True        # as the page rounds it


@pytest.mark.parametrize("answer, key, word", [
    ((D, K), "swapped", "swapped"),
    ((0, 0.0), "self", "itself"),
    (by_offset(100), "first-hundred", "0..1000"),
    ((K / 2, 2 * abs(math.sin(K / 4))), "half-turn", "cosine"),   # near 113 pi
    ((K, D**2), "squared", "squared"),
    ((K, D / 2), "half", "factor 2"),
    ((700, 2 * abs(math.sin(350))), "offset", "offset"),
    ((K, 1e-3), "distance", "distance"),
    (710, "form", "two numbers"),
])
def test_1_mistakes_are_named(answer, key, word):
    verdict = ch06.check_1(answer)
    refused(verdict, key, word)
    assert "710" not in verdict.message


def test_1_unanswered():
    assert ch06.check_1(...).ok is None


# --- exercise 3: PE_pos . PE_(pos+6), d_model = 4 -------------------------------------
# By hand: the pairs turn at omega_0 = 1 and omega_1 = 10000^(-2/4) = 0.01, and the dot
# product of two positions k apart is sum_i cos(omega_i k) = cos 6 + cos 0.06.
DOT = math.cos(6) + math.cos(0.06)


def test_3_reference_is_right():
    assert ch06.check_3(DOT).ok is True
    assert ch06.check_3(1.9584).ok is True                  # four decimals


@pytest.mark.parametrize("answer, key, word", [
    (math.cos(6) + math.cos(0.6), "wrong-frequency", "pair's index"),  # 10000^(-1/4)
    (math.cos(math.pi / 30) + math.cos(math.pi * 0.06 / 180), "degrees", "radians"),
    (math.cos(6), "fast-pair-only", "two pairs"),
    (math.cos(0.06), "slow-pair-only", "two pairs"),
    (math.sin(6) + math.sin(0.06), "sines", "sines"),
    (math.sqrt(4 - 2 * DOT), "distance", "distance"),        # |a - b|^2 = 2 + 2 - 2 a.b
    (0.288, "distance", "distance"),
    (4 - 2 * DOT, "squared-distance", "squared"),
    (2.0, "value", "off"),                                  # PE_pos . PE_pos
])
def test_3_mistakes_are_named(answer, key, word):
    verdict = ch06.check_3(answer)
    refused(verdict, key, word)
    assert "1.958" not in verdict.message


def test_3_unanswered():
    assert ch06.check_3(...).ok is None


# --- exercise 4: float32 angle error at pos = 100000 ----------------------------------
# By hand: 2^16 = 65536 <= 10^5 < 2^17, so float32 numbers there are 2^(16 - 23) = 2^-7
# apart and rounding to the nearest costs up to 2^-8. The measurement, written as a loop
# over the 256 frequencies with float32 scalars:

def measured_by_loop(pos):
    worst = 0.0
    for i in range(256):
        omega = 10000.0 ** (-2 * i / 512)
        angle32 = np.float32(pos) * np.float32(omega)       # float32 times float32
        worst = max(worst, abs(float(angle32) - pos * omega))
    return worst


MEASURED = measured_by_loop(100000)


def test_4_reference_is_right():
    assert 2**-8 < MEASURED < 2**-7                         # larger than the estimate
    assert ch06.check_4((2**-8, MEASURED)).ok is True
    assert ch06.check_4((0.003906, 0.005741)).ok is True    # as the page prints them


def product_only(pos):          # omega kept in float64, only the product rounded
    return max(abs(float(np.float32(pos * 10000.0 ** (-2 * i / 512)))
                   - pos * 10000.0 ** (-2 * i / 512)) for i in range(256))


@pytest.mark.parametrize("answer, key, word", [
    (0.0039, "one-number", "two numbers"),
    ((MEASURED, 2**-8), "swapped", "swapped"),
    ((2**-7, MEASURED), "whole-spacing", "half"),
    ((2**-24 * 1e5, MEASURED), "relative-bound", "power of two"),
    ((2**-23, MEASURED), "relative-precision", "relative precision"),
    ((2**-8, 0.0), "measured-zero", "0"),
    ((2**-8, product_only(100000)), "product-only", "first"),
    ((2**-8, measured_by_loop(10000)), "pos-10000", "10000"),
    ((2**-8, 0.01), "value", "differ"),
])
def test_4_mistakes_are_named(answer, key, word):
    verdict = ch06.check_4(answer)
    refused(verdict, key, word)
    assert "0.00574" not in verdict.message and "0.0039" not in verdict.message


def test_4_unanswered():
    assert ch06.check_4(...).ok is None

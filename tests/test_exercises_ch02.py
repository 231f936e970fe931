"""book/exercises/ch02.py: chapter 2's checkers accept the reference answers, derived
here by hand or sampled as the chapter samples them, and name the mistakes a reader
makes."""

import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch02  # noqa: E402

# Uniform on [-1, 1]: E[x²] = ∫ x²/2 dx = 1/3; a term q_c k_c has mean 0 and variance
# E[q²] E[k²] = 1/9; 64 independent terms: 64/9.
VAR_1 = Fraction(1, 3) * Fraction(1, 3) * 64


def test_1_reference_is_right():
    assert VAR_1 == Fraction(64, 9)
    assert ch02.check_1(float(VAR_1)).ok is True
    assert ch02.check_1(7.1111).ok is True                   # as the solution prints it


def _sampled_variance():
    rng = np.random.default_rng(1)
    q, k = rng.uniform(-1, 1, (2, 5000, 64))
    return float((q * k).sum(axis=1).var(ddof=1))


@pytest.mark.parametrize("wrong, key, word", [
    (64 * (1 / 3), "sigma-squared", "σ² · σ²"),              # the blog's σ² d_k
    (64.0, "unit-variance", "variance 1"),
    (math.sqrt(64 / 9), "std", "standard deviation"),
    (1 / 9, "one-term", "d_k"),
    (_sampled_variance(), "sampled", "sampled"),
    (5.0, "value", "not it"),
])
def test_1_mistakes_are_named(wrong, key, word):
    verdict = ch02.check_1(wrong)
    assert verdict.ok is False and verdict.mistake == key
    assert word in verdict.message
    assert "7.11" not in verdict.message


def test_1_unanswered():
    assert ch02.check_1(...).ok is None


# By hand, components of mean 1 and variance 1: a term q_c k_c has mean 1·1 = 1 and
# E[(qk)²] = E[q²] E[k²] = 2 · 2 = 4, so variance 4 − 1 = 3; 64 terms: mean 64, variance
# 192; divided by √64 = 8: mean 8, variance 192/64 = 3.
MOMENTS = {"mean": 64, "var": 192, "mean_scaled": 8, "var_scaled": 3}


def test_2_reference_is_right():
    assert ch02.check_2(MOMENTS).ok is True


@pytest.mark.parametrize("part, wrong, key, word", [
    ("var", 64 * 1 * 1, "zero-mean", "means"),              # d_k σ² σ²
    ("var", 64 * 2 * 2, "no-mean-squared", "subtract"),     # E[(qk)²] d_k
    ("var", 64 * 1 * 2, "within-row", "within one query"),
    ("mean_scaled", 64 / 64, "divided-by-d_k", "√d_k"),
    ("var_scaled", 192 / 8, "sqrt-d_k", "(√d_k)²"),
    ("var_scaled", 1, "unit", "zero-mean"),
    ("mean", 65, "value", "not it"),
])
def test_2_mistakes_are_named(part, wrong, key, word):
    verdict = ch02.check_2({**MOMENTS, part: wrong})
    assert verdict.ok is False and verdict.mistake == key
    assert word in verdict.message


def test_2_unanswered():
    assert ch02.check_2({k: ... for k in MOMENTS}).ok is None
    assert ch02.check_2({**MOMENTS, "var_scaled": ...}).ok is None


def _chapter_medians(seed=1, draws=500):
    """The chapter's route: draw q and k (σ = 2, d_k = 256), 16 keys per query."""
    rng = np.random.default_rng(seed)
    q = 2 * rng.standard_normal((draws, 1, 256))
    k = 2 * rng.standard_normal((draws, 16, 256))
    raw = (q * k).sum(axis=-1)
    out = []
    for divisor in (16, 64):
        s = raw / divisor
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        out.append(float(np.median((w / w.sum(axis=-1, keepdims=True)).max(axis=-1))))
    return out


# By hand: Var(q · k) = σ_q² σ_k² d_k = 4 · 4 · 256 = 4096, so the divisor is
# √4096 = 64.
PAPER, OURS = _chapter_medians()
ANSWER_3 = {"divisor": 64, "max_paper": PAPER, "max_yours": OURS}


@pytest.mark.parametrize("seed", [1, 7])
def test_3_reference_is_right(seed):
    paper, ours = _chapter_medians(seed)
    answer = {"divisor": 64, "max_paper": paper, "max_yours": ours}
    assert ch02.check_3(answer).ok is True
    # the solution's rounded values
    assert ch02.check_3({"divisor": 64.0, "max_paper": 0.690, "max_yours": 0.225}).ok


def _reader_wrong_axis():
    rng = np.random.default_rng(1)
    raw = (2 * rng.standard_normal((500, 1, 256)) * 2
           * rng.standard_normal((500, 16, 256))).sum(axis=-1)
    s = raw / 16
    w = np.exp(s - s.max(axis=0))
    return float(np.median((w / w.sum(axis=0)).max(axis=-1)))  # softmax over the draws


@pytest.mark.parametrize("part, wrong, key, word", [
    ("divisor", 16, "paper-divisor", "σ_q and σ_k"),
    ("divisor", 2 * 16, "sigma-once", "both"),
    ("divisor", 4096, "variance", "1/4096"),
    ("divisor", 128, "value", "0.25"),                       # variance 4096 / 128²
    ("max_paper", _reader_wrong_axis(), "wrong-axis", "last axis"),
    ("max_paper", 3.5, "above-one", "at most 1"),
    ("max_paper", _chapter_medians()[1], "unit-components", "σ = 2"),
    ("max_yours", 0.42, "value", "sampling"),                # the median with σ√d_k
])
def test_3_mistakes_are_named(part, wrong, key, word):
    verdict = ch02.check_3({**ANSWER_3, part: wrong})
    assert verdict.ok is False and verdict.mistake == key
    assert word in verdict.message
    assert "64" not in verdict.message


def test_3_swapped_and_unanswered():
    verdict = ch02.check_3({"divisor": 64, "max_paper": OURS, "max_yours": PAPER})
    assert verdict.mistake == "swapped" and "swapped" in verdict.message
    assert ch02.check_3({"divisor": ..., "max_paper": ..., "max_yours": ...}).ok is None
    assert ch02.check_3({"divisor": 64, "max_paper": ..., "max_yours": ...}).ok is None


def test_4_reference_is_right():
    # ‖J‖_F² = (m − 1)/m²: 0, 1/4, 2/9, 3/16, ... decreasing from m = 2 on
    norms = [Fraction(m - 1, m * m) for m in range(1, 17)]
    m = 1 + norms.index(max(norms))
    assert m == 2
    assert ch02.check_4(m).ok is True


@pytest.mark.parametrize("wrong, key, word", [
    (16, "fully-uniform", "smaller m"),
    (1, "one-hot", "J = 0"),
    (0.5, "the-norm", "asks for m"),
    (3, "value", "another m"),
    (2.5, "not-a-count", "integer"),
])
def test_4_mistakes_are_named(wrong, key, word):
    verdict = ch02.check_4(wrong)
    assert verdict.ok is False and verdict.mistake == key
    assert word in verdict.message


def test_4_unanswered():
    assert ch02.check_4(...).ok is None

"""book/exercises/ch03.py: chapter 3's checkers accept the reference answers, computed
here by another route (torch.autograd, hand-written finite differences, bisection,
hand-derived limits), and name the mistakes a reader makes."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch03  # noqa: E402

S = [2.0, 1.0, 0.5, -1.0]


def _log_z(s):
    return math.log(sum(math.exp(x) for x in s))


def _central(f, s, h=1e-6, divide=2.0, flip=False):
    """A reader's central differences of f at s, with the usual slips as options."""
    out = []
    for i in range(len(s)):
        up = [x + (h if j == i else 0.0) for j, x in enumerate(s)]
        down = [x - (h if j == i else 0.0) for j, x in enumerate(s)]
        diff = f(down) - f(up) if flip else f(up) - f(down)
        out.append(diff / (divide * h))
    return np.array(out)


def test_1_reference_is_right():
    s = torch.tensor(S, dtype=torch.float64, requires_grad=True)
    torch.logsumexp(s, dim=0).backward()
    assert ch03.check_1(s.grad.numpy()).ok is True            # autograd
    assert ch03.check_1(_central(_log_z, S)).ok is True        # the exercise's route
    assert ch03.check_1(s.grad).ok is True                     # a tensor is fine too


@pytest.mark.parametrize("wrong, key, word", [
    (_central(lambda s: sum(math.exp(x) for x in s), S, h=1e-7), "gradient-of-Z",
     "log Z"),
    (_central(_log_z, S, flip=True), "sign", "wrong sign"),
    (_central(_log_z, S, divide=1.0), "h-not-2h", "2h"),
    (_log_z(S), "log-Z", "log Z itself"),
    (np.full(4, 0.25), "value", "differ"),
])
def test_1_mistakes_are_named(wrong, key, word):
    verdict = ch03.check_1(wrong)
    assert verdict.ok is False and verdict.mistake == key
    assert word in verdict.message


def _entropy(a, log=np.log):
    return float(-np.sum(a * log(a)))


def _softmax(s, tau=1.0):
    e = np.exp((np.asarray(s) - max(s)) / tau)
    return e / e.sum()


def test_2_reference_is_right():
    tau = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    a = torch.softmax(torch.tensor(S, dtype=torch.float64) / tau, dim=0)
    (-(a * a.log()).sum()).backward()
    assert ch03.check_2(tau.grad.item()).ok is True            # autograd
    assert ch03.check_2(0.533682).ok is True           # as the solution prints it


def _slope(log=np.log, in_beta=False, h=1e-5):
    if in_beta:                                                # dη/dβ at β = 1
        def f(b):
            return _entropy(_softmax(S, 1 / b), log)
    else:
        def f(t):
            return _entropy(_softmax(S, t), log)
    return (f(1 + h) - f(1 - h)) / (2 * h)


A1 = _softmax(S)


@pytest.mark.parametrize("wrong, key, word", [
    (_slope(log=np.log2), "bits", "natural log"),
    (_slope(in_beta=True), "sign", "wrong sign"),
    (float(np.var(S)), "unweighted", "weight each score"),
    (float(A1 @ np.square(S)), "no-mean", "μ²"),
    (math.sqrt(_slope()), "std", "standard deviation"),
    (1.0, "value", "not it"),
])
def test_2_mistakes_are_named(wrong, key, word):
    verdict = ch03.check_2(wrong)
    assert verdict.ok is False and verdict.mistake == key
    assert word in verdict.message
    assert "0.53" not in verdict.message


def test_3_reference_is_right():
    # by hand: relative to the maximum 3 the factors are e^{-2/τ} -> 0, 1, 1
    assert ch03.check_3([0.0, 0.5, 0.5]).ok is True
    assert ch03.check_3(_softmax([1.0, 3.0, 3.0], 0.01)).ok is True


def _naive(s, tau):
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(np.asarray(s) / tau)
        return e / e.sum()


@pytest.mark.parametrize("wrong, key, word", [
    (np.eye(3)[np.argmax([1.0, 3.0, 3.0])], "argmax", "argmax"),
    (_naive([1.0, 3.0, 3.0], 1e-3), "nan", "overflowed"),
    (np.exp((np.array([1.0, 3.0, 3.0]) - 3) / 0.01), "not-normalised", "sum to 2"),
    (_softmax([1.0, 3.0, 3.0]), "tau-one", "τ = 1"),
    (_softmax(np.array([1.0, 3.0, 3.0]) * 0.01), "times-tau", "multiplied"),
    ([1 / 3, 1 / 3, 1 / 3], "uniform", "τ → ∞"),
    ([0.0, 0.4, 0.6], "untied", "tied"),
])
def test_3_mistakes_are_named(wrong, key, word):
    verdict = ch03.check_3(wrong)
    assert verdict.ok is False and verdict.mistake == key
    assert word in verdict.message
    assert "0.5" not in verdict.message


def _bisect_half():
    lo, hi = 0.01, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _softmax(S, mid)[0] > 0.5 else (lo, mid)
    return lo


def test_4_reference_is_right():
    tau = _bisect_half()
    assert _softmax(S, tau)[0] == pytest.approx(0.5, abs=1e-12)
    assert ch03.check_4(tau).ok is True
    assert ch03.check_4(1.4747).ok is True             # as the solution prints it


@pytest.mark.parametrize("wrong, key, word", [
    (1 / _bisect_half(), "inverse", "1/τ"),                    # softmax(s * tau)
    (1.0, "top-weight", "more than 1/2"),
    (2.0, "top-weight", "less than 1/2"),
    (-1.47, "not-positive", "positive"),
])
def test_4_mistakes_are_named(wrong, key, word):
    verdict = ch03.check_4(wrong)
    assert verdict.ok is False and verdict.mistake == key
    assert word in verdict.message
    assert "1.47" not in verdict.message


@pytest.mark.parametrize("check", [ch03.check_1, ch03.check_2, ch03.check_3,
                                   ch03.check_4])
def test_unanswered(check):
    assert check(...).ok is None
    assert check(None).ok is None

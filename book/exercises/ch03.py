"""Checkers for the exercises of chapter 3, the softmax and its temperature.

- ``check_1(grad)``: ∂ log Z / ∂s_i by central finite differences, s = (2, 1, 0.5, −1).
- ``check_2(slope)``: dη/dτ at τ = 1 for the same scores.
- ``check_3(weights)``: the limit of softmax(s/τ) as τ → 0 for s = (1, 3, 3).
- ``check_4(tau)``: the temperature at which the top weight of s = (2, 1, 0.5, −1) is
  1/2.

The derivations of exercises 1 and 2, and why τ* is unique (exercise 4), keep their
folded solutions.
"""

from __future__ import annotations

import math

import numpy as np

from . import Mistake, Verdict, check_value, wrong

S = np.array([2.0, 1.0, 0.5, -1.0])


def _weights(s, tau: float = 1.0) -> np.ndarray:
    """softmax(s / τ), written out: e^{(s_i − max s)/τ} over their sum."""
    e = np.array([math.exp((x - max(s)) / tau) for x in s])
    return e / e.sum()


def check_1(grad) -> Verdict:
    a = _weights(S)                                   # ∂ log Z / ∂s_i = e^{s_i} / Z
    Z = sum(math.exp(x) for x in S)
    mistakes = [
        Mistake("gradient-of-Z", a * Z,
                "that is the gradient of Z, not of log Z: the chain rule divides by "
                "Z."),
        Mistake("sign", -a,
                "every entry has the wrong sign: the central difference is "
                "(f(s + h e_i) − f(s − h e_i)) / 2h."),
        Mistake("h-not-2h", 2 * a,
                "twice the derivative: the central difference divides by 2h, not h."),
        Mistake("log-Z", lambda g: bool(np.allclose(g, math.log(Z))),
                "that is log Z itself: the gradient has one entry per score."),
    ]
    return check_value(grad, a, what="the gradient", mistakes=mistakes,
                       rtol=1e-5, atol=1e-8)


def check_2(slope) -> Verdict:
    a = _weights(S)
    mean = float(a @ S)
    var = float(a @ (S - mean) ** 2)                  # Var_a(s), dη/dτ at τ = 1
    mistakes = [
        Mistake("bits", var / math.log(2),
                "that is the slope of the entropy in bits: η uses the natural log."),
        Mistake("sign", -var,
                "the wrong sign: the entropy grows with τ (is that dη/d(1/τ)?)."),
        Mistake("unweighted", float(np.var(S)),
                "that is the plain variance of the scores: weight each score by its "
                "a_i."),
        Mistake("no-mean", float(a @ S**2),
                "that is Σ a_i s_i²: the variance subtracts the squared mean μ²."),
        Mistake("std", math.sqrt(var),
                "that is a standard deviation: the formula has the variance."),
    ]
    return check_value(slope, var, what="dη/dτ", mistakes=mistakes, rtol=1e-5,
                       atol=1e-8)


def check_3(weights) -> Verdict:
    s = np.array([1.0, 3.0, 3.0])
    top = s == s.max()
    expected = top / top.sum()                        # the maxima share the weight
    first_max = np.zeros(3)
    first_max[int(np.argmax(s))] = 1.0
    mistakes = [
        Mistake("argmax", first_max,
                "one-hot on the first maximum: that is how argmax breaks a tie, not "
                "the softmax's limit."),
        Mistake("tau-one", _weights(s),
                "those are the weights at τ = 1: divide the scores by a small τ."),
        Mistake("times-tau", _weights(s * 0.01),
                "you multiplied the scores by τ: the softmax divides them by τ."),
        Mistake("uniform", np.full(3, 1 / 3),
                "equal weights are the limit τ → ∞, not τ → 0."),
        Mistake("nan", lambda a: a.size == 3 and bool(np.isnan(a).any()),
                "NaN: e^{s/τ} overflowed to inf, and inf / inf is NaN. Subtract the "
                "largest score before the exponential."),
        Mistake("untied", lambda a: a.size == 3 and bool(np.isfinite(a).all())
                and abs(a.sum() - 1) <= 1e-6 and not math.isclose(a[1], a[2]),
                "the two largest scores are tied: nothing tells their weights apart."),
        Mistake("not-normalised", lambda a: a.size == 3 and bool(np.isfinite(a).all())
                and abs(a.sum() - 1) > 1e-6,
                "your weights do not sum to 1: did you divide by the sum?"),
    ]
    verdict = check_value(weights, expected, what="the limit", mistakes=mistakes,
                          rtol=1e-6, atol=1e-9)
    if verdict.mistake == "not-normalised":
        total = float(np.sum(np.asarray(weights, dtype=float)))
        return wrong(f"your weights sum to {total:.4g}: did you divide by the sum?",
                     "not-normalised")
    return verdict


def _top_weight(tau: float) -> float:
    return float(_weights(S, tau)[0])


def _tau_half() -> float:
    """The τ at which the top weight is 1/2: Newton's method on log a_1(τ) + log 2."""
    tau = 1.0
    for _ in range(50):
        a = _weights(S, tau)
        # log a_1 = s_1/τ − log Z(τ), so d log a_1 / dτ = −(s_1 − μ) / τ², μ = Σ a_i s_i
        slope = -(S[0] - a @ S) / tau**2
        tau -= (math.log(a[0]) + math.log(2)) / slope
    return tau


def check_4(tau) -> Verdict:
    expected = _tau_half()
    mistakes = [
        Mistake("inverse", 1 / expected,
                "that is 1/τ: the softmax divides the scores by τ."),
    ]
    verdict = check_value(tau, expected, what="τ*", mistakes=mistakes, rtol=1e-4,
                          atol=0)
    if verdict.mistake == "value":
        t = float(np.asarray(tau, dtype=float))
        if not t > 0:
            return wrong("a temperature is positive.", "not-positive")
        a = _top_weight(t)
        side = ("more than 1/2: τ* is warmer" if a > 0.5
                else "less than 1/2: τ* is colder")
        return wrong(f"at your τ the top weight is {a:.4f}, {side}.", "top-weight")
    return verdict

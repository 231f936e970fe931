"""Checkers for the exercises of chapter 2, scaling and variance.

- ``check_1(var)``: the predicted variance of q · k for components uniform on [-1, 1],
  d_k = 64.
- ``check_2(moments)``: the mean and variance of q · k and of q · k / √d_k for
  components of mean 1 and variance 1, d_k = 64.
- ``check_3(answer)``: the divisor that gives unit-variance scores for σ_q = σ_k = 2,
  d_k = 256, and the median largest softmax weight over 16 keys with √d_k and with it
  (sampled, so within a sampling tolerance).
- ``check_4(m)``: the m for which the softmax uniform over m keys has the largest ‖J‖_F.

The proofs of exercise 4 keep their folded solution; only its m is checked.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from . import Mistake, Verdict, check_value, wrong
from . import check_parts

D_K = 64


def _number(value) -> float | None:
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None
    return float(a) if a.size == 1 else None


def check_1(var) -> Verdict:
    sigma2 = 1 / 3                               # variance of uniform [-1, 1]
    expected = D_K * sigma2 * sigma2             # d_k terms of variance σ²σ²
    mistakes = [
        Mistake("sigma-squared", D_K * sigma2,
                "that is σ² d_k: the variance of a product of two independent "
                "zero-mean components is σ² · σ², not σ²."),
        Mistake("unit-variance", D_K,
                "that assumes components of variance 1; uniform on [−1, 1] has a "
                "smaller variance."),
        Mistake("std", math.sqrt(expected),
                "that is a standard deviation: the question asks for the variance."),
        Mistake("one-term", sigma2 * sigma2,
                "that is the variance of one term q_c k_c: q · k adds d_k of them."),
        Mistake("sampled",
                lambda a: a.size == 1 and abs(a.item() / expected - 1) < 0.05,
                "close, but not the prediction: a sampled or a rounded value? The "
                "prediction is exact; write it as a fraction and let Python divide."),
    ]
    return check_value(var, expected, what="the variance", mistakes=mistakes, rtol=1e-4)


def check_2(moments) -> Verdict:
    mu, var = 1.0, 1.0                           # of every component, q and k alike
    term_var = (var + mu**2) * (var + mu**2) - mu**4       # E[(qk)²] − (E[qk])²
    expected = {"mean": D_K * mu * mu, "var": D_K * term_var,
                "mean_scaled": D_K * mu * mu / math.sqrt(D_K),
                "var_scaled": D_K * term_var / D_K}
    within = D_K * var * (var + mu**2)            # spread inside one row
    mistakes = {
        "var": [
            Mistake("zero-mean", D_K * var * var,
                    "that is d_k σ_q² σ_k², the zero-mean case: the means add to the "
                    "variance of each term."),
            Mistake("no-mean-squared", D_K * (var + mu**2) ** 2,
                    "E[(q_c k_c)²] is not the variance of q_c k_c: subtract the square "
                    "of its mean."),
            Mistake("within-row", within,
                    "that is the spread of the scores within one query's row; the "
                    "question asks for the variance over all pairs."),
        ],
        "mean_scaled": [
            Mistake("divided-by-d_k", D_K * mu * mu / D_K,
                    "the scores are divided by √d_k, and so is their mean."),
        ],
        "var_scaled": [
            Mistake("sqrt-d_k", D_K * term_var / math.sqrt(D_K),
                    "dividing by √d_k divides the variance by (√d_k)² = d_k."),
            Mistake("unit", 1.0,
                    "1 is the zero-mean result: with mean 1 the scaled variance is not "
                    "1."),
            Mistake("within-row", within / D_K,
                    "that is the spread within one query's row; the question asks for "
                    "the variance over all pairs."),
        ],
    }
    return check_parts(moments, expected, mistakes=mistakes, rtol=1e-6, atol=1e-9,
                       fallback=lambda k, a: "that is not it.")


SIGMA, D_K3, N_KEYS = 2.0, 256, 16


@lru_cache(maxsize=1)
def _medians(n_draws: int = 50_000):
    """Median largest weight over 16 keys with √d_k and with σ_q σ_k √d_k.

    For a fixed query q, each q · k_j is normal with variance σ_k² |q|², and
    |q|² = σ_q² χ²(d_k): so the scores are drawn without drawing q and k (seeded).
    """
    rng = np.random.default_rng(2)
    length = SIGMA * np.sqrt(rng.chisquare(D_K3, size=(n_draws, 1)))      # |q|
    raw = SIGMA * length * rng.standard_normal((n_draws, N_KEYS))         # q · k_j
    out = []
    for divisor in (math.sqrt(D_K3), SIGMA * SIGMA * math.sqrt(D_K3)):
        s = raw / divisor
        a = np.exp(s - s.max(axis=-1, keepdims=True))
        out.append(float(np.median((a / a.sum(axis=-1, keepdims=True)).max(axis=-1))))
    return tuple(out)


def check_3(answer) -> Verdict:
    divisor = SIGMA * SIGMA * math.sqrt(D_K3)    # std of q · k: σ_q σ_k √d_k
    paper, ours = _medians()
    score_var = SIGMA**4 * D_K3                   # variance of q · k

    def fallback(key, value):
        if key != "divisor":
            return ("that is further from the median than sampling explains (a few "
                    "hundred draws are enough).")
        d = _number(value)
        if not d:
            return "give one number, not 0."
        return f"with it the scores' variance is {score_var / d**2:.4g}, not 1."

    below = Mistake("wrong-axis", lambda a: a.size == 1 and a.item() < 1 / N_KEYS,
                    "below 1/16: the largest of 16 weights that sum to 1 is at least "
                    "1/16. Did you take the softmax over the keys (the last axis)?")
    above = Mistake("above-one", lambda a: a.size == 1 and a.item() > 1,
                    "a weight is at most 1: did you take the softmax?")
    mistakes = {
        "divisor": [
            Mistake("paper-divisor", math.sqrt(D_K3),
                    "with √d_k alone the scores' variance is σ_q² σ_k² = 16, not 1: "
                    "the divisor has to account for σ_q and σ_k."),
            Mistake("sigma-once", SIGMA * math.sqrt(D_K3),
                    "with σ√d_k the scores' variance is 4, not 1: q · k carries σ_q "
                    "and σ_k, both."),
            Mistake("variance", score_var,
                    "that is the variance of q · k: dividing by it leaves a variance "
                    "of 1/4096, not 1."),
        ],
        "max_paper": [below, above, Mistake(
            "unit-components", lambda a: a.size == 1 and abs(a.item() - ours) < 0.03,
            "that is what components of variance 1 give: draw them with σ = 2.")],
        "max_yours": [below, above],
    }
    whole = [("swapped", lambda p: abs(_number(p["max_paper"]) - ours) < 0.03
              and abs(_number(p["max_yours"]) - paper) < 0.08,
              "the two medians are swapped: which divisor is the paper's?")]
    expected = {"divisor": divisor, "max_paper": paper, "max_yours": ours}
    tolerance = {"divisor": 1e-6, "max_paper": 0.08, "max_yours": 0.03}
    return check_parts(answer, expected, mistakes=mistakes, whole=whole, rtol=0,
                       atol=tolerance, fallback=fallback)


def check_4(m) -> Verdict:
    n = N_KEYS
    norms = {k: math.sqrt(k - 1) / k for k in range(1, n + 1)}
    expected = max(norms, key=norms.get)
    mistakes = [
        Mistake("fully-uniform", n,
                "that is the fully uniform softmax, over all 16 keys: compare ‖J‖_F "
                "for a few smaller m."),
        Mistake("one-hot", 1, "uniform over 1 key is one-hot, and then J = 0."),
        Mistake("the-norm", norms[expected],
                "that is the largest ‖J‖_F itself: the question asks for m."),
    ]
    verdict = check_value(m, expected, what="m", mistakes=mistakes, rtol=0, atol=0)
    if verdict.mistake == "value":
        k = _number(m)
        if k is None or k != int(k) or not 1 <= k <= n:
            return wrong("m counts keys: an integer from 1 to 16.", "not-a-count")
        return wrong(f"at m = {int(k)}, ‖J‖_F = {norms[int(k)]:.4f}: another m gives "
                     "more.", "value")
    return verdict

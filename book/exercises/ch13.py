"""Checkers for chapter 13's exercises (gradients by hand).

check_1(dQ, dK): the gradients of L = ΣC with respect to Q and K on "Chai piyo".
check_2(gap_37000, gap_11): the logit gap of the correct token at the minimum of the
    smoothed loss (ε = 0.1), for n_vocab = 37000 and for n_vocab = 11.
check_3(delta_best): the step δ (a power of ten) whose central difference agrees best with
    the hand gradient; accepted from 1e-6 to 1e-4, where neither the truncation nor the
    rounding error dominates (the chapter's own run finds 1e-4 or 1e-5).
check_4(cos_eps, ratio): for the statement's seeded row and upstream gradient, the
    cosine between LayerNorm's dx (ε = 1e-5) and x - μ, and |dx at ε = 0| / |dx at ε|.
"""

from __future__ import annotations

import math

import numpy as np

import mini_transformer as mt

from . import UNANSWERED, Mistake, Verdict, right, unanswered, wrong
from . import Part, check_each

# "Chai piyo": two tokens, d_model = 4, d_k = d_v = 2, the hand-made projections
X = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])
W_Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
W_K = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
W_V = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])


def check_1(dQ, dK) -> Verdict:
    """dQ, dK: the gradients of L = ΣC (dC = all ones) with respect to Q and K."""
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    dC = np.ones((2, 2))
    _, A = mt.scaled_dot_product_attention(Q, K, V)
    dQ_, dK_, dV_ = mt.scaled_dot_product_attention_backward(Q, K, V, dC)
    dA = dC @ V.T
    dS_no_D = A * dA                     # the softmax's row term D left out
    scale = math.sqrt(Q.shape[-1])

    def common(name, no_D):
        return [
            Mistake("no-D", no_D,
                    f"your {name} leaves out the softmax's row term: "
                    "dS = A ∘ (dA − D), with D_i the A-weighted mean of row i of dA."),
            Mistake("dV", dV_,
                    f"your {name} is dV = Aᵀ dC, the gradient of the values."),
            Mistake("dA", dA,
                    f"your {name} is dA = dC Vᵀ: it still has to go through the "
                    "softmax and the product with the other matrix."),
        ]

    return check_each(
        Part("dQ", dQ, dQ_, common("dQ", dS_no_D @ K / scale), atol=1e-9),
        Part("dK", dK, dK_, common("dK", dS_no_D.T @ Q / scale), atol=1e-9),
        praise="Now say which property of V makes it so.")


def _gap(n_vocab, eps=0.1, log=math.log):
    return log((1 - eps + eps / n_vocab) / (eps / n_vocab))


def check_2(gap_37000, gap_11) -> Verdict:
    """gap_37000, gap_11: o_correct − o_other at the loss's minimum, ε = 0.1."""

    def mistakes(n):
        other = 11 if n == 37000 else 37000
        return [
            Mistake("log2", _gap(n, log=math.log2),
                    "your gap is in bits: logits are natural logarithms."),
            Mistake("log10", _gap(n, log=math.log10),
                    "your gap uses log10: logits are natural logarithms."),
            Mistake("ratio", _gap(n, log=lambda r: r),
                    "your gap is the ratio of the two probabilities: the logits differ "
                    "by its logarithm."),
            Mistake("no-eps-on-target", math.log((1 - 0.1) / (0.1 / n)),
                    "your correct token's target is 1 − ε: smoothing gives it "
                    "ε/n_vocab as well, as to every token."),
            Mistake("eps-over-n-minus-1", math.log((1 - 0.1) / (0.1 / (n - 1))),
                    "you spread ε over the n_vocab − 1 other tokens: the chapter's "
                    "smoothing spreads it over all n_vocab, the correct one included."),
            Mistake("swapped", _gap(other),
                    f"that is the gap for n_vocab = {other}."),
        ]

    return check_each(
        Part("gap_37000", gap_37000, _gap(37000), mistakes(37000), rtol=0, atol=0.006),
        Part("gap_11", gap_11, _gap(11), mistakes(11), rtol=0, atol=0.006),
        praise="Without smoothing, what stops the gap from growing?")


def check_3(delta_best) -> Verdict:
    """delta_best: the step δ of (L(w + δ) − L(w − δ)) / 2δ closest to the hand gradient."""
    if unanswered(delta_best):
        return UNANSWERED
    try:
        delta = float(delta_best)
    except (TypeError, ValueError):
        return wrong(f"delta_best should be a number, got {type(delta_best).__name__}.")
    if not math.isfinite(delta) or delta <= 0:
        return wrong("delta_best should be a positive step.", "not-positive")
    if delta > 1.5e-4:
        return wrong(
            "at that δ the difference still carries the truncation error of the Taylor "
            "series, about δ² L‴/6: a smaller δ does better.", "truncation")
    if delta < 0.5e-6:
        return wrong(
            "at that δ the two losses differ only in their last digits: their rounding "
            "error, divided by 2δ, dominates. A larger δ does better.", "rounding")
    return right("Both ends do worse: explain each.")


def _ex4_data():
    r = np.random.default_rng(3)
    x = 1e-3 * r.normal(size=8)
    g = r.normal(size=8)
    return x, g


def check_4(cos_eps, ratio) -> Verdict:
    """cos_eps: cosine of dx (ε = 1e-5) with x − μ; ratio: |dx(ε = 0)| / |dx(ε)|."""
    x, g = _ex4_data()
    dx_eps, _, _ = mt.layer_norm_backward(x, np.ones(8), g, eps=1e-5)
    dx_0, _, _ = mt.layer_norm_backward(x, np.ones(8), g, eps=0.0)
    u = x - x.mean()

    def cosine(a):
        return abs(a @ u) / (np.linalg.norm(a) * np.linalg.norm(u))

    n_eps, n_0 = np.linalg.norm(dx_eps), np.linalg.norm(dx_0)
    if not unanswered(cos_eps) and np.ndim(cos_eps) == 0:
        try:
            cos_eps = abs(float(cos_eps))   # the sign depends on g, not on the question
        except (TypeError, ValueError):
            pass
    var = float(np.mean(u**2))
    cos_mistakes = [
        Mistake("eps-zero", lambda a: a.ndim == 0 and abs(float(a)) < 1e-6,
                "your cosine is 0: that is what ε = 0 gives (or the cosine with the "
                "vector of ones). Use the default ε."),
        Mistake("degrees", math.degrees(math.acos(cosine(dx_eps))),
                "cos_eps is an angle in degrees: give its cosine."),
    ]
    ratio_mistakes = [
        Mistake("inverted", n_eps / n_0,
                "your ratio is upside down: the gradient with ε = 0 over the one "
                "with ε."),
        Mistake("sigma-ratio", math.sqrt((var + 1e-5) / var),
                "your ratio is that of the two σ's: the gradient also has the variance "
                "term, which changes with ε too. Compute both gradients."),
    ]
    return check_each(
        Part("cos_eps", cos_eps, cosine(dx_eps), cos_mistakes, rtol=5e-3, atol=1e-6),
        Part("ratio", ratio, n_0 / n_eps, ratio_mistakes, rtol=5e-3),
        praise="And dx ⊥ 1: does it still hold?")

"""Checkers for chapter 13's exercises (gradients by hand).

check_1(dQ, dK): the gradients of L = ΣC with respect to Q and K on "Chai piyo".
check_2(gap_37000, gap_11): the logit gap of the correct token at the minimum of the
    smoothed loss (ε = 0.1), for n_vocab = 37000 and for n_vocab = 11.
check_3(delta_best, fd_errors): the errors |central difference − hand gradient| of one
    entry of the model's gradient for δ = 1e-1 ... 1e-10, and the δ of the smallest one.
    The errors at δ = 1e-1 ... 1e-3 (truncation, the same on every machine) are compared
    with the checker's own; the smaller ones depend on rounding and are only required to
    be consistent with delta_best.
check_4(cos_eps, ratio): for the statement's seeded row and upstream gradient, the
    cosine between LayerNorm's dx (ε = 1e-5) and x - μ, and |dx at ε = 0| / |dx at ε|.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

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

    def near(b):
        # the same mistake computed with A rounded to 4 decimals, as the chapter prints it
        return lambda a: a.shape == b.shape and bool(np.allclose(a, b, rtol=2e-3,
                                                                 atol=2e-4))

    def common(name, no_D):
        return [
            Mistake("no-D", near(no_D),
                    f"your {name} leaves out the softmax's row term: "
                    "dS = A ∘ (dA − D), with D_i the A-weighted mean of row i of dA."),
            Mistake("dV", dV_,
                    f"your {name} is dV = Aᵀ dC, the gradient of the values."),
            Mistake("dA", dA,
                    f"your {name} is dA = dC Vᵀ: it still has to go through the "
                    "softmax and the product with the other matrix."),
        ]

    def no_scale(name, unscaled):
        # the row term left out and the 1/√d_k forgotten as well
        return [Mistake("no-D-no-scale", near(unscaled),
                        f"your {name} leaves out the softmax's row term, "
                        "dS = A ∘ (dA − D), and the factor 1/√d_k of S = QKᵀ/√d_k.")]

    return check_each(
        Part("dQ", dQ, dQ_, common("dQ", dS_no_D @ K / scale)
             + no_scale("dQ", dS_no_D @ K), atol=1e-9),
        Part("dK", dK, dK_, common("dK", dS_no_D.T @ Q / scale)
             + no_scale("dK", dS_no_D.T @ Q), atol=1e-9),
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


DELTAS = tuple(10.0 ** -k for k in range(1, 11))   # 1e-1 ... 1e-10
PAD = 10


def ex3_setup():
    """The chapter's small model and batch (its own generator, seed 13), as it builds them."""
    rng = np.random.default_rng(13)
    model = mt.TransformerParams.random(rng, vocab_size=11, d_model=8, n_heads=2, d_ff=16,
                                        n_layers=2)
    src_len = [5, 3, 4]
    src = rng.integers(0, PAD, size=(3, 5))
    for s, n_s in enumerate(src_len):
        src[s, n_s:] = PAD
    src_mask = mt.padding_mask(src_len, 5)
    tgt_in = rng.integers(0, PAD, size=(3, 4))
    tgt_out = rng.integers(0, PAD, size=(3, 4))
    tgt_in[1, 2:] = tgt_out[1, 2:] = PAD
    return model, src, tgt_in, tgt_out, src_mask


def _ex3_errors(deltas=DELTAS[:3], one_sided=False):
    """|difference − hand gradient| of encoder_layers[0].attn.W_Q[0, 1, 2] for each δ."""
    model, src, tgt_in, tgt_out, src_mask = ex3_setup()
    _, grads = mt.loss_and_grads(model, src, tgt_in, tgt_out, label_smoothing=0.1,
                                 ignore_index=PAD, src_mask=src_mask)
    exact = float(grads.encoder_layers[0].attn.W_Q[0, 1, 2])

    def loss_at(delta):
        layer = model.encoder_layers[0]
        W = np.array(layer.attn.W_Q, copy=True)
        W[0, 1, 2] += delta
        changed = dataclasses.replace(model, encoder_layers=(
            dataclasses.replace(layer, attn=dataclasses.replace(layer.attn, W_Q=W)),
            *model.encoder_layers[1:]))
        return float(mt.cross_entropy(mt.transformer(src, tgt_in, changed, src_mask),
                                      tgt_out, 0.1, PAD))

    if one_sided:
        base = loss_at(0.0)
        return {d: abs((loss_at(d) - base) / d - exact) for d in deltas}
    return {d: abs((loss_at(d) - loss_at(-d)) / (2 * d) - exact) for d in deltas}


def _their_errors(fd_errors):
    """fd_errors as {δ: error} on DELTAS, or a message saying what is wrong with it."""
    if not isinstance(fd_errors, Mapping):
        return ("fd_errors should be a dict {δ: error}, one entry per δ from 1e-1 to "
                f"1e-10, got {type(fd_errors).__name__}.")
    out = {}
    for d in DELTAS:
        keys = [k for k in fd_errors
                if isinstance(k, (int, float, np.floating)) and math.isclose(k, d, rel_tol=1e-6)]
        if not keys:
            return f"fd_errors has no entry for δ = {d:.0e}: give all ten, 1e-1 to 1e-10."
        try:
            out[d] = float(fd_errors[keys[0]])
        except (TypeError, ValueError):
            return f"the error for δ = {d:.0e} should be a number."
        if not math.isfinite(out[d]):
            return f"the error for δ = {d:.0e} is not finite."
    return out


def check_3(delta_best, fd_errors=None) -> Verdict:
    """delta_best: the step δ of (L(w + δ) − L(w − δ)) / 2δ closest to the hand gradient;
    fd_errors: {δ: |that difference − the hand gradient|} for δ = 1e-1 ... 1e-10."""
    if unanswered(delta_best) and unanswered(fd_errors):
        return UNANSWERED
    if unanswered(fd_errors):
        return wrong("first compute fd_errors, the error of the central difference for "
                     "every δ from 1e-1 to 1e-10: delta_best is read from it.",
                     "no-errors")
    errors = _their_errors(fd_errors)
    if isinstance(errors, str):
        return wrong(errors, "errors-format")
    if any(e < 0 for e in errors.values()):
        return wrong("an error is negative: take the absolute difference between the "
                     "central difference and the hand gradient.", "signed")
    ours = _ex3_errors()
    off = [d for d in ours if not math.isclose(errors[d], ours[d], rel_tol=0.05)]
    if off:
        d = off[0]
        one_sided = _ex3_errors((d,), one_sided=True)[d]
        if math.isclose(errors[d], one_sided, rel_tol=0.05):
            return wrong(f"your error at δ = {d:.0e} is that of the one-sided difference "
                         "(L(w + δ) − L(w)) / δ: the exercise takes the central one, "
                         "(L(w + δ) − L(w − δ)) / 2δ.", "one-sided")
        return wrong(f"your error at δ = {d:.0e}, {errors[d]:.3g}, is not what the central "
                     "difference of the chapter's loss gives there. Use the model, batch, "
                     "label smoothing 0.1 and padding of the chapter's section on the tied "
                     "embedding, and the entry W_Q[0, 1, 2] of encoder_layers[0].",
                     "errors")
    if unanswered(delta_best):
        return Verdict(None, "Your errors are right. Now read delta_best from them.")
    try:
        delta = float(delta_best)
    except (TypeError, ValueError):
        return wrong(f"delta_best should be a number, got {type(delta_best).__name__}.")
    if not math.isfinite(delta) or delta <= 0:
        return wrong("delta_best should be a positive step.", "not-positive")
    smallest = min(errors, key=errors.get)
    if not math.isclose(delta, smallest, rel_tol=1e-6):
        return wrong(f"in your own errors the smallest is at δ = {smallest:.0e}, not at "
                     "your delta_best.", "not-the-smallest")
    if errors[smallest] > 1e-8:
        return wrong("your smallest error is above 1e-8: the central difference at its "
                     "best agrees with the hand gradient much better than that.", "errors")
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
        Mistake("whole-number", lambda a: a.ndim == 0 and float(a) == round(n_0 / n_eps),
                "your ratio is rounded to a whole number: give it to two decimals at "
                "least (the check compares to 0.5%)."),
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

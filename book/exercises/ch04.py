"""Checkers for chapter 4's exercises (scaled dot-product attention).

check_2: the factor rho on W^Q for which "Chai" puts weight 0.99 on "piyo".
check_3: a function bottom_right_mask(n_q, n_k), the causal mask of the newest queries.
check_4: a function masked_attention(Q, K, V, mask) whose output never reads the value
    of a masked key (a NaN there included) and reads every value its query may see as
    it is (a NaN there shows in that query's output).
(Exercise 1 asks for an argument; its solution stays folded.)
"""

from __future__ import annotations

import math

import numpy as np

import mini_transformer as mt
from exercises import Mistake, check_function, check_value, right, unanswered, wrong

# The "Chai piyo" example of the chapter, as the tutorial prints it.
X = np.array([[1.0, 0.0, 1.0, 0.0],    # "Chai"
              [0.0, 1.0, 0.0, 1.0]])   # "piyo"
W_Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
W_K = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
W_V = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])


def _chai_on_piyo(rho: float) -> float:
    """The weight "Chai" puts on "piyo" when W^Q is multiplied by rho."""
    _, w = mt.scaled_dot_product_attention(X @ (rho * W_Q), X @ W_K, X @ W_V)
    return float(w[0, 1])


def check_2(rho):
    """rho > 0 with weight 0.99 of "Chai" on "piyo" when W^Q becomes rho W^Q."""
    d_k = W_K.shape[1]
    S = (X @ W_Q) @ (X @ W_K).T                       # unscaled scores, rho = 1
    gap = S[0, 1] - S[0, 0]                           # "piyo" minus "Chai", unscaled
    scaled_gap = gap / math.sqrt(d_k)
    expected = math.log(99) / scaled_gap
    mistakes = [
        Mistake("no-scaling", math.log(99) / gap,
                "your ρ is what you would need without the scaling: the scores are "
                "divided by √d_k before the softmax."),
        Mistake("divided-by-d_k", math.log(99) / (gap / d_k),
                "you divided the scores by d_k; attention divides them by √d_k."),
        Mistake("log10", math.log10(99) / scaled_gap,
                "you used a base-10 logarithm; the softmax exponentiates with e."),
        Mistake("log2", math.log2(99) / scaled_gap,
                "you used a base-2 logarithm; the softmax exponentiates with e."),
        Mistake("odds-100", math.log(100) / scaled_gap,
                "with your ρ the weight is 0.9901, a little above 0.99: solve "
                "1 / (1 + e^(-x)) = 0.99 for e^(-x) once more."),
        Mistake("gap-not-factor", math.log(99),
                "that is the scaled score gap the weight 0.99 needs, not the factor on "
                "W^Q: how large is the gap for ρ = 1?"),
        Mistake("negative", lambda a: a.ndim == 0 and a < 0,
                "ρ must be positive: with ρ < 0 the query turns away from \"piyo\"."),
    ]
    verdict = check_value(rho, expected, what="your ρ", mistakes=mistakes, rtol=1e-4)
    if verdict.mistake == "value":
        w = _chai_on_piyo(float(np.asarray(rho, dtype=float)))
        if abs(w - 0.99) < 5e-5:          # ρ rounded: the weight is 0.99 to 4 decimals
            return right("The weight is 0.99 to four decimals.")
        return wrong(f"with your ρ, \"Chai\" puts weight {w:.6f} on \"piyo\", "
                     f"{'more' if w > 0.99 else 'less'} than 0.99.", "value")
    return verdict


def _shift(n_q, n_k, k):
    return np.tril(np.ones((n_q, n_k), dtype=bool), k=k)


def check_3(bottom_right_mask):
    """bottom_right_mask(n_q, n_k): bool (n_q, n_k), True where the query may attend."""

    def expected(n_q, n_k):
        # the last n_q rows of the causal mask over all n_k tokens
        return mt.causal_mask(n_k)[n_k - n_q:]

    cases = [((n_q, n_k), expected(n_q, n_k)) for n_q, n_k in ((4, 7), (2, 6), (1, 5),
                                                                 (3, 3))]
    mistakes = [
        Mistake("all-true", lambda n_q, n_k: np.ones((n_q, n_k), dtype=bool),
                "every entry of your mask is True: it masks nothing, so each new query "
                "also sees the keys of the tokens after it."),
        Mistake("upper-left", lambda n_q, n_k: mt.causal_mask(n_q, n_k),
                "this is the upper-left mask: it treats the new queries as the first "
                "tokens, but they are the last n_q of the n_k."),
        Mistake("inverted", lambda n_q, n_k: ~expected(n_q, n_k),
                "True and False are swapped: True means the query may attend."),
        Mistake("hides-itself", lambda n_q, n_k: _shift(n_q, n_k, n_k - n_q - 1),
                "each query is kept from its own key: a token may attend to itself."),
        Mistake("sees-next", lambda n_q, n_k: _shift(n_q, n_k, n_k - n_q + 1),
                "each query sees one key too many, the token after it."),
        Mistake("wrong-direction", lambda n_q, n_k: _shift(n_q, n_k, n_q - n_k),
                "the diagonal moved the wrong way: the offset n_k - n_q has the "
                "wrong sign."),
        Mistake("additive", lambda n_q, n_k: (lambda a: bool(np.isneginf(a).any())),
                "your mask holds -inf: that is an additive mask; return True/False, "
                "True where the query may attend."),
    ]
    verdict = check_function(bottom_right_mask, cases, what="your mask",
                             mistakes=mistakes, rtol=0, atol=0,
                             own_work="NumPy (np.tril, np.ones)")
    if verdict.ok:
        # right values; the package must also take it: a bool mask, not 0/1 numbers
        mask = np.asarray(bottom_right_mask(2, 6))
        if mask.dtype != bool:
            return wrong(f"your mask has the right pattern but holds numbers (dtype "
                         f"{mask.dtype}), and the package refuses it: a number mask is "
                         "added to the scores, so 0/1 would mask nothing. Return a "
                         "boolean array, True where the query may attend.", "not-bool")
    return verdict


def _data4():
    """The six tokens of the chapter's cache exercise (seed 4) and two masks."""
    rng = np.random.default_rng(4)
    Xs = rng.standard_normal((6, 4))
    Q, K, V = Xs @ W_Q, Xs @ W_K, Xs @ W_V
    mask_last = np.ones((6, 6), dtype=bool)
    mask_last[:, -1] = False                 # the last key: masked for every query
    return Q, K, V, mask_last


def check_4(masked_attention):
    """masked_attention(Q, K, V, mask) -> (n_q, d_v); mask bool, True = may attend."""
    Q, K, V, mask_last = _data4()
    V_nan = V.copy()
    V_nan[-1] = np.nan
    # cross-attention with two padding keys whose values are NaN and infinity
    pad = np.array([[True, True, True, True, False, False]] * 2)
    V_pad = V.copy()
    V_pad[4], V_pad[5] = np.nan, np.inf

    def expected(Q, K, V, mask):
        # values of keys no query may see never matter: set them to 0 first
        V = np.where(mask.any(axis=0)[:, None], V, 0.0)
        return mt.scaled_dot_product_attention(Q, K, V, mask=mask)[0]

    cases = [(args, expected(*args)) for args in
             ((Q, K, V, mt.causal_mask(6)), (Q, K, V_nan, mask_last),
              (Q[:2], K, V_pad, pad))]

    def nan_from_finite(Q, K, V, mask):
        finite = bool(np.isfinite(V).all())
        return lambda a: finite and bool(np.isnan(a).any())

    def nan_from_values(Q, K, V, mask):
        finite = bool(np.isfinite(V).all())
        return lambda a: not finite and bool(np.isnan(a).any())

    def cleaned_after(Q, K, V, mask):
        with np.errstate(invalid="ignore"):
            out = mt.scaled_dot_product_attention(Q, K, V, mask=mask)[0]
        return np.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0)

    def inf_left(Q, K, V, mask):
        has_inf = bool(np.isinf(V).any())
        return lambda a: has_inf and bool(np.isnan(a).any())

    mistakes = [
        Mistake("nan-from-0-times-inf", nan_from_finite,
                "your output holds NaN although every input is finite: somewhere an "
                "infinity met a zero (0 * -inf is NaN, and so is inf - inf). Did you "
                "build the mask by multiplying by -inf?"),
        Mistake("inf-through-the-weights", inf_left,
                "your output holds NaN where a masked value is infinite: 0 * inf is "
                "NaN too. Cleaning NaN is not enough: keep every masked value out of the "
                "sum, whatever it holds."),
        Mistake("nan-through-the-weights", nan_from_values,
                "your output holds NaN: the masked key has weight exactly 0, but "
                "0 * NaN is NaN, so the product of the weights with V still reads it."),
        Mistake("mask-ignored",
                lambda Q, K, V, mask: mt.scaled_dot_product_attention(Q, K, V)[0],
                "your output does not depend on the mask: masked keys still get "
                "weight."),
        Mistake("no-scaling",
                lambda Q, K, V, mask: mt.scaled_dot_product_attention(
                    Q * math.sqrt(Q.shape[-1]), K, V, mask=mask)[0],
                "your scores are not divided by √d_k."),
        Mistake("cleaned-after", cleaned_after,
                "you removed the NaN after the product, and with it every output that "
                "it reached: keep the masked values out of the sum instead."),
    ]
    with np.errstate(invalid="ignore", over="ignore"):
        verdict = check_function(masked_attention, cases, what="your masked_attention",
                                 mistakes=mistakes, rtol=1e-9, atol=1e-12,
                                 own_work="NumPy and the package (mt.softmax)")
    if not verdict.ok:
        return verdict
    return _seen_by_one(masked_attention, Q, K, V)


def _seen_by_one(masked_attention, Q, K, V):
    """A causal mask and a NaN value on the last key, which only the last query may
    see: the other queries must not read it, and the last one must (attention reads
    every value its query may see, as it is)."""
    V_last = V.copy()
    V_last[-1] = np.nan
    mask = mt.causal_mask(6)
    expected = mt.scaled_dot_product_attention(Q, K, V, mask=mask)[0][:-1]
    with np.errstate(invalid="ignore", over="ignore"):
        got = masked_attention(Q, K, V_last, mask)
    got = np.asarray(got[0] if isinstance(got, tuple) else got, dtype=float)
    if got.shape != (6, V.shape[1]):
        return wrong(f"with a causal mask your output has shape {got.shape}, not "
                     f"{(6, V.shape[1])}.", "shape")
    if np.isnan(got[:-1]).any():
        return wrong("with a causal mask and a NaN value on the last key, which only the "
                     "last query may see, the other queries' outputs hold NaN: zeroing the "
                     "keys that no query sees is not enough, each query must leave out "
                     "the keys its own row of the mask hides.", "column-cleaned")
    if not np.allclose(got[:-1], expected, rtol=1e-9, atol=1e-12):
        return wrong("with a causal mask and a NaN value on the last key, the queries "
                     "that may not see it get wrong outputs.", "value")
    if not np.isnan(got[-1]).all():
        return wrong("with a causal mask and a NaN value on the last key, the last query, "
                     "which may see that key, gets a finite output: your function changed "
                     "a value its query may see (np.nan_to_num on V?). Leave out only the "
                     "masked keys; attention reads every value its query may see as it "
                     "is, so a NaN there must show.", "visible-cleaned")
    return right()

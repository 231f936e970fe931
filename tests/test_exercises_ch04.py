"""book/exercises/ch04.py: each checker accepts a reference answer written here
by another route, and names the mistake of wrong answers written as a reader would
make them."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch04  # noqa: E402

ANSWER_C = "1.624"  # the first digits of exercise 2's answer: never in a message


def refused(verdict, key, word):
    assert verdict.ok is False, verdict.message
    assert verdict.mistake == key, verdict.message
    assert word in verdict.message
    assert ANSWER_C not in verdict.message


# --- exercise 2: the factor c on W^Q --------------------------------------------------
# By hand: Q K^T of "Chai piyo" is [[0, 4], [4, 0]], so the scaled gap between "piyo"
# and "Chai" in the first row is 4 / sqrt(2) = 2 sqrt(2); with c W^Q it is c 2 sqrt(2),
# and the weight on "piyo" is 1 / (1 + exp(-2 sqrt(2) c)) = 0.99 when exp(-2 sqrt(2) c)
# = 1 / 99.
GAP = 2 * math.sqrt(2)
C = math.log(99) / GAP


def test_2_reference_and_its_rounding_are_right():
    assert ch04.check_2(C).ok is True
    assert ch04.check_2(1.6246).ok is True            # the four decimals of the page
    assert ch04.check_2(np.float32(C)).ok is True


@pytest.mark.parametrize("answer, key, word", [
    (math.log(99) / 4, "no-scaling", "√d_k"),           # gap taken as 4, not 4 / sqrt 2
    (math.log(99) / 2, "divided-by-d_k", "d_k"),        # 4 / 2 instead of 4 / sqrt 2
    (math.log10(99) / GAP, "log10", "base-10"),
    (math.log2(99) / GAP, "log2", "base-2"),
    (math.log(100) / GAP, "odds-100", "0.9901"),       # solved e^-x = 0.01
    (math.log(99), "gap-not-factor", "gap"),           # the gap itself
    (-C, "negative", "positive"),
])
def test_2_mistakes_are_named(answer, key, word):
    refused(ch04.check_2(answer), key, word)


def test_2_other_values_are_told_their_weight():
    # 1.5: the weight is 1 / (1 + exp(-1.5 * 2 sqrt 2)), printed to 6 decimals
    w = 1 / (1 + math.exp(-1.5 * GAP))
    refused(ch04.check_2(1.5), "value", f"{w:.6f}")


def test_2_a_rounded_rho_whose_weight_is_0_99_is_right():
    # 1.625 (rho to 3 decimals): weight 0.990013, which is 0.99 to four decimals; the
    # checker once answered "puts weight 0.9900 on "piyo", not 0.99"
    assert abs(1 / (1 + math.exp(-1.625 * GAP)) - 0.99) < 5e-5
    assert ch04.check_2(1.625).ok is True
    # 1.62: weight 0.989870, told with enough digits to see why it is not 0.99
    verdict = ch04.check_2(1.62)
    refused(verdict, "value", "0.989870")
    assert "less than 0.99" in verdict.message


def test_2_unanswered():
    assert ch04.check_2(...).ok is None
    assert ch04.check_2(None).ok is None
    assert ch04.check_2("1.6").ok is False


# --- exercise 3: the bottom-right causal mask -----------------------------------------

def loop_mask(n_q, n_k, rule):
    mask = np.zeros((n_q, n_k), dtype=bool)
    for i in range(n_q):
        for j in range(n_k):
            mask[i, j] = rule(i, j, n_k - n_q)
    return mask


def test_3_reference_is_right():
    # new query i sits at absolute position i + (n_k - n_q) and may see keys up to it
    def ref(n_q, n_k):
        return loop_mask(n_q, n_k, lambda i, j, off: j <= i + off)

    assert ch04.check_3(ref).ok is True


def test_3_an_int_mask_the_package_refuses_is_refused():
    # the right pattern as 0/1 integers: mt.scaled_dot_product_attention raises on it
    def ints(n_q, n_k):
        return loop_mask(n_q, n_k, lambda i, j, off: j <= i + off).astype(int)

    import mini_transformer as mt
    with pytest.raises(ValueError, match="bool"):
        mt.scaled_dot_product_attention(np.ones((2, 2)), np.ones((6, 2)), np.ones((6, 2)),
                                        mask=ints(2, 6))
    refused(ch04.check_3(ints), "not-bool", "boolean")


def test_3_an_all_true_mask_is_told_it_masks_nothing():
    verdict = ch04.check_3(lambda n_q, n_k: np.ones((n_q, n_k), dtype=bool))
    refused(verdict, "all-true", "masks nothing")
    assert "one key too many" not in verdict.message


def test_3_torch_mask_is_refused():
    torch = pytest.importorskip("torch")

    def torch_mask(n_q, n_k):
        return torch.ones(n_q, n_k, dtype=torch.bool).tril(n_k - n_q)

    refused(ch04.check_3(torch_mask), "reference-library", "torch tensor")


@pytest.mark.parametrize("rule, key, word", [
    (lambda i, j, off: j <= i, "upper-left", "upper-left"),
    (lambda i, j, off: j > i + off, "inverted", "swapped"),
    (lambda i, j, off: j < i + off, "hides-itself", "itself"),
    (lambda i, j, off: j <= i + off + 1, "sees-next", "one key too many"),
    (lambda i, j, off: j <= i - off, "wrong-direction", "wrong sign"),
])
def test_3_mistakes_are_named(rule, key, word):
    refused(ch04.check_3(lambda n_q, n_k: loop_mask(n_q, n_k, rule)), key, word)


def test_3_additive_and_transposed_masks_are_named():
    def additive(n_q, n_k):
        keep = loop_mask(n_q, n_k, lambda i, j, off: j <= i + off)
        return np.where(keep, 0.0, -np.inf)

    refused(ch04.check_3(additive), "additive", "-inf")

    def transposed(n_q, n_k):
        return loop_mask(n_q, n_k, lambda i, j, off: j <= i + off).T

    refused(ch04.check_3(transposed), "transposed", "transpose")


def test_3_unanswered():
    def stub(n_q, n_k):
        raise NotImplementedError

    assert ch04.check_3(stub).ok is None
    assert ch04.check_3(...).ok is None


# --- exercise 4: masked attention that never reads a masked value ---------------------

def softmax_rows(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def loop_attention(Q, K, V, mask):
    # query by query, over the keys it may see only
    out = np.zeros((Q.shape[0], V.shape[1]))
    for i in range(Q.shape[0]):
        seen = [j for j in range(K.shape[0]) if mask[i, j]]
        scores = np.array([Q[i] @ K[j] / math.sqrt(Q.shape[1]) for j in seen])
        weights = softmax_rows(scores)
        for w, j in zip(weights, seen):
            out[i] += w * V[j]
    return out


def test_4_reference_is_right():
    assert ch04.check_4(loop_attention).ok is True


def weights_then_product(Q, K, V, mask):        # the usual readable version
    s = np.where(mask, Q @ K.T / math.sqrt(Q.shape[1]), -np.inf)
    return softmax_rows(s) @ V


def multiplied_mask(Q, K, V, mask):    # the additive mask built as (1 - mask) * -inf
    s = Q @ K.T / math.sqrt(Q.shape[1]) + (1 - mask) * -np.inf
    return softmax_rows(s) @ V


def mask_forgotten(Q, K, V, mask):
    return softmax_rows(Q @ K.T / math.sqrt(Q.shape[1])) @ V


def not_scaled(Q, K, V, mask):
    s = np.where(mask, Q @ K.T, -np.inf)       # the scores never divided by sqrt(d_k)
    return np.where(mask[..., None], softmax_rows(s)[..., None] * V, 0).sum(axis=1)


def cleaned_after(Q, K, V, mask):
    return np.nan_to_num(weights_then_product(Q, K, V, mask))


@pytest.mark.parametrize("fn, key, word", [
    (multiplied_mask, "nan-from-0-times-inf", "0 * -inf"),
    (weights_then_product, "nan-through-the-weights", "0 * NaN"),
    (mask_forgotten, "mask-ignored", "mask"),
    (not_scaled, "no-scaling", "√d_k"),
    (cleaned_after, "cleaned-after", "out of the sum"),
])
def test_4_mistakes_are_named(fn, key, word):
    with np.errstate(invalid="ignore"):
        refused(ch04.check_4(fn), key, word)


def nan_cleaned_only(Q, K, V, mask):
    # NaN values replaced before the product, infinite ones left in
    return weights_then_product(Q, K, np.nan_to_num(V, nan=0.0, posinf=np.inf,
                                                    neginf=-np.inf), mask)


def test_4_cleaning_only_nan_is_told_about_inf():
    with np.errstate(invalid="ignore"):
        verdict = ch04.check_4(nan_cleaned_only)
    refused(verdict, "inf-through-the-weights", "0 * inf")


def test_4_torch_attention_is_refused():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional

    def torch_attention(Q, K, V, mask):      # torch's own function, results as NumPy
        V = np.where(mask.any(axis=0)[:, None], V, 0.0)
        out = F.scaled_dot_product_attention(*(torch.as_tensor(a) for a in (Q, K, V)),
                                             attn_mask=torch.as_tensor(mask))
        return out.numpy()

    refused(ch04.check_4(torch_attention), "reference-library",
            "scaled_dot_product_attention")
    # the watch ends with the check: torch's function is torch's again
    assert F.scaled_dot_product_attention.__name__ == "scaled_dot_product_attention"


def test_4_errors_and_unanswered():
    def shapes_wrong(Q, K, V, mask):
        return Q @ K                               # (n, 2) @ (n, 2): a ValueError

    refused(ch04.check_4(shapes_wrong), "raises", "ValueError")

    def stub(Q, K, V, mask):
        raise NotImplementedError

    assert ch04.check_4(stub).ok is None
    assert ch04.check_4(...).ok is None


def all_values_cleaned(Q, K, V, mask):
    # every NaN and infinity of V replaced before attention, visible keys' values too
    return weights_then_product(Q, K, np.nan_to_num(V, nan=0.0, posinf=0.0, neginf=0.0),
                                mask)


def test_4_cleaning_every_value_is_refused():
    # a NaN value that the last query may see must reach its output: replacing it
    # changes attention, silently
    with np.errstate(invalid="ignore"):
        verdict = ch04.check_4(all_values_cleaned)
    refused(verdict, "visible-cleaned", "nan_to_num")


def columns_cleaned(Q, K, V, mask):
    # zeroes only the values that no query may see, then multiplies by the weights
    V = np.where(mask.any(axis=0)[:, None], V, 0.0)
    return weights_then_product(Q, K, V, mask)


def test_4_zeroing_unseen_columns_only_is_refused():
    # causal mask, NaN on the last key: queries 0..4 may not see it, yet 0 * NaN
    # reaches them through the product
    with np.errstate(invalid="ignore"):
        verdict = ch04.check_4(columns_cleaned)
    refused(verdict, "column-cleaned", "its own row")


def test_4_a_nan_a_query_may_see_shows_in_its_output_only():
    # the reference by loops leaves the last query's NaN in place and nothing else
    Q, K, V, _ = ch04._data4()
    V = V.copy()
    V[-1] = np.nan
    out = loop_attention(Q, K, V, np.tril(np.ones((6, 6), dtype=bool)))
    assert np.isnan(out[-1]).all() and np.isfinite(out[:-1]).all()

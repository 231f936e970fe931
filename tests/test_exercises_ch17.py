"""book/exercises/ch17.py: each checker accepts a solution written here independently
(the merges counted by hand, the length penalty's formula, sacrebleu's chrF) and names
the mistake in answers written as a reader who made it would write them."""

import sys
from pathlib import Path

import numpy as np
import pytest
import sacrebleu

from mini_transformer.number_words.data import dev_test_numbers, number_words

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch17  # noqa: E402
from helpers import refused  # noqa: E402



# --- 1. merges 5 and 6 ----------------------------------------------------------------

# After e+r, u+n, un+d, v+i the words are
#   d r e i h und er t</w> | vi er h und er t</w> | d r e i und vi er z i g</w> |
#   vi er und d r e i ß i g</w>
# and four pairs occur 3 times: d+r, r+e, e+i, vi+er. The largest in string order is
# vi+er; after it, d+r, r+e and e+i still occur 3 times each: r+e.
MERGE_5, MERGE_6 = ("vi", "er"), ("r", "e")


def test_1_right():
    assert ch17.check_1(MERGE_5, MERGE_6).ok is True
    assert ch17.check_1(list(MERGE_5), list(MERGE_6)).ok is True


def test_1_mistakes():
    # the smallest pair among ties: d+r, then dr+e (3 times, with e+i and vi+er)
    assert refused(ch17.check_1(("d", "r"), ("dr", "e")), "tie-break", "ties")
    assert refused(ch17.check_1(MERGE_6, MERGE_5), "swapped", "order")
    assert refused(ch17.check_1(MERGE_5, MERGE_5), "not-applied", "applied")
    assert refused(ch17.check_1("vier", "re"), "joined", "pair")
    assert refused(ch17.check_1(("e", "i"), MERGE_6), "value", "most frequent")


def test_1_unanswered():
    assert ch17.check_1(..., ...).ok is None
    assert ch17.check_1(MERGE_5, ...).ok is None


# --- 2. the length penalty ------------------------------------------------------------

def lp(length, alpha):
    return ((5 + length) / (5 + 1)) ** alpha      # Wu et al. (2016), eq. 14


SCORES = np.array([[-1.2 / lp(3, a), -1.4 / lp(6, a)] for a in (0, 0.6, 1)])


def test_2_right():
    assert ch17.check_2(SCORES).ok is True
    # the chapter's rounded values: A -1.200, -1.010, -0.900; B -1.400, -0.973, -0.764
    assert ch17.check_2([[-1.2, -1.4], [-1.010, -0.973], [-0.900, -0.764]]).ok is True


@pytest.mark.parametrize("answer, key, word", [
    ([[-1.2 * lp(3, a), -1.4 * lp(6, a)] for a in (0, 0.6, 1)], "multiplied",
     "divides"),
    ([[-1.2 / 8**a, -1.4 / 11**a] for a in (0, 0.6, 1)], "no-six", "(5 + 1)"),
    ([[-1.2 / 3**a, -1.4 / 6**a] for a in (0, 0.6, 1)], "length-only", "adds 5"),
    (-SCORES, "sign", "negative"),
    (SCORES.T, "transposed", "transpose"),
])
def test_2_mistakes(answer, key, word):
    assert refused(ch17.check_2(answer), key, word)


def test_2_unanswered():
    assert ch17.check_2(...).ok is None


# --- 3. one letter short --------------------------------------------------------------

@pytest.fixture(scope="module")
def references():
    dev, _ = dev_test_numbers()
    above = np.random.default_rng(4).choice(dev[dev >= 10_000], 500, replace=False)
    return [de for _, de in number_words(np.union1d(dev[dev < 10_000], above))]


def test_3_right(references):
    cut = [r[:-1] for r in references]
    # the development numbers below 10,000 and 500 above
    assert len(references) == sum(dev_test_numbers()[0] < 10_000) + 500
    em = sum(c == r for c, r in zip(cut, references)) / len(references)
    chrf = sacrebleu.corpus_chrf(cut, [references]).score    # chrF, β = 2, n = 6
    assert ch17.check_3(em, chrf).ok is True
    assert ch17.check_3(0, 98.2).ok is True              # as the solution rounds it


def test_3_mistakes(references):
    cut = [r[:-1] for r in references]
    chrf = sacrebleu.corpus_chrf(cut, [references]).score
    assert refused(ch17.check_3(0, chrf / 100), "fraction", "0 to 100")
    swapped = sacrebleu.corpus_chrf(references, [cut]).score
    assert refused(ch17.check_3(0, swapped), "swapped", "swapped")
    mean = np.mean([sacrebleu.sentence_chrf(c, [r]).score
                    for c, r in zip(cut, references)])
    assert refused(ch17.check_3(0, mean), "sentence-mean", "sentences")


def test_3_unanswered():
    assert ch17.check_3(..., ...).ok is None

"""book/exercises/ch00.py: the orientation chapter's checkers accept the reference
answers, computed here by another route (hand-written softmax and bisection, shapes and
rows derived by hand), and name the mistakes a reader makes."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch00  # noqa: E402


def _bisect_tau(scores, target=0.99):
    """The tau at which the first weight is ``target``, by bisection (it falls as tau
    grows)."""
    def first_weight(tau):
        e = np.exp((scores - scores.max()) / tau)
        return e[0] / e.sum()

    lo, hi = 1e-3, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if first_weight(mid) > target else (lo, mid)
    return lo


# Query = key of "cat" (2, 0); keys cat (2, 0), dog (1, 1), car (0, 2): q·k = 4, 2, 0.
SCALED = np.array([4.0, 2.0, 0.0]) / math.sqrt(2)


def test_1_reference_and_rounded_answers_are_right():
    tau = _bisect_tau(SCALED)
    # by hand: u + u² = 1/99 with u = exp(-√2 / tau)
    u = (math.sqrt(1 + 4 / 99) - 1) / 2
    assert tau == pytest.approx(math.sqrt(2) / -math.log(u), rel=1e-9)
    assert ch00.check_1(tau).ok is True
    assert ch00.check_1(round(tau, 4)).ok is True      # as the solution prints it
    assert ch00.check_1(np.float64(tau)).ok is True


@pytest.mark.parametrize("wrong, key, word", [
    (_bisect_tau(np.array([4.0, 2.0, 0.0])), "unscaled", "√d_k"),       # forgot √d_k
    (_bisect_tau(SCALED[:2]), "two-keys", "car"),                      # "car" left out
    (1 / _bisect_tau(SCALED), "inverse", "1/τ"),                       # 1/tau
    (0.2, "value", "more than 0.99"),                                  # too cold
    (0.5, "value", "less than 0.99"),                                  # too warm
    (-0.3, "not-positive", "positive"),
])
def test_1_mistakes_are_named(wrong, key, word):
    verdict = ch00.check_1(wrong)
    assert verdict.ok is False
    assert verdict.mistake == key
    assert word in verdict.message
    assert "0.307" not in verdict.message              # never the answer


def test_1_unanswered():
    assert ch00.check_1(...).ok is None
    assert "No answer yet" in repr(ch00.check_1(...))


# Shapes by hand: every array between the boxes is (tokens, d_model); P is
# (n_tgt, n_vocab); one head's A is (queries, keys).
SHAPES = {"X": (20, 512), "mem": (20, 512), "H": (25, 512), "P": (25, 37000),
          "A, encoder": (20, 20), "A, decoder self": (25, 25), "A, cross": (25, 20)}


def test_2_reference_is_right():
    assert ch00.check_2(SHAPES).ok is True
    assert ch00.check_2({k: list(v) for k, v in SHAPES.items()}).ok is True


@pytest.mark.parametrize("part, wrong, key, word", [
    ("mem", (25, 512), "mem-rows", "encoder"),           # mem from the target
    ("H", (20, 512), "H-rows", "decoder"),
    ("P", (25, 512), "P-width", "vocabulary"),           # scores features, not tokens
    ("P", (37000, 25), "transposed", "swapped"),
    ("A, cross", (20, 25), "cross-swapped", "queries"),  # keys x queries
    ("A, encoder", (8, 20, 20), "heads", "head"),        # all heads, not one
    ("X", (20, 64), "d_k", "d_model"),                   # a head's width
    ("X", (21, 512), "value", "not its shape"),
])
def test_2_mistakes_are_named(part, wrong, key, word):
    verdict = ch00.check_2({**SHAPES, part: wrong})
    assert verdict.ok is False
    assert verdict.mistake == key
    assert word in verdict.message
    assert repr(part) in verdict.message


def test_2_partial_and_unanswered():
    answer = {k: ... for k in SHAPES}
    assert ch00.check_2(answer).ok is None
    answer["X"] = (20, 512)
    verdict = ch00.check_2(answer)
    assert verdict.ok is None and "Right so far" in verdict.message
    assert ch00.check_2(...).ok is None
    assert ch00.check_2((20, 512)).mistake == "not-a-dict"
    assert ch00.check_2({"X": (20, 512)}).mistake == "keys"


# By hand: the causal mask hides the last target token from every earlier position,
# so only the last of the 4 rows changes; every target position reads the whole memory,
# so a source word changes all 4.
ROWS = {"target": [3], "source": [0, 1, 2, 3]}


def test_3_reference_is_right():
    assert ch00.check_3(ROWS).ok is True
    assert ch00.check_3({"target": 3, "source": (3, 2, 1, 0)}).ok is True


@pytest.mark.parametrize("part, wrong, key, word", [
    ("target", [0, 1, 2, 3], "no-mask", "masked"),       # as if nothing were masked
    ("target", [4], "one-based", "from 0"),
    ("target", [], "nothing", "own token"),
    ("source", [1], "own-position", "cross-attention"),  # the changed word's position
    ("source", [3], "same-as-target", "cross-attention"),
    ("source", [1, 2], "shape", "not the rows"),
])
def test_3_mistakes_are_named(part, wrong, key, word):
    verdict = ch00.check_3({**ROWS, part: wrong})
    assert verdict.ok is False
    assert verdict.mistake == key
    assert word in verdict.message
    assert "(4,)" not in verdict.message                 # the count of rows is not told


def test_3_booleans_and_unanswered():
    verdict = ch00.check_3({"target": [False, False, False, True], "source": ...})
    assert verdict.mistake == "booleans"
    assert ch00.check_3({"target": ..., "source": ...}).ok is None
    assert ch00.check_3(...).ok is None

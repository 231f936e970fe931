"""book/exercises/ch01.py: chapter 1's checkers accept the reference answers, derived
here by hand or by loops, and name the mistakes a reader makes."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch01  # noqa: E402

X = np.array([[2, 1, 0, 1],      # tea
              [2, 1, 1, 0],      # chai
              [-1, 0, 2, 1]])    # car

# By hand: X Xᵀ = [[6, 5, -1], [5, 6, 0], [-1, 0, 6]]; row and column of "car" times 3,
# its corner times 9.
TABLE = np.array([[6, 5, -3],
                  [5, 6, 0],
                  [-3, 0, 54]])


def _angles_by_loops(rows):
    """θ_ij in degrees, one pair at a time with math.acos."""
    n = len(rows)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            dot = sum(a * b for a, b in zip(rows[i], rows[j]))
            norms = math.sqrt(sum(a * a for a in rows[i]) * sum(b * b for b in rows[j]))
            cos = dot / norms
            out[i, j] = math.degrees(math.acos(max(-1.0, min(1.0, cos))))
    return out


ANGLES = _angles_by_loops(X.tolist())     # the angles do not change: the same as before


def test_1_reference_is_right():
    X3 = X.copy()
    X3[2] *= 3
    assert np.array_equal(X3 @ X3.T, TABLE)
    assert ch01.check_1({"table": TABLE, "angles": ANGLES}).ok is True
    assert ch01.check_1({"table": TABLE.tolist(),
                         "angles": _angles_by_loops(X3.tolist())}).ok is True


def _reader_row_only():
    X3 = X.copy()
    X3[2] *= 3
    return X3 @ X.T                        # only the rows scaled


def _reader_old_norms():
    X3 = X.copy()
    X3[2] *= 3
    norms = np.linalg.norm(X, axis=1)      # lengths from before the change
    cos = (X3 @ X3.T) / np.outer(norms, norms)
    return np.degrees(np.arccos(np.clip(cos, -1, 1)))


@pytest.mark.parametrize("part, wrong, key, word", [
    ("table", _reader_row_only(), "row-only", "column"),
    ("table", 3 * (X @ X.T), "all-times-3", "involve"),
    ("table", 9 * (X @ X.T), "all-times-9", "involve"),
    ("table", np.where(TABLE == 54, 18, TABLE), "corner-once", "both"),
    ("angles", _reader_old_norms(), "old-norms", "lengths"),
    ("angles", np.radians(ANGLES), "radians", "degrees"),
    ("angles", np.cos(np.radians(ANGLES)), "cosines", "arccos"),
])
def test_1_mistakes_are_named(part, wrong, key, word):
    verdict = ch01.check_1({"table": TABLE, "angles": ANGLES, part: wrong})
    assert verdict.ok is False
    assert verdict.mistake == key
    assert word in verdict.message
    assert "54" not in verdict.message


def test_1_unanswered():
    assert ch01.check_1({"table": ..., "angles": ...}).ok is None
    assert ch01.check_1(...).ok is None
    assert ch01.check_1({"table": TABLE, "angles": ...}).ok is None


# By hand, n = 6, d_model = 512, d_k = 64: 36 entries, all 36 can differ (QKᵀ is not
# symmetric when W^Q ≠ W^K), 6·7/2 = 21 distinct with a shared projection, 36·64 = 2,304,
# 21·64 = 1,344, and 2 · 6 · 512 · 64 = 393,216 for the two projections.
COUNTS = {"entries": 36, "distinct": 36, "distinct_shared": 21, "table_mults": 2304,
          "distinct_mults": 1344, "projection_mults": 393216}


def test_2_a_head_table_has_36_distinct_entries():
    # the answer the chapter teaches (QKᵀ is not symmetric) is accepted; 21, the count of
    # the symmetric X Xᵀ, is refused with the reason
    assert ch01.check_2({k: (36 if k == "distinct" else ...) for k in COUNTS}).ok is None
    assert "Right so far" in ch01.check_2(
        {k: (36 if k == "distinct" else ...) for k in COUNTS}).message
    verdict = ch01.check_2({**COUNTS, "distinct": 21})
    assert verdict.ok is False and verdict.mistake == "symmetric"
    assert "W^Q ≠ W^K" in verdict.message


def test_2_reference_is_right():
    assert ch01.check_2(COUNTS).ok is True
    assert ch01.check_2({k: float(v) for k, v in COUNTS.items()}).ok is True


@pytest.mark.parametrize("part, wrong, key, word", [
    ("distinct_shared", 6 * 5 // 2, "no-diagonal", "diagonal"),
    ("distinct_shared", 36 / 2, "half", "diagonal"),
    ("distinct_shared", 36, "all-entries", "symmetric"),
    ("table_mults", 36 * 512, "d_model", "d_k"),
    ("table_mults", 36 * 64 ** 2, "d-squared", "d²"),
    ("distinct_mults", 15 * 64, "no-diagonal", "diagonal"),
    ("projection_mults", 6 * 512 * 64, "one-projection", "Q and K"),
    ("projection_mults", 3 * 6 * 512 * 64, "with-V", "V"),
    ("projection_mults", 2 * 6 * 512 * 512, "square", "d_model × d_k"),
    ("entries", 35, "value", "not it"),
    ("entries", [6, 6], "shape", "one number"),
])
def test_2_mistakes_are_named(part, wrong, key, word):
    verdict = ch01.check_2({**COUNTS, part: wrong})
    assert verdict.ok is False
    assert verdict.mistake == key
    assert word in verdict.message
    assert str(COUNTS[part]) not in verdict.message.replace(",", "")


def test_2_unanswered():
    assert ch01.check_2({k: ... for k in COUNTS}).ok is None
    assert ch01.check_2(...).ok is None


def test_1_angles_to_the_chapters_two_decimals_are_right():
    # the chapter prints θ to two decimals (33.56°, 99.59°, 90.00°): a reader who copies
    # them, or rounds their own, gives the right angles
    assert ch01.check_1({"table": TABLE, "angles": np.round(ANGLES, 2)}).ok is True
    # one decimal is not enough: 33.6° is 0.04° off
    verdict = ch01.check_1({"table": TABLE, "angles": np.round(ANGLES, 1)})
    assert verdict.ok is False and verdict.mistake == "value"


def test_1_nan_on_the_diagonal_is_explained():
    # arccos of cosines computed without clipping: x·x / |x|² is a hair above 1 in
    # floating point for "tea" and "chai", and arccos(1 + 2e-16) is NaN
    X3 = X.astype(float).copy()
    X3[2] *= 3
    norms = np.sqrt(np.diag(X3 @ X3.T))
    with np.errstate(invalid="ignore"):
        angles = np.degrees(np.arccos((X3 @ X3.T) / np.outer(norms, norms)))
    assert np.isnan(np.diag(angles)).any()
    verdict = ch01.check_1({"table": TABLE, "angles": angles})
    assert verdict.ok is False and verdict.mistake == "nan-diagonal"
    assert "np.clip" in verdict.message

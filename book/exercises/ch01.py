"""Checkers for the exercises of chapter 1, the dot product as similarity.

- ``check_1(answer)``: the table X Xᵀ once the row of "car" is multiplied by 3, and the
  angles θ_ij (degrees) between the three tokens after the change.
- ``check_2(counts)``: for n = 6, d_model = 512, d_k = 64, the entries of one head's
  score table QKᵀ and how many can be distinct (all of them: W^Q ≠ W^K makes it
  asymmetric), how many would be distinct with one shared projection (Q = K), the
  multiplications of the table (every entry; distinct entries only, shared projection),
  and those of the projections Q = XW^Q and K = XW^K.

Exercises 3 (a proof) and 4 (an explanation) keep only their folded solutions.
"""

from __future__ import annotations

import numpy as np

from . import Mistake, Verdict
from . import check_parts

# The chapter's three tokens (tea, chai, car) in d = 4.
X = np.array([[2, 1, 0, 1],
              [2, 1, 1, 0],
              [-1, 0, 2, 1]])
CAR = 2


def _angles(table: np.ndarray, norms: np.ndarray | None = None) -> np.ndarray:
    if norms is None:
        norms = np.sqrt(np.diag(table))
    cos = table / np.outer(norms, norms)
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def _nan_only_on_diagonal(a: np.ndarray, angles: np.ndarray) -> bool:
    """a is the right angles, except for NaN on some diagonal entries."""
    if a.shape != angles.shape:
        return False
    nan = np.isnan(a)
    off = ~np.eye(len(a), dtype=bool)
    return (bool(nan.any()) and not nan[off].any()
            and bool(np.allclose(a[off], angles[off], rtol=0, atol=0.006)))


def check_1(answer) -> Verdict:
    X3 = X.copy()
    X3[CAR] *= 3
    table = X3 @ X3.T
    old = X @ X.T
    angles = _angles(table)
    row_only = old.copy()
    row_only[CAR] *= 3                       # the row scaled, not the column
    corner_3 = table.copy()
    corner_3[CAR, CAR] //= 3                             # the corner scaled once
    mistakes = {
        "table": [
            Mistake("row-only", row_only,
                    "you scaled only the row of \"car\": column j of the table is "
                    "token j too, so the column of \"car\" changes as well."),
            Mistake("corner-once", corner_3,
                    "the corner entry is car · car: both of its factors carry the 3."),
            Mistake("all-times-3", 3 * old,
                    "every entry times 3: only the dot products that involve \"car\" "
                    "change."),
            Mistake("all-times-9", 9 * old,
                    "every entry times 9: only the dot products that involve \"car\" "
                    "change."),
        ],
        "angles": [
            Mistake("nan-diagonal", lambda a: _nan_only_on_diagonal(a, angles),
                    "NaN on the diagonal: rounding makes cos θ_ii a hair above 1, where "
                    "arccos is undefined. Clip the cosines to [-1, 1] first (np.clip), as "
                    "the chapter does: a vector's angle with itself is 0."),
            Mistake("old-norms", _angles(table, np.sqrt(np.diag(old))),
                    "did you divide by the old lengths? The length of \"car\" is "
                    "multiplied by 3 too."),
            Mistake("radians", np.radians(angles),
                    "these are radians: give the angles in degrees, as the chapter "
                    "does."),
            Mistake("cosines", table / np.outer(*2 * [np.sqrt(np.diag(table))]),
                    "these are the cosines: θ is their arccos, in degrees."),
        ],
    }
    # angles to the chapter's printed two decimals are right (half a unit of the last
    # printed digit, 0.005°, and a little more for the rounding of the rounding)
    return check_parts(answer, {"table": table, "angles": angles}, mistakes=mistakes,
                       rtol=1e-6, atol={"table": 1e-6, "angles": 0.006})


def check_2(counts) -> Verdict:
    n, d_model, d_k = 6, 512, 64
    distinct = n * (n + 1) // 2
    expected = {"entries": n * n, "distinct": n * n, "distinct_shared": distinct,
                "table_mults": n * n * d_k, "distinct_mults": distinct * d_k,
                "projection_mults": 2 * n * d_model * d_k}
    no_diagonal = n * (n - 1) // 2
    mistakes = {
        "distinct": [
            Mistake("symmetric", distinct,
                    "n(n + 1)/2 counts a symmetric table, like X Xᵀ. A head's scores "
                    "QKᵀ come from two projections, W^Q ≠ W^K, so q_i · k_j and "
                    "q_j · k_i differ in general: how many entries can then be "
                    "distinct?"),
        ],
        "distinct_shared": [
            Mistake("all-entries", n * n,
                    "with one shared projection the table is symmetric, "
                    "q_i · q_j = q_j · q_i: entries above and below the diagonal come "
                    "in equal pairs."),
            Mistake("no-diagonal", no_diagonal,
                    "n(n − 1)/2 leaves out the diagonal: x_i · x_i is an entry of its "
                    "own."),
            Mistake("half", n * n / 2,
                    "n²/2 halves the diagonal too: each diagonal entry appears only "
                    "once in the table."),
        ],
        "table_mults": [
            Mistake("d_model", n * n * d_model,
                    "the table's dot products are between rows of Q and K, which are "
                    "d_k wide, not d_model."),
            Mistake("d-squared", n * n * d_k ** 2,
                    "a dot product of two vectors of width d costs d multiplications, "
                    "not d²."),
        ],
        "distinct_mults": [
            Mistake("no-diagonal", no_diagonal * d_k,
                    "n(n − 1)/2 leaves out the diagonal: x_i · x_i is an entry of its "
                    "own."),
            Mistake("d_model", distinct * d_model,
                    "the table's dot products are between rows of Q and K, which are "
                    "d_k wide, not d_model."),
        ],
        "projection_mults": [
            Mistake("one-projection", n * d_model * d_k,
                    "that is one projection: the question asks for Q and K."),
            Mistake("with-V", 3 * n * d_model * d_k,
                    "that counts V too: the question asks for Q and K."),
            Mistake("square", 2 * n * d_model ** 2,
                    "each projection multiplies an n × d_model matrix by a d_model × "
                    "d_k one, not by a square matrix."),
        ],
    }
    return check_parts(counts, expected, mistakes=mistakes, rtol=0, atol=0,
                       fallback=_not_it)


def _not_it(key, value) -> str:
    a = np.asarray(value, dtype=float)
    return f"{a.item():,.6g} is not it." if a.size == 1 else "give one number."

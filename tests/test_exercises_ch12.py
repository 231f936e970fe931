"""book/exercises/ch12.py: each checker accepts a solution written here independently
(hand arithmetic, loops over the keys, the benchmark file read again) and names the
mistake in answers written as a reader who made it would write them."""

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book"))
from exercises import ch12  # noqa: E402

E = math.exp


def refused(verdict, key, word):
    assert verdict.ok is False, verdict.message
    assert verdict.mistake == key, (verdict.mistake, verdict.message)
    assert word in verdict.message
    return True


# --- 1. the softmax's FLOPs -----------------------------------------------------------

def test_1_right():
    # max, subtract, exp, sum, divide; the matmuls do 2·64 + 2·64 FLOPs per element
    assert ch12.check_1(5, 5 / 261).ok is True
    assert ch12.check_1(5, 0.0192).ok is True       # rounded as printed in the chapter


@pytest.mark.parametrize("ops, share, key, word", [
    (3, 3 / 259, "too-few", "fewer"),               # exp, sum, divide only
    (6, 6 / 262, "too-many", "more"),
    (5, 1.916, "percent", "percentage"),
    (5, 5 / 133, "one-matmul", "two"),              # 2d FLOPs per element: one matmul
])
def test_1_mistakes(ops, share, key, word):
    assert refused(ch12.check_1(ops, share), key, word)


def test_1_unanswered():
    assert ch12.check_1(..., ...).ok is None
    assert ch12.check_1(5, ...).ok is None           # right so far, one part to go
    assert "share" in ch12.check_1(5, ...).message


# --- 2. the order of the blocks -------------------------------------------------------

# block 1 of the new order: the scores 4, 2, -1, the values (2, 0), (0, 2), (-1, 1)
NEW_1 = (4.0, 1 + E(-2) + E(-5), [2 - E(-5), 2 * E(-2) + E(-5)])
# block 1 of the original order: scores 1, 3, 0.5, values (1, 0), (0, 1), (1, 1)
OLD_1 = (3.0, E(-2) + 1 + E(-2.5), [E(-2) + E(-2.5), 1 + E(-2.5)])
# the final state: every key relative to the maximum 4
Z4 = E(-3) + E(-1) + E(-3.5) + 1 + E(-2) + E(-5)
FINAL = (4.0, Z4, [E(-3) + E(-3.5) + 2 - E(-5), E(-1) + E(-3.5) + 2 * E(-2) + E(-5)])


def test_2_right():
    assert ch12.check_2(NEW_1).ok is True
    assert ch12.check_2((4.0, 1.1421, np.array([1.9933, 0.2774]))).ok is True  # printed


def test_2_mistakes():
    assert refused(ch12.check_2(OLD_1), "original-order", "original order")
    assert refused(ch12.check_2(FINAL), "final", "both blocks")
    # the loop run again without resetting m, l, c: the final state, rescale factor 1
    carried = (4.0, FINAL[1] + NEW_1[1], np.add(FINAL[2], NEW_1[2]))
    assert refused(ch12.check_2(carried), "not-reset", "-inf")


def test_2_unanswered():
    assert ch12.check_2(...).ok is None


# --- 3. merging two partial results -----------------------------------------------

def merge_loops(a, b):
    """The partition function and the numerator summed again, relative to the max."""
    (m_a, l_a, c_a), (m_b, l_b, c_b) = a, b
    m = m_a if m_a >= m_b else m_b
    l, c = 0.0, np.zeros(len(c_a))
    for m_x, l_x, c_x in ((m_a, l_a, c_a), (m_b, l_b, c_b)):
        if l_x == 0:               # an empty half adds nothing
            continue
        factor = E(m_x - m)        # e^{m_x} ℓ_x = Z_x, divided by e^m
        l += factor * l_x
        for i in range(len(c_x)):
            c[i] += factor * c_x[i]
    return m, l, c


def test_3_right():
    assert ch12.check_3(merge_loops).ok is True


def test_3_right_on_the_hand_example():
    # the two halves of the hand example, merged, give the final state of the chapter
    s = [1.0, 3.0, 0.5, 4.0, 2.0, -1.0]
    v = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [0.0, 2.0], [-1.0, 1.0]]
    halves = []
    for part in (range(0, 3), range(3, 6)):
        m = max(s[j] for j in part)
        halves.append((m, sum(E(s[j] - m) for j in part),
                       np.sum([E(s[j] - m) * np.array(v[j]) for j in part], axis=0)))
    m, l, c = merge_loops(*halves)
    assert abs(m - 4) == 0 and abs(l - Z4) < 1e-12 and np.allclose(c, FINAL[2])


def test_3_mistakes():
    def no_rescale(a, b):
        return max(a[0], b[0]), a[1] + b[1], np.add(a[2], b[2])

    def c_kept(a, b):
        m, l, _ = merge_loops(a, b)
        return m, l, np.add(a[2], b[2])

    def flipped(a, b):
        m = max(a[0], b[0])
        f_a, f_b = np.exp(m - a[0]), np.exp(m - b[0])
        c = f_a * np.asarray(a[2]) + f_b * np.asarray(b[2])
        return m, f_a * a[1] + f_b * b[1], c

    assert refused(ch12.check_3(no_rescale), "no-rescale", "own maximum")
    assert refused(ch12.check_3(c_kept), "c-not-rescaled", "numerator")
    assert refused(ch12.check_3(flipped), "exponent-sign", "sign")


def test_3_unanswered():
    def stub(a, b):
        raise NotImplementedError

    def body_dots(a, b):
        ...

    assert ch12.check_3(...).ok is None
    assert ch12.check_3(stub).ok is None
    assert ch12.check_3(body_dots).ok is None


# --- 4. when does memory die first? ---------------------------------------------------

BENCH = json.loads((ROOT / "benchmarks/results/attention.json").read_text())
RAM = BENCH["meta"]["memory_gib"] * 2**30


def largest_fit(matrices):
    n = 1
    while matrices * 4 * (2 * n) ** 2 <= RAM:   # float32: 4 bytes a number
        n *= 2
    return n


def tiled_rows(heads):
    return {r["T"]: r["time_s"] for r in BENCH["rows"] if r["impl"] == "tiled"
            and r["dtype"] == "float32" and r["heads"] == heads and r["device"] == "cpu"
            and not r["skipped"]}


def test_4_right():
    n = largest_fit(8)
    one_head = tiled_rows(1)
    n_max = max(one_head)
    t = 8 * one_head[n_max] * (n / n_max) ** 2
    assert ch12.check_4(n, t).ok is True
    assert ch12.check_4(n, tiled_rows(8)[n]).ok is True    # the measured time passes


def test_4_mistakes():
    n = largest_fit(8)
    one_head = tiled_rows(1)
    n_max = max(one_head)
    t = 8 * one_head[n_max] * (n / n_max) ** 2
    assert refused(ch12.check_4(largest_fit(1), t), "one-matrix", "eight")
    assert refused(ch12.check_4(2 * n, t), "too-big", "more than")
    assert refused(ch12.check_4(n // 2, t), "too-small", "twice")
    not_power = int(math.sqrt(RAM / 32))
    assert refused(ch12.check_4(not_power, t), "not-power", "power of two")
    assert refused(ch12.check_4(n, t / 8), "one-head", "eight")
    assert refused(ch12.check_4(n, 8 * one_head[n_max] * n / n_max), "linear", "n²")


def test_4_unanswered():
    assert ch12.check_4(..., ...).ok is None

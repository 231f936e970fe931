"""Checkers for chapter 12's exercises (the cost of attention, the online softmax).

check_1(ops, share): the operations per element of the package's softmax, and their
    share of attention's FLOPs at d = 64 (a fraction).
check_2(after_1): (m, l, c) after the first block of the hand example run with its
    blocks in the other order.
check_3(merge): a function merging two partial results (m_a, l_a, c_a), (m_b, l_b, c_b)
    into (m, l, c); compared with the sums over all the keys, on the hand example, on
    random scores and with one empty half.
check_4(n_fit, t_fit): the largest power-of-two n whose eight float32 n × n weight
    matrices fit in the memory the benchmark recorded, and the tiled path's time for one
    eight-head call there, by the n² law from the largest one-head time.

``flat`` packs an (m, l, c) triple into one array.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np

from . import (
    UNANSWERED, Mistake, Part, Verdict, check_each, check_function, check_value,
    unanswered,
)

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks/results/attention.json"


def flat(answer):
    """An (m, l, c) triple as one array [m, l, c_1, ..., c_dv]; anything else as is."""
    if isinstance(answer, (tuple, list)) and len(answer) == 3:
        try:
            m, l, c = (np.asarray(x.detach() if hasattr(x, "detach") else x,
                                  dtype=float) for x in answer)
        except (TypeError, ValueError):
            return answer
        if m.ndim == 0 and l.ndim == 0:
            return np.concatenate([[m], [l], np.ravel(c)])
    return answer


# --- the hand example of the online softmax ---------------------------------------

S = np.array([1.0, 3.0, 0.5, 4.0, 2.0, -1.0])
V = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [0.0, 2.0], [-1.0, 1.0]])


def _sums(s, v):
    """(m, l, c) of a set of keys computed at once: the maximum, and the two sums."""
    s = np.asarray(s, dtype=float)
    if s.size == 0:
        return -math.inf, 0.0, np.zeros(np.shape(v)[-1])
    m = float(s.max())
    e = np.exp(s - m)
    return m, float(e.sum()), e @ v


def _online(blocks, start=(-math.inf, 0.0, np.zeros(2))):
    """(m, l, c) after each block of the hand example, from ``start``."""
    m, l, c = start
    states = []
    for block in blocks:
        idx = list(block)
        m_new = max(m, float(S[idx].max()))
        rescale = math.exp(m - m_new)
        e = np.exp(S[idx] - m_new)
        m, l, c = m_new, rescale * l + float(e.sum()), rescale * c + e @ V[idx]
        states.append((m, l, c))
    return states


def check_1(ops, share) -> Verdict:
    """ops: operations per element of the softmax; share: their part of the FLOPs."""
    d, passes = 64, 5  # max, subtract, exp, sum, divide: one each per element
    too_few = Mistake(
        "too-few", lambda a: a.ndim == 0 and a < passes,
        "you counted fewer operations than the softmax does per element: every item "
        "of the statement's list, the two of the stability trick included, is done "
        "once for each element.")
    too_many = Mistake(
        "too-many", lambda a: a.ndim == 0 and a > passes,
        "you counted more operations than the softmax does per element: count each "
        "item of the statement's list once (an exponential counts as one operation "
        "here).")
    percent = Mistake(
        "percent", lambda a: a.ndim == 0 and abs(a / 100 - passes / (4 * d + passes))
        < 0.025 * passes / (4 * d),
        "your share is a percentage: give it as a fraction (0.5 for half).")
    one_matmul = Mistake(
        "one-matmul", passes / (2 * d + passes),
        "your share counts one matrix product: attention does two, S = QKᵀ and AV, "
        "each 2d FLOPs per element of the n × n matrix.")
    return check_each(
        Part("ops", ops, passes, [too_few, too_many], atol=0.01),
        Part("share", share, passes / (4 * d + passes), [percent, one_matmul],
             rtol=0.025),
        praise="The benchmark's 4n²d misses only that share of the FLOPs.")


def check_2(after_1) -> Verdict:
    """after_1: (m, l, c) after the first block, blocks = [range(3, 6), range(0, 3)]."""
    if unanswered(after_1):
        return UNANSWERED
    original = _online([range(0, 3), range(3, 6)])
    reversed_ = _online([range(3, 6), range(0, 3)])
    carried = _online([range(3, 6)], start=original[-1])
    mistakes = [
        Mistake("original-order", flat(original[0]),
                "these are the values after block 1 of the original order: set blocks "
                "to the new order before the loop."),
        Mistake("final", flat(reversed_[-1]),
                "these are the final values, after both blocks: the question asks for "
                "the state after the first one."),
        Mistake("not-reset", flat(carried[0]),
                "you carried on from the previous run's m, l and c: the loop must "
                "start again from m = -inf, l = 0, c = 0."),
    ]
    return check_value(flat(after_1), flat(reversed_[0]), what="your (m, l, c)",
                       mistakes=mistakes, rtol=1e-4, atol=1e-4,
                       praise="Compare it with block 1 of the original order.")


def _merge_cases():
    """((a, b), the whole's (m, l, c) flattened), a and b the halves' (m, l, c)."""
    rng = np.random.default_rng(12)
    s_r, v_r = 3 * rng.standard_normal(11), rng.standard_normal((11, 3))
    halves = [
        (S, V, 3),            # the hand example: the larger maximum in the second half
        (S[::-1], V[::-1], 3),  # ... and in the first
        (s_r, v_r, 4),        # random scores, unequal halves, d_v = 3
        (s_r, v_r, 0),        # an empty first half: m = -inf, l = 0, c = 0
    ]
    cases = []
    for s, v, cut in halves:
        a, b = _sums(s[:cut], v[:cut]), _sums(s[cut:], v[cut:])
        cases.append(((a, b), flat(_sums(s, v))))
    return cases


def _wrong_merge(rescale_l, rescale_c, sign=1.0):
    def merge(a, b):
        (m_a, l_a, c_a), (m_b, l_b, c_b) = a, b
        m = max(m_a, m_b)
        f_a, f_b = (math.exp(sign * (x - m)) if x > -math.inf else 0.0
                    for x in (m_a, m_b))
        g_a, g_b = (f_a, f_b) if rescale_l else (1.0, 1.0)
        h_a, h_b = (f_a, f_b) if rescale_c else (1.0, 1.0)
        c = h_a * np.asarray(c_a) + h_b * np.asarray(c_b)
        return flat((m, g_a * l_a + g_b * l_b, c))
    return merge


def check_3(merge) -> Verdict:
    """merge(a, b) -> (m, l, c), with a = (m_a, l_a, c_a) and b = (m_b, l_b, c_b)."""
    if unanswered(merge) or not callable(merge):
        return check_function(merge, [])
    mistakes = [
        Mistake("no-rescale", _wrong_merge(False, False),
                "you added the two sums as they are: each half's ℓ and c are relative "
                "to its own maximum, so each must be brought to the common one first."),
        Mistake("c-not-rescaled", _wrong_merge(True, False),
                "your ℓ is right but your c is not: the numerator needs the same "
                "factors as the partition function."),
        Mistake("l-not-rescaled", _wrong_merge(False, True),
                "your c is right but your ℓ is not: the partition function needs the "
                "same factors as the numerator."),
        Mistake("exponent-sign", _wrong_merge(True, True, sign=-1.0),
                "your factors are 1 or more: the exponent has the wrong sign (a factor "
                "that brings a sum to a larger maximum is at most 1)."),
    ]
    return check_function(lambda a, b: flat(merge(copy.deepcopy(a), copy.deepcopy(b))),
                          _merge_cases(),
                          what="your merge", mistakes=mistakes, rtol=1e-9, atol=1e-12,
                          praise="The same merge splits one long sequence of keys over "
                                 "many threads.")


def _benchmark():
    bench = json.loads(BENCHMARK.read_text())
    rows = [r for r in bench["rows"] if r["device"] == "cpu" and not r["skipped"]
            and (r["impl"], r["dtype"], r["heads"]) == ("tiled", "float32", 1)]
    largest = max(rows, key=lambda r: r["T"])
    return bench["meta"]["memory_gib"] * 2**30, largest["T"], largest["time_s"]


def _largest_power(ram, matrices, itemsize):
    return 2 ** int(math.floor(math.log2(math.sqrt(ram / (matrices * itemsize)))))


def check_4(n_fit, t_fit) -> Verdict:
    """n_fit: the largest power of two that fits; t_fit: seconds of one call there."""
    ram, n_big, t_big = _benchmark()
    n = _largest_power(ram, 8, 4)

    def power_of_two(a):
        if a.ndim != 0 or a < 1 or not float(a).is_integer():
            return False
        return int(a) & (int(a) - 1) == 0

    n_mistakes = [
        Mistake("not-power", lambda a: a.ndim == 0 and not power_of_two(a),
                "n_fit should be a power of two (the largest one that fits)."),
        Mistake("one-matrix", _largest_power(ram, 1, 4),
                "n_fit is where one float32 n × n matrix fits: eight heads hold "
                "eight."),
        Mistake("too-big", lambda a: power_of_two(a) and 32 * float(a) ** 2 > ram,
                "at that n_fit the eight float32 matrices take more than the recorded "
                "memory."),
        Mistake("too-small",
                lambda a: power_of_two(a) and 32 * (2 * float(a)) ** 2 <= ram,
                "twice your n_fit still fits: the question asks for the largest."),
    ]
    t = 8 * t_big * (n / n_big) ** 2
    t_mistakes = [
        Mistake("one-head", t / 8,
                "t_fit is the time of one head: the call has eight."),
        Mistake("linear", 8 * t_big * (n / n_big),
                "t_fit scales the time with n: the work grows as n²."),
        Mistake("inverse", 8 * t_big * (n_big / n) ** 2,
                "t_fit scales by the ratio of the lengths the wrong way up: the "
                "smaller n takes less time."),
    ]
    return check_each(
        Part("n_fit", n_fit, n, n_mistakes, rtol=0, atol=0.5),
        Part("t_fit", t_fit, t, t_mistakes, rtol=0.1),
        praise="Memory, not time, is what stops the reference first.")

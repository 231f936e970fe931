"""book/exercises/ch18.py: each checker accepts a solution written here independently
(the bits counted by hand, top-p by a plain loop over the sorted tokens) and names the
mistake in answers written as a reader who made it would write them; a function that
returns torch's result is refused."""

import math
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch18  # noqa: E402
from helpers import refused  # noqa: E402


# --- 1. bits per character ---
# -log2 of 0.5, 0.25, 0.125, 1 is 1, 2, 3, 0: 6 bits over 4 characters.

def test_1_right():
    assert ch18.check_1(1.5, 2 ** 1.5).ok is True


def test_1_mistakes():
    assert refused(ch18.check_1(6, 64), "sum", "divide")
    nats = -(math.log(0.5) + math.log(0.25) + math.log(0.125)) / 4
    assert refused(ch18.check_1(nats, math.exp(nats)), "nats", "log base 2")
    assert refused(ch18.check_1(1.5, math.exp(1.5)), "e-power", "2 to the")
    assert refused(ch18.check_1(1.5, 2 ** -1.5), "inverse", "above 1")
    assert refused(ch18.check_1(2.0, 4.0), "value", "off")


def test_1_rounded_and_total_perplexity():
    # the solution prints 2.83; 2 ** 6 = 64 is the whole text's perplexity
    assert refused(ch18.check_1(1.5, 2.83), "rounded", "rounded")
    assert refused(ch18.check_1(1.5, 64), "total", "total bits")


def test_1_unanswered():
    assert ch18.check_1(..., ...).ok is None
    assert ch18.check_1(1.5, ...).ok is None


# --- 2. top-p by hand ------------------------------------------------------------------
# Sorted: id 1 (0.4), id 2 (0.2, the smaller id of the tie), id 3, ...; 0.4 < 0.55,
# 0.6 >= 0.55: ids 1 and 2, renormalised.

def test_2_right():
    assert ch18.check_2([0, 2 / 3, 1 / 3, 0, 0]).ok is True


def test_2_mistakes():
    assert refused(ch18.check_2([0, 2 / 3, 0, 1 / 3, 0]), "tie", "smaller id")
    assert refused(ch18.check_2([0, 1, 0, 0, 0]), "no-crossing", "reach")
    assert refused(ch18.check_2([0, 0.4, 0.2, 0, 0]), "not-renormalised",
                   "renormalised")
    assert refused(ch18.check_2([0.1, 0.4, 0.2, 0.2, 0.1]), "value", "entries")


def test_2_rounded():
    assert refused(ch18.check_2([0, 0.67, 0.33, 0, 0]), "rounded", "exact fractions")


# --- 3. top-p as a function ------------------------------------------------------------

def loop_nucleus(p, top_p):
    ranked = sorted(range(len(p)), key=lambda i: (-p[i], i))
    kept, mass = [], 0.0
    for i in ranked:
        kept.append(i)
        mass += p[i]
        if mass >= top_p - 1e-12:
            break
    out = np.zeros(len(p))
    out[kept] = np.asarray(p)[kept]
    return out / out.sum()


def test_3_right():
    assert ch18.check_3(loop_nucleus).ok is True


def test_3_mistakes():
    def unstable(p, top_p):            # ties to the larger id
        return loop_nucleus(p[::-1], top_p)[::-1]

    def stops_short(p, top_p):
        order = np.argsort(-p, kind="stable")
        keep = order[np.cumsum(p[order]) < top_p]
        keep = keep if len(keep) else order[:1]
        out = np.zeros_like(p)
        out[keep] = p[keep]
        return out / out.sum()

    def unnormalised(p, top_p):
        out = loop_nucleus(p, top_p)
        return np.where(out > 0, p, 0.0)

    def torch_version(p, top_p):
        t = torch.tensor(p)
        srt, idx = torch.sort(t, descending=True, stable=True)
        keep = (torch.cumsum(srt, 0) - srt) < top_p
        out = torch.zeros_like(t).scatter(0, idx[keep], srt[keep])
        return out / out.sum()

    def broken(p, top_p):
        raise IndexError("oops")

    assert refused(ch18.check_3(unstable), "tie", "smaller id")
    assert refused(ch18.check_3(stops_short), "no-crossing", "crosses")
    assert refused(ch18.check_3(unnormalised), "not-renormalised", "renormalise")
    assert refused(ch18.check_3(torch_version), "torch", "NumPy")
    assert refused(ch18.check_3(broken), "raises", "IndexError")
    assert refused(ch18.check_3(3), "not-a-function", "function")


def test_3_torch_converted_back_to_numpy():
    # torch does the sorting, the result comes back as a NumPy array: still refused
    def via_torch(p, top_p):
        t = torch.as_tensor(p)
        srt, idx = torch.sort(t, descending=True, stable=True)
        keep = (torch.cumsum(srt, 0) - srt) < top_p
        return (torch.zeros_like(t).scatter(0, idx[keep], srt[keep])
                / srt[keep].sum()).numpy()

    assert refused(ch18.check_3(via_torch), "torch", "NumPy")
    assert torch.sort is not None and torch.sort(torch.tensor([2.0, 1.0]))[0][0] == 1.0


def test_3_unstable_sort_and_equality():
    def default_sort(p, top_p):        # np.argsort without kind="stable"
        order = np.argsort(-p)
        keep = order[(np.cumsum(p[order]) - p[order]) < top_p]
        out = np.zeros_like(p)
        out[keep] = p[keep]
        return out / out.sum()

    def inclusive(p, top_p):           # mass before <= top_p: one token too many
        ranked = sorted(range(len(p)), key=lambda i: (-p[i], i))
        out, before = np.zeros(len(p)), 0.0
        for i in ranked:
            if before > top_p:
                break
            out[i] = p[i]
            before += p[i]
        return out / out.sum()

    assert refused(ch18.check_3(default_sort), "tie", "smaller id")
    # NumPy's default sort can be stable on a few tokens; the 30-token case is not
    def unstable_when_long(p, top_p):
        order = np.argsort(-p, kind="stable" if len(p) < 10 else "quicksort")
        keep = order[(np.cumsum(p[order]) - p[order]) < top_p]
        out = np.zeros_like(p)
        out[keep] = p[keep]
        return out / out.sum()

    assert refused(ch18.check_3(unstable_when_long), "tie", "30 tokens")
    assert refused(ch18.check_3(inclusive), "one-too-many", "equality")


def test_3_unanswered():
    def empty(p, top_p):
        ...

    assert ch18.check_3(...).ok is None
    assert ch18.check_3(empty).ok is None

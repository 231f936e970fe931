"""Checkers for chapter 18's exercises (a language model of Python's help pages).

check_1(bpc, perplexity): the bits per character and the perplexity per character of a
    model that gives the four one-byte characters of a text the probabilities 0.5,
    0.25, 0.125 and 1.
check_2(p): the distribution top-p (p = 0.55) draws from, given the probabilities
    0.1, 0.4, 0.2, 0.2, 0.1 of ids 0 to 4.
check_3(nucleus): a NumPy function nucleus(p, top_p) for a 1-D distribution p, compared
    with the chapter's definition on distributions with ties; a function that hands p
    to torch (sorts, sums or returns a tensor there) is refused.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math

import numpy as np

from . import UNANSWERED, Mistake, Part, check_each, check_value, right, unanswered, \
    watching_torch, wrong

PROBS = [0.5, 0.25, 0.125, 1.0]
SAMPLER = [0.1, 0.4, 0.2, 0.2, 0.1]


def check_1(bpc, perplexity):
    """bpc: bits per character; perplexity: 2 ** bpc."""
    bits = -sum(math.log2(p) for p in PROBS)
    nats = -sum(math.log(p) for p in PROBS)
    expected = bits / len(PROBS)
    return check_each(
        Part("the bits per character", bpc, expected, mistakes=(
            Mistake("sum", bits, "that is the total over the text: divide by the "
                                 "number of characters."),
            Mistake("nats", nats / len(PROBS), "that is in nats (natural log): bits "
                                               "use log base 2."),
            Mistake("mean-probability", -math.log2(sum(PROBS) / len(PROBS)),
                    "that is -log2 of the mean probability: average the -log2 of each "
                    "probability instead."),
        )),
        Part("the perplexity", perplexity, 2 ** expected, mistakes=(
            Mistake("rounded", lambda a: a.size == 1 and abs(float(a) - 2 ** expected) < 0.01,
                    "that is the perplexity rounded: give 2 ** bpc as Python computes "
                    "it."),
            Mistake("total", 2 ** bits, "that is 2 to the total bits of the text: the "
                                        "perplexity per character is 2 to the bpc."),
            Mistake("e-power", math.e ** expected, "a perplexity of bits is 2 to the "
                                                   "bpc, not e to it."),
            Mistake("inverse", 2 ** -expected, "perplexity is 2 ** bpc, above 1 (an "
                                               "average number of choices)."),
        )))


def _nucleus(p, top_p):
    p = np.asarray(p, dtype=float)
    order = np.argsort(-p, kind="stable")
    before = np.cumsum(p[order]) - p[order]
    kept = np.zeros_like(p)
    kept[order[before < top_p]] = p[order[before < top_p]]
    return kept / kept.sum()


def _without_crossing(p, top_p):
    """Keeps only the tokens whose cumulative mass, with them, stays below top_p."""
    p = np.asarray(p, dtype=float)
    order = np.argsort(-p, kind="stable")
    upto = np.cumsum(p[order])
    kept = np.zeros_like(p)
    keep = order[upto < top_p]
    if len(keep) == 0:
        keep = order[:1]
    kept[keep] = p[keep]
    return kept / kept.sum()


def _larger_id_first(p, top_p):
    p = np.asarray(p, dtype=float)
    rev = _nucleus(p[::-1], top_p)
    return rev[::-1]


def _not_renormalised(p, top_p):
    kept = _nucleus(p, top_p)
    return np.where(kept > 0, np.asarray(p, dtype=float), 0.0)


def _one_too_many(p, top_p):
    """Keeps also the token ranked after a mass that equals top_p exactly."""
    p = np.asarray(p, dtype=float)
    order = np.argsort(-p, kind="stable")
    before = np.cumsum(p[order]) - p[order]
    kept = np.zeros_like(p)
    kept[order[before <= top_p]] = p[order[before <= top_p]]
    return kept / kept.sum()


def check_2(p):
    """p: five probabilities, ids 0 to 4."""
    expected = _nucleus(SAMPLER, 0.55)
    return check_value(p, expected, what="your distribution", mistakes=(
        Mistake("rounded", lambda a: a.shape == expected.shape
                and bool(np.allclose(a, expected, atol=0.01)),
                "that is the distribution rounded: give the exact fractions (2 / 3, "
                "not 0.67)."),
        Mistake("tie", _larger_id_first(SAMPLER, 0.55),
                "ids 2 and 3 tie at 0.2: the smaller id ranks first."),
        Mistake("no-crossing", _without_crossing(SAMPLER, 0.55),
                "the set must *reach* 0.55: keep the token whose mass crosses it."),
        Mistake("not-renormalised", _not_renormalised(SAMPLER, 0.55),
                "the kept probabilities must be renormalised to sum to 1."),
    ))


# The last case is long enough (30 tokens) that NumPy's default sort is not stable on
# it: the cut falls inside the group of equal largest probabilities.
_LONG = [3, 1, 2, 1, 3, 1, 2, 1, 3, 2, 1, 1, 2, 3, 1, 2, 1, 3, 2, 1, 1, 2, 3, 1, 1, 2, 3,
         1, 2, 1]
CASES = [([0.1, 0.4, 0.2, 0.2, 0.1], 0.55), ([0.25, 0.25, 0.25, 0.25], 0.3),
         ([0.7, 0.2, 0.1], 0.5), ([0.05, 0.05, 0.6, 0.3], 0.95),
         ([0.2, 0.3, 0.5], 1.0), ([0.5, 0.3, 0.2], 0.8),
         ([c / sum(_LONG) for c in _LONG], 8 / sum(_LONG))]

# torch functions a NumPy top-p has no use for: a call hands the work to torch.
TORCH_HANDOFFS = ("tensor", "as_tensor", "from_numpy", "sort", "argsort", "cumsum",
                  "topk")


@contextlib.contextmanager
def _watching_handoffs():
    """Within the block, the names of ``TORCH_HANDOFFS`` called (a list), with
    torch's attention, softmax, ... watched too (``watching_torch``)."""
    with watching_torch() as called:
        if importlib.util.find_spec("torch") is None:
            yield called
            return
        import torch

        saved = []
        for name in TORCH_HANDOFFS:
            original = getattr(torch, name)

            def spy(*args, _original=original, _name=f"torch.{name}", **kwargs):
                called.append(_name)
                return _original(*args, **kwargs)

            saved.append((name, original))
            setattr(torch, name, spy)
        try:
            yield called
        finally:
            for name, original in saved:
                setattr(torch, name, original)


def check_3(nucleus):
    """nucleus: a function (p, top_p) -> the distribution top-p draws from."""
    if unanswered(nucleus):
        return UNANSWERED
    if not callable(nucleus):
        return wrong(f"give the function itself, not a {type(nucleus).__name__}.",
                     "not-a-function")
    for p, top_p in CASES:
        case = (f"p = {p}, top_p = {top_p}" if len(p) <= 6 else
                f"a distribution of {len(p)} tokens with many ties, top_p = "
                f"{top_p:.3f}")
        try:
            with _watching_handoffs() as called:
                got = nucleus(np.array(p), top_p)
        except Exception as exc:  # the reader's code: say what it raised
            if called:
                return _torch_used(called)
            return wrong(f"nucleus raised {type(exc).__name__}: {exc}", "raises")
        if got is None:
            return UNANSWERED
        if called:
            return _torch_used(called)
        if type(got).__module__.split(".")[0] == "torch":
            return wrong("nucleus returned a torch tensor: write it in NumPy (the "
                         "exercise is the sorting, not torch's).", "torch")
        expected = _nucleus(p, top_p)
        mistakes = (
            Mistake("tie", _same_values(expected),
                    f"on {case}: equal probabilities must go to the "
                    "smaller id first (a stable sort of -p)."),
            Mistake("no-crossing", _without_crossing(p, top_p),
                    f"on {case}: keep the token whose mass crosses "
                    "top_p, so that the kept mass reaches it."),
            Mistake("one-too-many", _one_too_many(p, top_p),
                    f"on {case}: the tokens before the last one you "
                    "kept already reach top_p exactly; reaching includes equality, so "
                    "stop there (mass before a token < top_p)."),
            Mistake("not-renormalised", _not_renormalised(p, top_p),
                    f"on {case}: renormalise the kept mass to 1."),
        )
        verdict = check_value(got, expected, what="nucleus's result", mistakes=mistakes)
        if not verdict.ok:
            return verdict
    return right()


def _same_values(expected):
    """An answer with the expected probabilities on other ids (a tie broken another
    way: the larger id first, or an unstable sort)."""
    def same(a):
        return a.shape == expected.shape and bool(
            np.allclose(np.sort(a), np.sort(expected), atol=1e-9))
    return same


def _torch_used(called):
    return wrong(f"nucleus calls {called[0]}: write it in NumPy (the exercise is the "
                 "sorting and the running sum, not torch's).", "torch")

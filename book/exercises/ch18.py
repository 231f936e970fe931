"""Checkers for chapter 18's exercises (a language model of Python's help pages).

check_1(bpc, perplexity): the bits per character and the perplexity per character of a
    model that gives the four one-byte characters of a text the probabilities 0.5,
    0.25, 0.125 and 1.
check_2(p): the distribution top-p (p = 0.55) draws from, given the probabilities
    0.1, 0.4, 0.2, 0.2, 0.1 of ids 0 to 4.
check_3(nucleus): a NumPy function nucleus(p, top_p) for a 1-D distribution p, compared
    with the chapter's definition on distributions with ties.
"""

from __future__ import annotations

import math

import numpy as np

from . import UNANSWERED, Mistake, Part, check_each, check_value, right, unanswered, \
    wrong

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


def check_2(p):
    """p: five probabilities, ids 0 to 4."""
    return check_value(p, _nucleus(SAMPLER, 0.55), what="your distribution", mistakes=(
        Mistake("tie", _larger_id_first(SAMPLER, 0.55),
                "ids 2 and 3 tie at 0.2: the smaller id ranks first."),
        Mistake("no-crossing", _without_crossing(SAMPLER, 0.55),
                "the set must *reach* 0.55: keep the token whose mass crosses it."),
        Mistake("not-renormalised", _not_renormalised(SAMPLER, 0.55),
                "the kept probabilities must be renormalised to sum to 1."),
    ))


CASES = [([0.1, 0.4, 0.2, 0.2, 0.1], 0.55), ([0.25, 0.25, 0.25, 0.25], 0.3),
         ([0.7, 0.2, 0.1], 0.5), ([0.05, 0.05, 0.6, 0.3], 0.95),
         ([0.2, 0.3, 0.5], 1.0), ([0.5, 0.3, 0.2], 0.8)]


def check_3(nucleus):
    """nucleus: a function (p, top_p) -> the distribution top-p draws from."""
    if unanswered(nucleus):
        return UNANSWERED
    if not callable(nucleus):
        return wrong(f"give the function itself, not a {type(nucleus).__name__}.",
                     "not-a-function")
    for p, top_p in CASES:
        try:
            got = nucleus(np.array(p), top_p)
        except Exception as exc:  # the reader's code: say what it raised
            return wrong(f"nucleus raised {type(exc).__name__}: {exc}", "raises")
        if got is None:
            return UNANSWERED
        if type(got).__module__.split(".")[0] == "torch":
            return wrong("nucleus returned a torch tensor: write it in NumPy (the "
                         "exercise is the sorting, not torch's).", "torch")
        expected = _nucleus(p, top_p)
        mistakes = (
            Mistake("tie", _larger_id_first(p, top_p),
                    f"on p = {p}, top_p = {top_p}: equal probabilities must go to the "
                    "smaller id first (a stable sort of -p)."),
            Mistake("no-crossing", _without_crossing(p, top_p),
                    f"on p = {p}, top_p = {top_p}: keep the token whose mass crosses "
                    "top_p, so that the kept mass reaches it."),
            Mistake("not-renormalised", _not_renormalised(p, top_p),
                    f"on p = {p}, top_p = {top_p}: renormalise the kept mass to 1."),
        )
        verdict = check_value(got, expected, what="nucleus's result", mistakes=mistakes)
        if not verdict.ok:
            return verdict
    return right()

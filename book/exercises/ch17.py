"""Checkers for chapter 17's exercises (English number words into German).

check_1(merge_5, merge_6): merges 5 and 6 of BPE on the four words of the hand example,
    each a pair of symbols; the expected ones are BPE.learn's.
check_2(scores): the scores log Pr / lp(|ŷ|) of the finished translations A (3 tokens,
    log Pr = -1.2) and B (6 tokens, -1.4), a 3 × 2 array: rows α = 0, 0.6, 1, columns
    A, B.
check_3(em, chrf): the exact match and the corpus chrF (0 to 100) of a model that writes
    every one of the chapter's development numbers (all those below 10,000 and 500 drawn
    above) without its last letter.
"""

from __future__ import annotations

import functools

import numpy as np

import mini_transformer as mt
from mini_transformer.number_words.data import dev_test_numbers, number_words

from . import UNANSWERED, Mistake, Verdict, check_value, right, unanswered, wrong
from . import Part, check_each

CORPUS = ["dreihundert", "vierhundert", "dreiundvierzig", "vierunddreißig"]


def _merges(n, tie=max, apply=True):
    """The first n merges on CORPUS, each word counted once. From merge 5 on (the
    exercise's), ``tie`` picks among the most frequent pairs, and ``apply=False``
    leaves each merge unapplied (a reader's slips); the first four are the chapter's."""
    words = {(*w[:-1], w[-1] + "</w>"): 1 for w in CORPUS}
    merges = []
    for i in range(n):
        counts = {}
        for symbols, freq in words.items():
            for pair in zip(symbols, symbols[1:]):
                counts[pair] = counts.get(pair, 0) + freq
        top = max(counts.values())
        best = (tie if i >= 4 else max)(p for p in counts if counts[p] == top)
        merges.append(best)
        if not apply and i >= 4:
            continue
        new = {}
        for symbols, freq in words.items():
            out, j = [], 0
            while j < len(symbols):
                if symbols[j:j + 2] == best:
                    out.append(best[0] + best[1])
                    j += 2
                else:
                    out.append(symbols[j])
                    j += 1
            new[tuple(out)] = freq
        words = new
    return merges


def _pair(answer):
    """A merge as a tuple of two strings, or None if it is not one."""
    if isinstance(answer, (tuple, list)) and len(answer) == 2 and all(
            isinstance(s, str) for s in answer):
        return tuple(answer)
    return None


def check_1(merge_5, merge_6) -> Verdict:
    """merge_5, merge_6: the fifth and sixth merges, each a pair such as ("a", "b")."""
    if unanswered(merge_5) and unanswered(merge_6):
        return UNANSWERED
    n_alphabet = 2 * len(set("".join(CORPUS)))
    learned = mt.BPE.learn(CORPUS, vocab_size=3 + n_alphabet + 6).merges
    expected = tuple(learned[4:6])
    given = []
    for name, answer in (("merge_5", merge_5), ("merge_6", merge_6)):
        if unanswered(answer):
            given.append(None)
            continue
        pair = _pair(answer)
        if pair is None:
            joined = isinstance(answer, str)
            example = '("a", "b")'
            return wrong(f"give {name} as a pair of two symbols, e.g. {example}"
                         + (", not the merged string." if joined else "."),
                         "joined" if joined else "not-a-pair")
        given.append(pair)
    mistakes = [
        ("tie-break", tuple(_merges(6, tie=min)[4:6]),
         "your merges break the ties between equally frequent pairs the other way: "
         "read again how the chapter breaks them."),
        ("swapped", expected[::-1], "the two merges are in the wrong order."),
        ("not-applied", tuple(_merges(6, apply=False)[4:6]),
         "your merge 6 is counted on words where merge 5 was not yet applied: "
         "replace the pair in every word before counting again."),
    ]
    complete = None not in given
    if complete and tuple(given) != expected:
        for key, wrong_pair, message in mistakes:
            if tuple(given) == wrong_pair:
                return wrong(message, key)
    for name, pair, want in zip(("merge_5", "merge_6"), given, expected):
        if pair is not None and pair != want:
            return wrong(f"{name} {pair[0]} + {pair[1]} is not the most frequent pair "
                         "at that point: count the adjacent pairs again.", "value")
    if not complete:
        return Verdict(None, "Right so far. No answer yet for the other merge: replace "
                             "the ... and run this cell again.")
    return right("Check them with mt.BPE.learn.")


def check_2(scores) -> Verdict:
    """scores: 3 × 2, rows α = 0, 0.6, 1; columns A (3 tokens), B (6 tokens)."""
    alphas, logp, lengths = (0.0, 0.6, 1.0), np.array([-1.2, -1.4]), np.array([3, 6])

    def table(lp):
        return np.array([[logp[j] / lp(lengths[j], a) for j in range(2)]
                         for a in alphas])

    expected = table(mt.length_penalty)
    mistakes = [
        Mistake("multiplied", table(lambda n, a: 1 / mt.length_penalty(n, a)),
                "you multiplied by the length penalty: the score divides by it."),
        Mistake("no-six", table(lambda n, a: (5 + n) ** a),
                "your penalty leaves out the division by (5 + 1)^α."),
        Mistake("length-only", table(lambda n, a: n**a),
                "your penalty is the length to the power α: the formula adds 5 to "
                "the length first."),
        Mistake("sign", -expected,
                "your scores are positive: a log-probability is negative, and so is "
                "its score."),
    ]
    return check_value(scores, expected, what="your scores", mistakes=mistakes,
                       rtol=0, atol=6e-4,
                       praise="In each row the larger (less negative) score wins.")


@functools.lru_cache(maxsize=1)
def _cut_scores():
    """The exact match and chrF of the references cut by a letter, and the mistakes'."""
    dev, _ = dev_test_numbers()
    above = np.random.default_rng(4).choice(dev[dev >= 10_000], 500, replace=False)
    numbers = np.union1d(dev[dev < 10_000], above)   # the chapter's numbers
    refs = [de for _, de in number_words(numbers)]
    cut = [r[:-1] for r in refs]
    return {
        "em": mt.exact_match(cut, refs),
        "chrf": mt.corpus_chrf(cut, refs),
        "swapped": mt.corpus_chrf(refs, cut),
        "mean": float(np.mean([mt.corpus_chrf([c], [r]) for c, r in zip(cut, refs)])),
    }


def check_3(em, chrf) -> Verdict:
    """em: the exact match (a fraction); chrf: the corpus chrF, on a 0 to 100 scale."""
    if unanswered(em) and unanswered(chrf):
        return UNANSWERED
    s = _cut_scores()
    chrf_mistakes = [
        Mistake("fraction", s["chrf"] / 100,
                "your chrF is on a 0 to 1 scale: it is reported from 0 to 100."),
        Mistake("swapped", s["swapped"],
                "your chrF has the hypotheses and the references swapped: chrF weighs "
                "recall more than precision, so the order matters."),
        Mistake("sentence-mean", s["mean"],
                "your chrF is the mean of the sentences' chrFs: the corpus chrF sums "
                "the n-gram counts over all sentences first."),
    ]
    return check_each(
        Part("em", em, s["em"], atol=1e-9),
        Part("chrf", chrf, s["chrf"], chrf_mistakes, rtol=0, atol=0.06),
        praise="So what does a chrF of 97 say about a model's numbers?")

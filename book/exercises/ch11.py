"""Checkers for chapter 11's exercises (why self-attention).

check_1: the sequence length at which the attention core of one encoder layer of the big
    model (d_model = 1024, d_ff = 4096) costs as many multiply-adds as the rest: an int.
check_2: the same crossover for a decoder layer at the base sizes (d_model = 512,
    d_ff = 2048), source and target of the same length n: an int.
check_3: the smallest causal window r (keys) with which six layers connect every pair
    j <= i of 40 positions: an int.
check_4: the connected (input, output) pairs of 16 positions after each of five centred
    dilated convolutions (kernel 3, dilations 1, 3, 9, 27, 81, zero padding): five ints.
"""

from __future__ import annotations

import math

import numpy as np

from . import UNANSWERED, Mistake, Verdict, check_value, unanswered, wrong


def _not_whole(a):
    return a.shape == () and abs(float(a) - round(float(a))) > 1e-9


# --- exercises 1 and 2: crossovers, from 2 n² d (per core) against the rest -----------

def _encoder_crossover(d, d_ff, *, core=2, projections=4, ffn=True):
    # core · n² d = projections · n d² + 2 n d d_ff (if ffn), solved for n
    return (projections * d * d + (2 * d * d_ff if ffn else 0)) / (core * d)


def check_1(n_star) -> Verdict:
    """n_star: the length at which the big encoder layer's core equals the rest."""
    if unanswered(n_star):
        return UNANSWERED
    d, d_ff = 1024, 4096
    mistakes = [
        Mistake("base", _encoder_crossover(512, 2048),
                "that is the crossover at the base sizes: take the big model's."),
        Mistake("one-product", _encoder_crossover(d, d_ff, core=1),
                "your core has one product: it computes QKᵀ and AV, 2 n² d_model "
                "multiply-adds in all."),
        Mistake("no-projections", _encoder_crossover(d, d_ff, projections=0),
                "you left out the projections W^Q, W^K, W^V, W^O, 4 n d_model² "
                "multiply-adds."),
        Mistake("three-projections", _encoder_crossover(d, d_ff, projections=3),
                "you counted three projections: W^O is the fourth."),
        Mistake("no-ffn", _encoder_crossover(d, d_ff, ffn=False),
                "you left out the FFN, 2 n d_model d_ff multiply-adds."),
    ]
    return check_value(n_star, _encoder_crossover(d, d_ff), what="your length",
                       mistakes=mistakes, rtol=0, atol=0.5)


def _decoder_crossover(d, d_ff, *, cores=2, projections=8, ffn=True):
    # cores · 2 n² d = projections · n d² + 2 n d d_ff, solved for n
    return (projections * d * d + (2 * d * d_ff if ffn else 0)) / (cores * 2 * d)


def check_2(n_star) -> Verdict:
    """n_star: the length n at which a base decoder layer's two cores equal the rest."""
    if unanswered(n_star):
        return UNANSWERED
    d, d_ff = 512, 2048
    mistakes = [
        Mistake("encoder", _encoder_crossover(d, d_ff),
                "that is an encoder layer's crossover: a decoder layer has two "
                "attentions and one FFN."),
        Mistake("one-core", _decoder_crossover(d, d_ff, cores=1),
                "you counted one attention core: the self-attention and the "
                "cross-attention each compute 2 n² d_model multiply-adds."),
        Mistake("one-attention-projections", _decoder_crossover(d, d_ff, projections=4),
                "you counted the projections of one attention: each of the two has "
                "four."),
        Mistake("no-ffn", _decoder_crossover(d, d_ff, ffn=False),
                "you left out the FFN, 2 n d_model d_ff multiply-adds."),
    ]
    return check_value(n_star, _decoder_crossover(d, d_ff), what="your length",
                       mistakes=mistakes, rtol=0, atol=0.5)


# --- exercise 3: a causal window of r keys, six layers, 40 positions ------------------

N_POSITIONS, N_LAYERS = 40, 6


def _window_connects(r, n=N_POSITIONS, layers=N_LAYERS):
    """Every pair j <= i connected after `layers` windows of r keys (reachability)."""
    i, j = np.indices((n, n))
    step = ((j <= i) & (j > i - r)).astype(int)
    reach = np.eye(n, dtype=int)
    for _ in range(layers):
        reach = np.minimum(step @ reach, 1)
    return bool(reach[j <= i].all())


def check_3(r) -> Verdict:
    """r: the smallest number of keys in the window."""
    if unanswered(r):
        return UNANSWERED
    expected = next(k for k in range(1, N_POSITIONS + 1) if _window_connects(k))
    try:
        value = float(np.asarray(r, dtype=float))
    except (TypeError, ValueError):
        return wrong("give r as a whole number.")
    mistakes = [
        Mistake("not-whole", _not_whole,
                "r counts keys, a whole number: round the bound up."),
        Mistake("one-short", expected - 1,
                "one key short: a window of r keys reaches r − 1 positions back per "
                "layer, the query's own key being one of the r."),
        Mistake("too-small", lambda a: a.shape == () and 1 <= float(a) < expected - 1,
                "too small: six layers of this window leave some pairs unconnected."),
        Mistake("not-smallest", lambda a: a.shape == () and float(a) > expected,
                "this window connects every pair, but a smaller one does too."),
    ]
    return check_value(value, expected, what="your r", mistakes=mistakes, rtol=0,
                       atol=1e-9)


# --- exercise 4: centred dilated convolutions on 16 positions -------------------------

N_CONV, KERNEL, N_CONV_LAYERS = 16, 3, 5


def _conv_counts(offsets, *, cumulative=True, lower=False, edges=True):
    """Connected pairs after each layer; offsets(dilation) are the taps' j - i."""
    n = N_CONV
    i, j = np.indices((n, n))
    reach, reached = np.eye(n, dtype=int), {0}
    counts = []
    for layer in range(N_CONV_LAYERS):
        taps = offsets(KERNEL**layer)
        if edges:
            step = np.isin(j - i, taps).astype(int)
            reach = np.minimum(step @ reach, 1) if cumulative else step
        else:                                  # offsets as if the sequence had no ends
            reached = {a + t for a in reached for t in taps}
            reach = np.isin(j - i, sorted(reached)).astype(int)
        counts.append(int((reach * (j <= i) if lower else reach).sum()))
    return np.array(counts)


def _centred(dilation):
    return [-dilation, 0, dilation]


def check_4(counts) -> Verdict:
    """counts: the connected pairs after layers 1 to 5 (five ints)."""
    if unanswered(counts):
        return UNANSWERED
    expected = _conv_counts(_centred)
    mistakes = [
        Mistake("no-edges", _conv_counts(_centred, edges=False),
                "those counts ignore the ends of the sequence: a path through a "
                "position outside 0..15 reads zero padding and carries nothing."),
        Mistake("one-layer", _conv_counts(_centred, cumulative=False),
                "those are the pairs of each layer alone: count what the stack of "
                "layers 1..L connects."),
        Mistake("lower-only", _conv_counts(_centred, lower=True),
                "you counted the pairs with j <= i only: a centred convolution also "
                "connects an output to later inputs."),
        Mistake("causal", _conv_counts(lambda dil: [-2 * dil, -dil, 0]),
                "those are the counts of the causal stack (left padding): pad "
                "`dilation` on both sides."),
    ]
    return check_value(counts, expected, what="your counts", mistakes=mistakes,
                       rtol=0, atol=0.5)

"""Checkers for chapter 5's exercises (multi-head attention).

check_1: (weights, weights + biases) of a multi-head sub-layer, d_model 1024, h 16.
check_2: a function permute_W_O(W_O, perm), W^O for the heads taken in the order perm.
check_3: bool (6, 6), the weights zero in every head under causal_mask(6).
check_4: the bytes of one layer's float32 attention weights, n = 4096, h = 8.
check_5: the shapes of W_V, W_O, the output and the weights for d_k = 3, d_v = 5.
"""

from __future__ import annotations

import numpy as np

import mini_transformer as mt
from exercises import (
    Mistake, UNANSWERED, check_function, check_value, right, unanswered, wrong,
)


def check_1(counts):
    """counts = (weights, weights + biases) of one sub-layer of the big model."""
    d, h = 1024, 16
    p = mt.MultiHeadParams.random(np.random.default_rng(0), d_model=d, n_heads=h)
    n_w = sum(getattr(p, f).size for f in ("W_Q", "W_K", "W_V", "W_O"))
    n_b = sum(getattr(p, f).size for f in ("b_Q", "b_K", "b_V", "b_O"))
    d_k = p.d_k

    def pair(pred):
        return lambda a: a.shape == (2,) and bool(pred(*a))

    mistakes = [
        Mistake("one-number", lambda a: a.ndim == 0,
                "give two numbers, (weights, weights + biases)."),
        Mistake("swapped", [n_w + n_b, n_w],
                "the two counts are swapped: weights first, then weights + biases."),
        Mistake("no-W_O", [n_w - d * d, n_w + n_b - d * d - d],
                "the output projection W^O (and its bias) is missing."),
        Mistake("full-width-heads", pair(lambda w, t: w == 4 * h * d * d),
                "each head projects to d_k = d_model / h features, not to d_model."),
        Mistake("one-head", pair(lambda w, t: w == 4 * d * d_k),
                "you counted the weights of one head only: there are h of them."),
        Mistake("no-biases", pair(lambda w, t: w == n_w and t == w),
                "your second count has no biases: b^Q, b^K, b^V and b^O add to it."),
        Mistake("biases-once", pair(lambda w, t: w == n_w and t == w + 3 * d_k + d),
                "each head has its own biases b_i^Q, b_i^K, b_i^V, not one set shared "
                "by all heads."),
    ]
    return check_value(counts, [n_w, n_w + n_b], what="your counts",
                       mistakes=mistakes, rtol=1e-9, atol=0)


def _block_rows(perm, d_v):
    # the rows of W^O, in the new order: head perm[0]'s block first, ...
    return np.concatenate([np.arange(i * d_v, (i + 1) * d_v) for i in perm])


def check_2(permute_W_O):
    """permute_W_O(W_O, perm) -> W_O, head perm[k]'s block of rows moved to place k."""
    rng = np.random.default_rng(2)
    cases = []
    for h, d_v, d_model, perm in ((4, 2, 8, [2, 0, 3, 1]), (3, 3, 5, [1, 2, 0]),
                                  (2, 4, 6, [1, 0])):
        W_O = rng.normal(size=(h * d_v, d_model))
        perm = np.array(perm)
        cases.append(((W_O, perm), W_O[_block_rows(perm, d_v)]))

    def d_v_of(W_O, perm):
        return W_O.shape[0] // len(perm)

    mistakes = [
        Mistake("unchanged", lambda W_O, perm: W_O,
                "you returned W_O unchanged: its blocks still follow the old order of "
                "the heads."),
        Mistake("inverse", lambda W_O, perm: W_O[_block_rows(np.argsort(perm),
                                                            d_v_of(W_O, perm))],
                "you moved the blocks with the inverse permutation: the new head k is "
                "the old head perm[k]."),
        Mistake("single-rows", lambda W_O, perm: W_O[perm],
                "you permuted single rows of W_O: each head owns a block of d_v rows."),
        Mistake("interleaved", lambda W_O, perm: W_O.reshape(
                    d_v_of(W_O, perm), len(perm), -1)[:, perm].reshape(W_O.shape),
                "you treated the rows as interleaved (row r for head r mod h): the "
                "rows of one head are consecutive."),
    ]
    return check_function(permute_W_O, cases, what="your permute_W_O",
                          mistakes=mistakes, rtol=0, atol=0)


def _six_tokens(d_model=8):
    rng = np.random.default_rng(5)
    return rng.normal(size=(6, d_model))


def check_3(zero):
    """zero: bool (6, 6), True where every head's weight is 0 under causal_mask(6)."""
    X = _six_tokens()
    p = mt.MultiHeadParams.random(np.random.default_rng(6), d_model=8, n_heads=4)
    causal = mt.causal_mask(6)
    _, w = mt.multi_head_attention(X, p, mask=causal)
    expected = np.all(w == 0, axis=0)                        # (6, 6)
    mistakes = [
        Mistake("may-attend", causal,
                "you marked the weights that may be non-zero (causal_mask's True = may "
                "attend): the same polarity slip to avoid with torch's attn_mask."),
        Mistake("diagonal", np.triu(np.ones((6, 6), dtype=bool)),
                "the diagonal is not zero: a token may attend to itself."),
        Mistake("lower", np.tril(np.ones((6, 6), dtype=bool), k=-1),
                "these are the earlier keys, which a query may see: rows are queries, "
                "columns keys."),
        Mistake("additive", lambda a: bool(np.isneginf(a).any()),
                "your array holds -inf: that is an additive mask; give True/False, "
                "True where the weight is zero."),
        Mistake("per-head", lambda a: a.ndim == 3,
                "one (6, 6) array is asked for: the weights that are zero in every "
                "head."),
    ]
    return check_value(zero, expected, what="your array", mistakes=mistakes,
                       rtol=0, atol=0)


def check_4(n_bytes):
    """n_bytes: bytes of one layer's float32 weights, one sequence, n = 4096, h = 8."""
    n, h = 4096, 8
    size = np.dtype(np.float32).itemsize
    expected = h * n * n * size
    mistakes = [
        Mistake("float64", h * n * n * 8, "that is the size in float64: float32 takes "
                "4 bytes per number."),
        Mistake("bits", h * n * n * size * 8, "that is bits, not bytes."),
        Mistake("count", h * n * n, "that is the number of weights: each float32 takes "
                "4 bytes."),
        Mistake("one-head", n * n * size, "that is one head: the layer has h of them."),
        Mistake("MiB", expected / 2**20, "that is in MiB: give the number of bytes."),
        Mistake("GiB", expected / 2**30, "that is in GiB: give the number of bytes."),
        Mistake("GB", expected / 1e9, "that is in GB: give the number of bytes."),
        Mistake("times-d_k", lambda a: a.ndim == 0 and a > 0 and a % expected == 0
                and a // expected in (8, 64, 512),
                "you multiplied by a feature width: each weight is one number per "
                "query and key, whatever d_k is."),
    ]
    return check_value(n_bytes, expected, what="your number of bytes",
                       mistakes=mistakes, rtol=1e-9, atol=0)


def check_5(shapes):
    """shapes = (W_V, W_O, output, weights), for d_model 8, h 2, d_k 3, d_v 5, n 6."""
    if unanswered(shapes):
        return UNANSWERED
    d_model, h, d_k, d_v = 8, 2, 3, 5
    X = _six_tokens(d_model)
    rng = np.random.default_rng(7)
    W_V, W_O = (h, d_model, d_v), (h * d_v, d_model)   # the head-major layout's rules
    p = mt.MultiHeadParams(
        W_Q=rng.normal(size=(h, d_model, d_k)), W_K=rng.normal(size=(h, d_model, d_k)),
        W_V=rng.normal(size=W_V), W_O=rng.normal(size=W_O),
        b_Q=np.zeros((h, d_k)), b_K=np.zeros((h, d_k)), b_V=np.zeros((h, d_v)),
        b_O=np.zeros(d_model))
    out, w = mt.multi_head_attention(X, p)        # the package accepts them, and says
    expected = [W_V, W_O, out.shape, w.shape]
    names = ["W_V", "W_O", "the output", "the weights"]
    try:
        given = [tuple(int(s) for s in shape) for shape in shapes]
    except (TypeError, ValueError):
        return wrong("give four shapes, each a tuple of integers: "
                     "(W_V, W_O, output, weights).", "form")
    if len(given) != 4:
        return wrong(f"give four shapes (W_V, W_O, output, weights), not {len(given)}.",
                     "form")
    n = X.shape[0]
    hints = {  # name: {wrong shape: (key, message)}
        "W_V": {
            (h, d_model, d_k): ("W_V-d_k", "W_V projects to the values: its last axis "
                                "is d_v, not d_k."),
            (h, d_v, d_model): ("W_V-transposed", "W_V's axes are swapped: the package "
                                "computes X @ W_V[i], so d_model comes before d_v."),
            (d_model, h * d_v): ("W_V-no-head-axis", "W_V keeps a head axis first "
                                 "(head-major), one d_model x d_v matrix per head."),
            (d_model, d_v): ("W_V-no-head-axis", "W_V keeps a head axis first "
                             "(head-major), one d_model x d_v matrix per head."),
        },
        "W_O": {
            (h * d_k, d_model): ("W_O-d_k", "the heads concatenate their values: W_O "
                                 "has h d_v rows, not h d_k."),
            (d_model, d_model): ("W_O-square", "W_O is d_model x d_model only when "
                                 "h d_v = d_model, not here."),
            (d_model, h * d_v): ("W_O-transposed", "W_O's axes are swapped: the "
                                 "concatenated heads (n, h d_v) multiply W_O from the "
                                 "left."),
            (d_v, d_model): ("W_O-one-head", "that is one head's block of W_O: all h "
                             "heads are concatenated."),
        },
        "the output": {
            (n, h * d_v): ("output-no-W_O", "that is the concatenation before W_O, "
                           "which maps it back to d_model."),
            (h, n, d_v): ("output-heads", "that is the heads before concatenation and "
                          "W_O."),
            (n, d_v): ("output-one-head", "that is one head's output, before W_O."),
        },
        "the weights": {
            (n, n): ("weights-one-head", "the weights come per head: one n x n matrix "
                     "for each of the h heads."),
            (h, n, d_k): ("weights-d_k", "a weight is one number per query and key: "
                          "d_k does not appear in their shape."),
            (h, n, d_v): ("weights-d_v", "a weight is one number per query and key: "
                          "d_v does not appear in their shape."),
        },
    }
    for name, got, exp in zip(names, given, expected):
        if got == exp:
            continue
        if got in hints[name]:
            key, message = hints[name][got]
            return wrong(message, key)
        return wrong(f"the shape of {name}, {got}, is not it.", "shape")
    return right()

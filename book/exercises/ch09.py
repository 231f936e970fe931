"""Checkers for chapter 9's exercises (the decoder).

check_1: the parameters of one decoder layer of the big model and of its stack of six,
    a pair of ints (d_model = 1024, h = 16, d_ff = 4096).
check_3: the output rows of the page's two-layer decoder that move when `tgt_out[2]` is
    changed and `tgt_out` (no shift) is the input, with the causal mask: a list of rows.
check_4: the largest absolute change of row 0 of head 0 (first decoder layer, the page's
    mask M) when the last input token becomes 2, with the softmax over each row and over
    each column: a pair of floats.

Exercise 2 (why one key makes W^Q and W^K irrelevant: yes/no observations) has no
checker.
"""

from __future__ import annotations

import functools
import math

import numpy as np

import mini_transformer as mt
from mini_transformer import tasks

from . import UNANSWERED, Mistake, Verdict, check_value, unanswered, wrong

D_BIG, H_BIG, D_FF_BIG, N_LAYERS = 1024, 16, 4096, 6


# --- exercise 1 -----------------------------------------------------------------------

def _layer_count(d, d_ff, *, attentions=2, norms=3, biases=True):
    attention = 4 * d * d + (4 * d if biases else 0)
    ffn = 2 * d * d_ff + (d_ff + d if biases else 0)
    return attentions * attention + ffn + norms * 2 * d


def _pair_entry(i, *values):
    """A predicate: the answer is a pair whose entry i equals one of values."""
    def matches(a):
        return a.shape == (2,) and any(abs(float(a[i]) - v) < 0.5 for v in values)
    return matches


def check_1(counts) -> Verdict:
    """counts: (parameters of one big decoder layer, parameters of the stack of six)."""
    if unanswered(counts):
        return UNANSWERED
    layer = _layer_count(D_BIG, D_FF_BIG)
    encoder = _layer_count(D_BIG, D_FF_BIG, attentions=1, norms=2)
    mistakes = [
        Mistake("encoder-layer", _pair_entry(0, encoder),
                "that is the count of an encoder layer: a decoder layer adds a second "
                "attention, the cross-attention, and a third LayerNorm."),
        Mistake("one-attention",
                _pair_entry(0, _layer_count(D_BIG, D_FF_BIG, attentions=1)),
                "your layer count has one attention: the self-attention and the "
                "cross-attention each have their own four projections."),
        Mistake("two-norms", _pair_entry(0, _layer_count(D_BIG, D_FF_BIG, norms=2)),
                "your layer count has two LayerNorms: a decoder layer has three, one "
                "after each of its three sub-layers."),
        Mistake("no-biases", _pair_entry(
                    0, _layer_count(D_BIG, D_FF_BIG, biases=False),
                    _layer_count(D_BIG, D_FF_BIG, biases=False, norms=0)),
                "your layer count has no biases: each projection and each FFN layer "
                "adds a bias vector."),
        Mistake("swapped", np.array([N_LAYERS * layer, layer]),
                "the two numbers are swapped: one layer first, then the stack."),
        Mistake("stack", lambda a: _pair_entry(0, layer)(a)
                and not _pair_entry(1, N_LAYERS * layer)(a),
                "your layer count is right, your stack is not: the decoder stacks "
                "N = 6 identical layers and nothing else."),
    ]
    return check_value(counts, [layer, N_LAYERS * layer], what="your pair of counts",
                       mistakes=mistakes, rtol=0, atol=0.5)


# --- the page's data (its first cells, same seed, same order of draws) ----------------

@functools.lru_cache(maxsize=1)
def _page():
    rng = np.random.default_rng(0)
    vocab_size = 10
    src, tgt_in, tgt_out = tasks.reverse_task(rng, batch=1, length=5,
                                              vocab_size=vocab_size)
    model = mt.TransformerParams.random(rng, vocab_size=vocab_size + 1, d_model=16,
                                        n_heads=2, n_layers=2)
    memory = mt.encoder(mt.embed(src, model.embedding), model.encoder_layers)
    return src, tgt_in, tgt_out, model, memory


def _other(tokens, t):
    changed = tokens.copy()
    changed[0, t] = 2 if tokens[0, t] != 2 else 3
    return changed


def _moved_rows(tokens, t, mask=True):
    _, _, _, model, memory = _page()
    E, n = model.embedding, tokens.shape[1]
    causal = mt.causal_mask(n) if mask else None

    def run(toks):
        return mt.decoder(mt.embed(toks, E), memory, model.decoder_layers, causal)

    delta = np.linalg.norm(run(_other(tokens, t)) - run(tokens), axis=-1)[0]
    return np.flatnonzero(delta > 0)


def _as_rows(answer):
    """A list of rows, or a bool array over the rows (True = moved), sorted."""
    a = np.asarray(answer)
    if a.dtype == bool:
        return np.flatnonzero(a)
    return np.sort(a.ravel()) if a.ndim else a


def check_3(moved) -> Verdict:
    """moved: the rows of the decoder's output that move, e.g. a list of ints."""
    if unanswered(moved):
        return UNANSWERED
    _, tgt_in, tgt_out, _, _ = _page()
    try:
        rows = _as_rows(moved)
    except (TypeError, ValueError):
        return wrong("give the rows that move as a list of ints.")
    expected = _moved_rows(tgt_out, 2)
    mistakes = [
        Mistake("kept-shift", _moved_rows(tgt_in, 3),
                "those are the rows that move when the input is still shifted "
                "(`tgt_in`, where tgt_out[2] sits at position 3): feed `tgt_out` "
                "itself."),
        Mistake("no-mask", _moved_rows(tgt_out, 2, mask=False),
                "every row moves only without the causal mask: keep the mask."),
        Mistake("one-based", expected + 1,
                "the rows are counted from 1: number them from 0, as the arrays do."),
    ]
    return check_value(rows, expected, what="your list of rows", mistakes=mistakes)


# --- exercise 4 -----------------------------------------------------------------------

def _head0(Y, axis, *, scale=True, bias=True, mask=True):
    _, tgt_in, _, model, _ = _page()
    p = model.decoder_layers[0].self_attn
    n = tgt_in.shape[1]
    M = np.where(mt.causal_mask(n), 0.0, -np.inf)

    def proj(W, b):
        return Y[0] @ W[0] + (b[0] if bias else 0.0)

    q, k, v = proj(p.W_Q, p.b_Q), proj(p.W_K, p.b_K), proj(p.W_V, p.b_V)
    scores = q @ k.T / (math.sqrt(p.d_k) if scale else 1.0) + (M if mask else 0.0)
    return mt.softmax(scores, axis=axis) @ v


def _row0_changes(rows=slice(0, 1), measure="max", **kw):
    _, tgt_in, _, model, _ = _page()
    E = model.embedding
    Y, Y_last = mt.embed(tgt_in, E), mt.embed(_other(tgt_in, tgt_in.shape[1] - 1), E)
    out = []
    for axis in (-1, 0):
        d = _head0(Y_last, axis, **kw)[rows] - _head0(Y, axis, **kw)[rows]
        out.append(np.abs(d).max() if measure == "max" else np.linalg.norm(d))
    return np.array(out)


def check_4(changes) -> Verdict:
    """changes: (max |change| of row 0, softmax over rows; the same, over columns)."""
    if unanswered(changes):
        return UNANSWERED
    expected = _row0_changes()
    mistakes = [
        Mistake("swapped", lambda a: a.shape == (2,) and abs(float(a[1])) <= 1e-9
                < abs(float(a[0])),
                "the two numbers are swapped: first the softmax over each row, then "
                "over each column."),
        Mistake("all-rows", _row0_changes(rows=slice(None)),
                "that is the change of the whole output: the question is about row 0."),
        Mistake("norm", _row0_changes(measure="norm"),
                "that is the Euclidean length of the change: give the largest absolute "
                "change of an entry of row 0."),
        Mistake("no-scale", _row0_changes(scale=False),
                "the scores are not divided by √d_k."),
        Mistake("no-bias", _row0_changes(bias=False),
                "the projections miss their biases b_Q, b_K, b_V."),
        Mistake("no-mask", lambda a: a.shape == (2,) and abs(float(a[0])) > 1e-9,
                "row 0 moves with the softmax over each row: add the mask M to the "
                "scores before the softmax, and change only the last token."),
    ]
    return check_value(changes, expected, what="your pair of changes",
                       mistakes=mistakes, rtol=1e-6, atol=1e-9)

"""Checkers for the exercises of the orientation chapter.

- ``check_1(tau)``: the temperature below which "cat" gets at least 0.99 of the weight.
- ``check_2(shapes)``: the shapes of X, mem, H, P and of one head's weights A in the
  three kinds of attention, for the paper's base model, 20 source and 25 target tokens.
- ``check_3(rows)``: the rows of P that change when the last target token, or a source
  token, is replaced.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

import mini_transformer as mt
from . import Mistake, Verdict, check_parts, check_value, unanswered, wrong


# --- exercise 1: how cold is hard? ----------------------------------------------------

_K = np.array([[2.0, 0.0], [1.0, 1.0], [0.0, 2.0]])   # keys of cat, dog, car


def _cat_weight(tau: float, scale: float = math.sqrt(2.0)) -> float:
    scores = _K[0] @ _K.T / scale
    return float(mt.softmax(scores, temperature=tau)[0])


def _tau_99(scores: np.ndarray, n_keys: int = 3) -> float:
    """The tau at which the first key gets 0.99, from the gaps (car's twice dog's)."""
    gap = scores[0] - scores[1]
    if n_keys == 2:                       # 1 / (1 + u) = 0.99
        return float(gap / math.log(99))
    u = (-1 + math.sqrt(1 + 4 / 99)) / 2  # u + u^2 = 1/99, u = exp(-gap / tau)
    return float(gap / -math.log(u))


def check_1(tau) -> Verdict:
    scaled = _K[0] @ _K.T / math.sqrt(2.0)
    expected = _tau_99(scaled)
    mistakes = [
        Mistake("unscaled", _tau_99(scaled * math.sqrt(2.0)),
                "off by a factor √d_k: did you divide the scores q·k_j by √d_k "
                "before the temperature?"),
        Mistake("two-keys", _tau_99(scaled, n_keys=2),
                "that τ gives 0.99 against \"dog\" alone: \"car\" takes a little of "
                "the weight too."),
        Mistake("inverse", 1 / expected,
                "that is 1/τ: the softmax divides the scores by τ."),
    ]
    verdict = check_value(tau, expected, what="τ", mistakes=mistakes, rtol=5e-4, atol=0)
    if verdict.mistake == "value":
        t = float(np.asarray(tau, dtype=float))
        if not t > 0:
            return wrong("a temperature is positive.", "not-positive")
        a = _cat_weight(t)
        side = "less than 0.99" if a < 0.99 else "more than 0.99: a larger τ still does"
        return wrong(f"at your τ \"cat\" gets {a:.4f} of the weight, {side}.", "value")
    return verdict


# --- exercise 2: the paper's shapes ---------------------------------------------------

PAPER = dict(n_vocab=37000, d_model=512, h=8)
N_SRC, N_TGT = 20, 25
SHAPE_KEYS = ("X", "mem", "H", "P", "A, encoder", "A, decoder self", "A, cross")


def _expected_shapes(n_src=N_SRC, n_tgt=N_TGT, d=PAPER["d_model"], v=PAPER["n_vocab"]):
    return {"X": (n_src, d), "mem": (n_src, d), "H": (n_tgt, d), "P": (n_tgt, v),
            "A, encoder": (n_src, n_src), "A, decoder self": (n_tgt, n_tgt),
            "A, cross": (n_tgt, n_src)}


def _is_shape(shape):
    return lambda a: a.shape == (len(shape),) and tuple(a.tolist()) == shape


def _has_heads(a):
    return a.shape == (3,) and a[0] == PAPER["h"]


def check_2(shapes) -> Verdict:
    d, v, h = PAPER["d_model"], PAPER["n_vocab"], PAPER["h"]
    heads = Mistake("heads", _has_heads,
                    "that is every head's weights: one head's A has no axis for h.")
    per_part = {
        "mem": [Mistake("mem-rows", _is_shape((N_TGT, d)),
                        "mem comes out of the encoder: how many tokens does the "
                        "encoder read?")],
        "H": [Mistake("H-rows", _is_shape((N_SRC, d)),
                      "H comes out of the decoder: one row per token the decoder "
                      "reads.")],
        "P": [Mistake("P-width", _is_shape((N_TGT, d)),
                      "P scores every token of the vocabulary, not the d_model "
                      "features."),
              Mistake("transposed", _is_shape((v, N_TGT)),
                      "rows and columns swapped: P has a row per target position.")],
        "A, encoder": [heads],
        "A, decoder self": [heads],
        "A, cross": [heads, Mistake(
            "cross-swapped", _is_shape((N_SRC, N_TGT)),
            "rows and columns swapped: A has a row per query, and in cross-attention "
            "the queries come from the decoder.")],
    }
    for key in ("X", "mem", "H"):
        per_part.setdefault(key, []).append(Mistake(
            "d_k", lambda a: a.shape == (2,) and a[1] == d // h,
            "d_model / h is one head's width; the arrays between the boxes are "
            "d_model wide."))
    return check_parts(shapes, _expected_shapes(), mistakes=per_part, rtol=0, atol=0,
                       fallback=lambda k, a: f"{_show(a)} is not its shape.")


def _show(a) -> str:
    try:
        return str(tuple(int(x) for x in np.asarray(a).ravel()))
    except (TypeError, ValueError):
        return repr(a)


# --- exercise 3: no peeking -----------------------------------------------------------

def _chapter_model():
    """The orientation chapter's model and sentences, rebuilt from its seed."""
    vocab = ["<bos>", "<eos>", "the", "cat", "dog", "is", "sleeping",
             "die", "Katze", "Hund", "schläft", "der"]
    ids = {w: i for i, w in enumerate(vocab)}
    rng = np.random.default_rng(0)
    model = mt.TransformerParams.random(rng, vocab_size=len(vocab), d_model=8,
                                        n_heads=2, d_ff=32, n_layers=2)
    src = np.array([ids[w] for w in "the cat is sleeping <eos>".split()])
    tgt = np.array([ids[w] for w in "<bos> die Katze schläft".split()])
    return model, src, tgt, ids


def _changed_rows():
    model, src, tgt, ids = _chapter_model()
    P = mt.softmax(mt.transformer(src, tgt, model), axis=-1)
    tgt2 = tgt.copy()
    tgt2[-1] = ids["Hund"]
    src2 = src.copy()
    src2[1] = ids["dog"]
    rows = {}
    for key, (s, t) in {"target": (src, tgt2), "source": (src2, tgt)}.items():
        P2 = mt.softmax(mt.transformer(s, t, model), axis=-1)
        rows[key] = [r for r in range(len(tgt)) if not np.array_equal(P2[r], P[r])]
    return rows, len(tgt)


def _rows(answer):
    """A reader's rows as a sorted array of distinct indices (a bare index: one row)."""
    if unanswered(answer):
        return answer
    try:
        a = np.atleast_1d(np.asarray(answer))
    except (TypeError, ValueError):
        return answer
    if a.dtype == bool:
        return a                            # told apart below
    return np.unique(a.astype(float)) if a.size else a.astype(float)


def check_3(rows) -> Verdict:
    expected, n_tgt = _changed_rows()
    if isinstance(rows, Mapping):
        if any(np.asarray(r).dtype == bool for r in rows.values() if not unanswered(r)):
            return wrong("give the row indices (0, 1, ...), not a True/False per row.",
                         "booleans")
        rows = {k: _rows(r) for k, r in rows.items()}
    everything = list(range(n_tgt))
    per_part = {
        "target": [
            Mistake("no-mask", everything,
                    "the decoder's self-attention is masked: can an earlier position "
                    "see the last token?"),
            Mistake("one-based", [r + 1 for r in expected["target"]],
                    "rows are numbered from 0, as in NumPy."),
            Mistake("nothing", lambda a: a.size == 0,
                    "the last position reads its own token: its row changes."),
        ],
        "source": [
            Mistake("same-as-target", expected["target"],
                    "a source word is not a token the decoder reads: every target "
                    "position reads the whole memory through cross-attention."),
            Mistake("own-position", [1],
                    "row 1 is a target position, not the source word's: every target "
                    "position reads the whole memory through cross-attention."),
            Mistake("nothing", lambda a: a.size == 0,
                    "the decoder reads the source through cross-attention."),
        ],
    }
    expected = {k: np.asarray(v, dtype=float) for k, v in expected.items()}
    return check_parts(rows, expected, mistakes=per_part, rtol=0, atol=0,
                       fallback=lambda k, a: f"{_show(a)}: not the rows that change.")

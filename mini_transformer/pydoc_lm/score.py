"""Bits per character: how many bits a model needs, on average, to write each
character of a text, −Σ log₂ p(byte | the bytes before it) / number of characters.

Each split's text starts with ``data.SEPARATOR``, the context of its first
character; every byte after it is scored. A model with a context of n tokens reads
the text in windows of n + 1 bytes, each one n / 2 after the last (the last one
ending at the text's end), and scores in each window only the bytes the window
before did not, so every byte is scored once, with at least n / 2 bytes before it
(except at the start of the text).
"""

from __future__ import annotations

import math

import numpy as np

from ..lm import language_model
from ..softmax import log_softmax
from . import data


def window_starts(n: int, context: int) -> list:
    """The first index of each window of ``context + 1`` tokens over n tokens."""
    last = max(n - context - 1, 0)
    starts = list(range(0, last, max(context // 2, 1)))
    return starts + [last]


def token_log_probs(params, tokens, context: int, batch: int = 32):
    """ln p(tokens[j] | the tokens before it, at most ``context``) for j = 1 .. n−1,
    (n − 1,) float64."""
    tokens = np.asarray(tokens)
    n = len(tokens)
    starts = window_starts(n, context)
    out = np.empty(n - 1)
    done = 0                              # targets 1 .. done are scored
    for b in range(0, len(starts), batch):
        group = starts[b:b + batch]
        win = np.stack([tokens[s:s + context + 1] for s in group])
        lp = np.asarray(log_softmax(language_model(win[:, :-1], params), axis=-1),
                        dtype=np.float64)            # (batch, length - 1, vocab)
        picked = np.take_along_axis(lp, win[:, 1:, None], axis=-1)[..., 0]
        for s, row in zip(group, picked):   # row[i] scores target s + 1 + i
            first = done + 1 - (s + 1)
            out[done:s + len(row)] = row[first:]
            done = s + len(row)
    return out


def bits_per_character(params, text: str, context: int) -> float:
    """The model's bits per character on ``text``, a split's text (module doc)."""
    if not text.startswith(data.SEPARATOR):
        raise ValueError("text must start with data.SEPARATOR, the context of its "
                         "first character (a split's text does)")
    n_sep = len(data.SEPARATOR)
    lp = token_log_probs(params, data.encode(text), context)
    return float(-lp[n_sep - 1:].sum() / math.log(2) / (len(text) - n_sep))

"""Synthetic sequence-to-sequence tasks for training a small Transformer (chapter 15).

Token ids: ``BOS`` = 0 starts every target, ``EOS`` = 1 ends it, and the symbols are
2, ..., vocab_size − 1. A task returns NumPy int64 arrays

    src      (batch, length)        the symbols
    tgt_in   (batch, length + 1)    BOS, then the answer       (the decoder's input)
    tgt_out  (batch, length + 1)    the answer, then EOS       (what it must predict)

so that ``tgt_in`` is ``tgt_out`` shifted right by one: "teacher forcing".

The convention is the BPE's (``bpe.BPE``): the special tokens take the first ids,
the symbols follow. These tasks have sequences of one length and so no padding
token; the BPE's first id is its padding, so there BOS = 1 and EOS = 2.
"""

from __future__ import annotations

import numpy as np

BOS, EOS = 0, 1
FIRST_SYMBOL = 2


def _symbols(rng, batch: int, length: int, vocab_size: int):
    for name, n in (("batch", batch), ("length", length)):
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {n!r}")
    if not isinstance(vocab_size, (int, np.integer)) or vocab_size < FIRST_SYMBOL + 2:
        raise ValueError(
            "vocab_size must be an integer >= "
            f"{FIRST_SYMBOL + 2} (BOS, EOS and two symbols), "
            f"got {vocab_size!r}"
        )
    return rng.integers(FIRST_SYMBOL, vocab_size, size=(batch, length))


def _teacher_forcing(answer):
    batch = answer.shape[0]
    bos = np.full((batch, 1), BOS, dtype=np.int64)
    eos = np.full((batch, 1), EOS, dtype=np.int64)
    return np.concatenate([bos, answer], axis=1), np.concatenate([answer, eos], axis=1)


def reverse_task(rng, batch: int, length: int, vocab_size: int):
    """Copy the source backwards: the answer to (5, 3, 7) is (7, 3, 5).

    Position i of the answer is position length − 1 − i of the source, whatever the
    symbols are: the model must attend by position.
    Returns (src, tgt_in, tgt_out).
    """
    src = _symbols(rng, batch, length, vocab_size)
    return (src, *_teacher_forcing(src[:, ::-1].copy()))


def sort_task(rng, batch: int, length: int, vocab_size: int):
    """Sort the source: the answer to (5, 3, 7) is (3, 5, 7).

    Where each answer symbol comes from depends on the values of all the symbols: the
    model must attend by content. Returns (src, tgt_in, tgt_out).
    """
    src = _symbols(rng, batch, length, vocab_size)
    return (src, *_teacher_forcing(np.sort(src, axis=1)))


def sequence_accuracy(decoded, tgt_out) -> float:
    """The fraction of rows whose decoded answer equals ``tgt_out`` exactly.

    decoded: token ids (batch, n) from ``greedy_decode``, starting with BOS; its
    first ``tgt_out.shape[1]`` tokens after BOS are compared (the answer and its EOS).
    """
    decoded, tgt_out = np.asarray(decoded), np.asarray(tgt_out)
    if decoded.ndim != 2 or tgt_out.ndim != 2 or decoded.shape[0] != tgt_out.shape[0]:
        raise ValueError(
            f"decoded {decoded.shape} and tgt_out "
            f"{tgt_out.shape} must be (batch, n) with "
            "the same batch"
        )
    n = tgt_out.shape[1]
    # every row stopped early: pad with -1, which never matches
    if (decoded.shape[1] < n + 1):
        pad = np.full((decoded.shape[0], n + 1 - decoded.shape[1]), -1)
        decoded = np.concatenate([decoded, pad], axis=1)
    return float(np.mean(np.all(decoded[:, 1 : n + 1] == tgt_out, axis=1)))


__all__ = ["BOS", "EOS", "FIRST_SYMBOL", "reverse_task", "sequence_accuracy",
           "sort_task"]

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


# --- English number words to German (the translation chapter) ------------------

HELD_OUT_MODULUS = 97
MAX_NUMBER = 999_999  # "eine Million" has a space: stay below a million


def is_held_out(n) -> bool:
    """The held-out rule: n is never trained on, nor used to learn the BPE, when
    n % 97 == 0 and n > 0 (97, 194, ... 999,973: every length from two to six
    digits). Zero is trained on: it is the only number with its word ("zero",
    "null"), so a model that never saw it could not know it."""
    return int(n) % HELD_OUT_MODULUS == 0 and int(n) > 0


def split_numbers(low: int = 0, high: int = MAX_NUMBER):
    """(train, held_out): the integers low..high (inclusive) split by ``is_held_out``,
    as int64 arrays in increasing order."""
    for name, n in (("low", low), ("high", high)):
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise ValueError(f"{name} must be an integer, got {n!r}")
    if not 0 <= low <= high <= MAX_NUMBER:
        raise ValueError(f"need 0 <= low <= high <= {MAX_NUMBER}, got low={low}, "
                         f"high={high}")
    n = np.arange(low, high + 1, dtype=np.int64)
    held = (n % HELD_OUT_MODULUS == 0) & (n > 0)
    return n[~held], n[held]


def number_words(numbers, src_lang: str = "en", tgt_lang: str = "de"):
    """[(source, target), ...]: each number written out by ``num2words`` in both
    languages, e.g. 342 -> ("three hundred and forty-two", "dreihundertzweiundvierzig").

    numbers: integers in 0..999,999. num2words is a rule system nobody here wrote
    (pinned in requirements.txt); its quirks are kept as they are.
    """
    from num2words import num2words

    out = []
    for n in numbers:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) \
                or not 0 <= n <= MAX_NUMBER:
            raise ValueError(f"numbers must be integers in 0..{MAX_NUMBER}, got {n!r}")
        out.append((num2words(int(n), lang=src_lang), num2words(int(n), lang=tgt_lang)))
    return out

"""Batches by approximate length (the paper's §5.1): "Sentence pairs were batched
together by approximate sequence length. Each training batch contained a set of
sentence pairs containing approximately 25000 source tokens and 25000 target tokens."

A batch is a padded array, so a short sentence beside a long one costs as much as
the long one: sorting by length first puts like with like, and the padding, which
is computed and thrown away, shrinks.
"""

from __future__ import annotations

import numpy as np


def pad_sequences(seqs, pad_id: int):
    """Token-id lists as one int64 array (batch, max length), padded on the right
    with ``pad_id``."""
    if len(seqs) == 0:
        raise ValueError("pad_sequences needs at least one sequence")
    n = max(len(s) for s in seqs)
    out = np.full((len(seqs), n), pad_id, dtype=np.int64)   # (batch, n)
    for row, s in zip(out, seqs):
        row[: len(s)] = s
    return out


def batch_by_length(src, tgt, max_tokens: int, pad_id: int, rng=None):
    """Group the pairs (src[i], tgt[i]) into padded batches of about ``max_tokens``
    source and ``max_tokens`` target positions each.

    The pairs are sorted by (source length, target length), ties in random order
    (``rng``, a NumPy Generator; None keeps the given order), and cut into runs
    whose padded arrays stay within the budget: batch · max n_src <= max_tokens
    and batch · max n_tgt <= max_tokens. The batches are then shuffled (``rng``).
    Returns a list of (src (batch, n_src), tgt (batch, n_tgt)) int64 arrays.
    """
    if len(src) != len(tgt) or len(src) == 0:
        raise ValueError(f"src and tgt must be equally many (>= 1) sequences, got "
                         f"{len(src)} and {len(tgt)}")
    if not isinstance(max_tokens, (int, np.integer)) or max_tokens < 1:
        raise ValueError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
    longest = max(max(len(s), len(t)) for s, t in zip(src, tgt))
    if longest > max_tokens:
        raise ValueError(f"a sequence of {longest} tokens does not fit a budget of "
                         f"max_tokens={max_tokens}")
    order = np.arange(len(src)) if rng is None else rng.permutation(len(src))
    order = sorted(order, key=lambda i: (len(src[i]), len(tgt[i])))  # stable
    batches, run, n_src, n_tgt = [], [], 0, 0
    for i in order:
        n_src, n_tgt = max(n_src, len(src[i])), max(n_tgt, len(tgt[i]))
        if run and (len(run) + 1) * max(n_src, n_tgt) > max_tokens:
            batches.append(run)
            run, n_src, n_tgt = [], len(src[i]), len(tgt[i])
        run.append(i)
    batches.append(run)
    if rng is not None:
        batches = [batches[j] for j in rng.permutation(len(batches))]
    return [(pad_sequences([src[i] for i in b], pad_id),
             pad_sequences([tgt[i] for i in b], pad_id)) for b in batches]


def random_batches(src, tgt, batch_sizes, pad_id: int, rng):
    """The baseline: pairs in random order cut into batches of the given sizes
    (e.g. those ``batch_by_length`` chose), padded the same way."""
    if sum(batch_sizes) != len(src) or len(src) != len(tgt):
        raise ValueError(f"batch_sizes must add up to the {len(src)} pairs, got "
                         f"{sum(batch_sizes)}")
    order, out, start = rng.permutation(len(src)), [], 0
    for size in batch_sizes:
        b = order[start: start + size]
        out.append((pad_sequences([src[i] for i in b], pad_id),
                    pad_sequences([tgt[i] for i in b], pad_id)))
        start += size
    return out

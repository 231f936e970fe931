"""What a language model's sampler draws from: greedy, temperature, top-k and
top-p (nucleus) sampling, as one distribution over the vocabulary.

    p = softmax(o / τ)                         (chapter 3's Boltzmann distribution)
    top-k:  keep the k most probable tokens, renormalise
    top-p:  keep the smallest set of most probable tokens whose mass reaches p
            (Holtzman et al., 2020), renormalise
    τ = 0:  greedy, all the mass on the most probable token

Ties between equal probabilities are broken by token id (the smaller id ranks
first), so the kept set is always the same set.
"""

from __future__ import annotations

import math

import numpy as np
from array_api_compat import array_namespace, device

from . import _checks
from .softmax import softmax


def _check(logits, temperature=1.0, top_k=None, top_p=None, **_):
    """Refuse logits that are not a floating array with a vocabulary axis or that hold
    NaN, +inf or a row of -inf only, and settings out of range (``check_settings``)."""
    xp = _checks.namespace(logits, names=("logits",))
    _checks.rank_at_least(logits, 1, "logits", "(..., vocab_size)")
    _checks.axis_length(logits, -1, "logits")
    check_settings(temperature, top_k, top_p)
    if bool(xp.any(xp.isnan(logits))):
        raise ValueError("logits hold NaN: no distribution to sample from")
    if bool(xp.any(xp.all(logits == -xp.inf, axis=-1))):
        raise ValueError("every logit of a row is -inf: no token can be drawn")
    if bool(xp.any(logits == xp.inf)):
        raise ValueError("logits hold +inf: no distribution to sample from")


@_checks.at_door(_check)
def sampling_distribution(logits, temperature=1.0, top_k=None, top_p=None):
    """The probabilities a sampler draws the next token from, (..., vocab_size).

    logits: (..., vocab_size), the model's scores o of the next token.
    temperature: τ >= 0; p = softmax(o / τ); τ = 0 is greedy (one-hot on the
    largest logit, the smallest id among equal ones).
    top_k: None, or an integer >= 1: only the k most probable tokens keep mass
    (k >= vocab_size keeps all).
    top_p: None, or p in (0, 1]: only the smallest set of most probable tokens whose
    mass reaches p keeps it (at least one token).
    Applied in that order (temperature, top-k, top-p), each on the distribution the
    one before left, the kept mass renormalised to 1.
    """
    xp, vocab = array_namespace(logits), logits.shape[-1]
    if temperature == 0:
        return _one_hot(xp.argmax(logits, axis=-1), vocab, logits)
    p = softmax(logits, axis=-1, temperature=float(temperature))  # (..., vocab_size)
    if top_k is not None and top_k < vocab:
        p = _renormalise(p, _rank(p) < top_k)
    if top_p is not None and top_p < 1:
        order = xp.argsort(-p, axis=-1, stable=True)               # most probable first
        sorted_p = xp.take_along_axis(p, order, axis=-1)
        before = xp.cumulative_sum(sorted_p, axis=-1) - sorted_p   # mass ranked above
        keep_sorted = before < top_p                               # the first always
        p = _renormalise(p, xp.take_along_axis(keep_sorted, _inverse(order), axis=-1))
    return p


def _rank(p):
    """Each token's rank, 0 for the most probable; ties: the smaller id first."""
    xp = array_namespace(p)
    return _inverse(xp.argsort(-p, axis=-1, stable=True))


def _inverse(order):
    """The inverse permutation of ``order`` along the last axis."""
    xp = array_namespace(order)
    return xp.argsort(order, axis=-1, stable=True)


def _renormalise(p, keep):
    xp = array_namespace(p)
    kept = xp.where(keep, p, xp.zeros_like(p))
    return kept / xp.sum(kept, axis=-1, keepdims=True)


def _one_hot(ids, vocab, like):
    xp = array_namespace(like)
    classes = xp.arange(vocab, device=device(like))
    return xp.astype(ids[..., None] == classes, like.dtype)


def check_settings(temperature, top_k, top_p):
    """(τ, k, p) checked: τ a real number >= 0, k an integer >= 1 or None, p in (0, 1]
    or None; a clear error naming the argument otherwise."""
    try:
        if isinstance(temperature, (bool, str, bytes)) or getattr(temperature, "ndim",
                                                                   0) != 0:
            raise TypeError
        t = float(temperature)
    except (TypeError, ValueError):
        raise ValueError(f"temperature must be a real number >= 0, got "
                         f"{temperature!r}") from None
    if math.isnan(t) or t < 0:
        raise ValueError(f"temperature must be >= 0 (0 is greedy), got {temperature}")
    if top_k is not None:
        if isinstance(top_k, bool) or not hasattr(top_k, "__index__") or top_k < 1:
            raise ValueError(f"top_k must be an integer >= 1 or None, got {top_k!r}")
        top_k = int(top_k)
    if top_p is not None:
        try:
            if isinstance(top_p, (bool, str, bytes)):
                raise TypeError
            p = float(top_p)
        except (TypeError, ValueError):
            raise ValueError(f"top_p must be a number in (0, 1] or None, got "
                             f"{top_p!r}") from None
        if not 0 < p <= 1:
            raise ValueError(f"top_p must be in (0, 1] (the mass kept), got {top_p}")
        top_p = p
    return t, top_k, top_p


def draw(probs, rng):
    """One token id per row of ``probs`` (..., vocab_size), drawn by the inverse of
    the cumulative distribution with ``rng`` (a ``numpy.random.Generator``): the
    first id whose cumulative mass exceeds u · total, u uniform in [0, 1). A token
    of zero probability is never drawn. Returns NumPy int64 ids (...)."""
    p = np.asarray(probs.cpu() if hasattr(probs, "cpu") else probs, dtype=np.float64)
    cdf = np.cumsum(p, axis=-1)
    u = rng.random(p.shape[:-1])[..., None] * cdf[..., -1:]
    ids = np.sum(cdf <= u, axis=-1)
    last = p.shape[-1] - 1 - np.argmax(p[..., ::-1] > 0, axis=-1)  # last id with mass
    return np.minimum(ids, last).astype(np.int64)

"""Decoding (the paper's §6.1): greedy search and beam search with a length penalty,
over one encoder call, one step function and the decoders' key/value caches.

Both take ``(src_tokens, params, max_len, bos, eos, src_mask)`` in this order;
max_len counts BOS, None means n_src + 50 (§6.1: "We set the maximum output length
during inference to input length + 50, but terminate early when possible").
Beam search ranks hypotheses with Wu et al. (2016)'s length penalty, which the
paper cites (beam size 4, α = 0.6):

    lp(Y) = ((5 + |Y|) / 6)^α,    score(Y) = log P(Y | X) / lp(Y)

|Y| counts the generated tokens, EOS included (not BOS).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from array_api_compat import array_namespace, device, is_numpy_array

from . import _checks
from .attention import as_mask
from .decoder import KVCache
from .multihead import key_values
from .softmax import log_softmax
from .transformer import check_model_inputs, decode, embed, encode, tied_embedding


def length_penalty(length, alpha: float):
    """lp(Y) = ((5 + |Y|) / 6)^α  (Wu et al., 2016, eq. 14); lp = 1 at |Y| = 1."""
    return ((5 + length) / 6) ** alpha


def encode_source(src_tokens, params, src_mask=None, *, norm_first=None,
                  attention=None):
    """The memory the decoder attends to, computed once: Encoder(Embed(src_tokens)).

    src_tokens: (..., n_src)   src_mask: a key mask broadcast to (batch, 1, n_src).
    Returns (..., n_src, d_model).
    """
    x = embed(src_tokens, tied_embedding(params), name="src_tokens")
    return encode(x, params, src_mask, norm_first=norm_first,
                  attention=attention)                    # (..., n_src, d_model)


def decode_step(tokens, memory, params, caches, src_mask=None, *, norm_first=None,
                attention=None):
    """The logits of the next token after ``tokens`` (..., t + 1): the decoder runs
    on the newest position t only, every layer's ``KVCache`` holding the keys and
    values of positions 0..t − 1 and of the memory. Gives
    ``transformer(src_tokens, tokens, ...)[..., -1, :]`` without recomputing the
    prefix. Returns (..., vocab_size).
    """
    E = params.embedding
    t = tokens.shape[-1] - 1
    y = embed(tokens[..., t:], E, start=t)                      # (..., 1, d_model)
    h = decode(y, memory, params, None, src_mask, norm_first=norm_first,
               attention=attention, caches=caches)
    return h[..., -1, :] @ E.T                                  # (..., vocab_size)


def _check_greedy(src_tokens, params, max_len, bos, eos, src_mask=None, **_):
    """``check_model_inputs``, then max_len (None: n_src + 50), bos and eos."""
    check_model_inputs(params, src_tokens, src_mask)
    n_src = np.shape(src_tokens)[-1]
    _check_decoding(_max_len(max_len, n_src), bos, eos, tied_embedding(params).shape[0])


def _check_beam_search(src_tokens, params, max_len, bos, eos, src_mask=None,
                       beam_size=4, alpha=0.6, **_):
    _check_greedy(src_tokens, params, max_len, bos, eos, src_mask)
    _as_batch(src_tokens)
    _check_beam(beam_size, alpha)


@_checks.at_door(_check_greedy)
def greedy_decode(src_tokens, params, max_len, bos, eos, src_mask=None, *,
                  norm_first=None, attention=None, return_logits=False):
    """Greedy decoding: start from ``bos``, append the most likely next token, stop
    when every row has produced ``eos`` or has ``max_len`` tokens.

    Returns token ids (..., n), n <= max_len, starting with bos; a row that has
    produced eos is padded with eos. Each step runs the decoder on the newest
    position only (``decode_step``): every layer keeps the keys and values of the
    earlier positions and of the memory (``KVCache``).
    return_logits: also return every step's logits, (..., n - 1, vocab_size).
    """
    E = tied_embedding(params)
    memory = encode_source(src_tokens, params, src_mask, norm_first=norm_first,
                           attention=attention)
    max_len = _max_len(max_len, memory.shape[-2])
    xp, batch = array_namespace(E), memory.shape[:-2]
    caches = [KVCache() for _ in params.decoder_layers]
    tokens = xp.full((*batch, 1), bos, dtype=xp.int64, device=device(E))  # (..., 1)
    done = xp.zeros(batch, dtype=xp.bool, device=device(E))
    logits = []
    for _ in range(max_len - 1):
        logits.append(decode_step(tokens, memory, params, caches, src_mask,
                                  norm_first=norm_first,
                                  attention=attention))         # (..., vocab_size)
        new = xp.where(done, eos, xp.argmax(logits[-1], axis=-1))  # (...,)
        tokens = xp.concat([tokens, new[..., None]], axis=-1)
        done = done | (new == eos)
        if xp.all(done):
            break
    if not return_logits:
        return tokens
    empty = xp.zeros((*batch, 0, E.shape[0]), dtype=E.dtype, device=device(E))
    return tokens, xp.stack(logits, axis=-2) if logits else empty


@_checks.at_door(_check_beam_search)
def beam_search(src_tokens, params, max_len, bos, eos, src_mask=None, *, beam_size=4,
                alpha=0.6, norm_first=None, attention=None):
    """The hypothesis Y of highest score log P(Y | X) / lp(Y) that a beam of
    ``beam_size`` (K) finds, for each source. Each step has three phases:

    expand   every live hypothesis by every token; keep the 2K most probable;
    finish   an EOS among the first K ends its hypothesis (as in fairseq);
    advance  the K most probable others stay live, their caches reordered
             (``KVCache.reorder``).

    At ``max_len`` the live hypotheses finish without EOS; the search ends earlier
    when no live one can win (log P only falls, lp(Y) <= lp(max_len − 1)).
    src_tokens: (batch, n_src) or (n_src,)   src_mask: as in ``greedy_decode``
    Returns (tokens (batch, n) starting with bos, padded with eos after it,
    scores (batch,)); without the batch axis for a 1-D src_tokens.
    """
    E, K = tied_embedding(params), beam_size
    xp, dev = array_namespace(E), device(E)
    src, one = _as_batch(src_tokens)                            # (B, n_src)
    memory = encode_source(src, params, src_mask, norm_first=norm_first,
                           attention=attention)                 # (B, n_src, d_model)
    B, V, max_len = memory.shape[0], E.shape[0], _max_len(max_len, memory.shape[-2])
    memory, src_mask, caches = _beams(memory, src_mask, params, K)  # B K rows
    logp = xp.astype(xp.where(xp.arange(B * K, device=dev) % K == 0, 0.0, -xp.inf),
                     E.dtype)                                   # (B K,) one live each
    tokens = xp.full((B * K, 1), bos, dtype=xp.int64, device=dev)   # (B K, t + 1)
    finished = Finished.empty(B, max_len, eos, E)
    first_row = xp.reshape(xp.arange(B, device=dev) * K, (B, 1))
    for n in range(1, max_len):                                 # n = |Y| after step
        logits = decode_step(tokens, memory, params, caches, src_mask,
                             norm_first=norm_first, attention=attention)  # (B K, V)
        row, token, cand = _expand(logp, logits, first_row, K)  # (B, 2K) each
        is_eos = (token == eos) & (xp.arange(2 * K, device=dev) < K)
        finished = finished.add(xp.where(is_eos, cand / length_penalty(n, alpha),
                                         -xp.inf), row, token, tokens)
        row, token, logp = _advance(row, token, cand, eos, K)   # (B K,) each
        tokens = xp.concat([xp.take(tokens, row, axis=0), token[:, None]], axis=-1)
        for cache in caches:   # a source's rows share its memory: only self_kv moves
            cache.reorder(row, memory=False)
        if n == max_len - 1:  # out of room: the live hypotheses finish without EOS
            live = xp.reshape(logp / length_penalty(n, alpha), (B, K))
            finished = finished.add(live, first_row + xp.arange(K, device=dev), None,
                                    tokens)
        bound = xp.max(xp.reshape(logp, (B, K)), axis=-1) / length_penalty(
            max_len - 1, alpha)                                 # the best a live can do
        if bool(xp.all(finished.score >= bound)):
            break
    out = finished.tokens[:, : int(xp.max(finished.length))]
    return (out[0], finished.score[0]) if one else (out, finished.score)


class Finished(NamedTuple):
    """Each source's best finished hypothesis: tokens (B, max_len) padded with EOS,
    its length (B,) and its score log P / lp (B,)."""

    tokens: object
    length: object
    score: object
    eos: int

    @classmethod
    def empty(cls, B, max_len, eos, like):
        """None yet (score −inf); with max_len = 1, BOS alone: |Y| = 0, log P = 0."""
        xp, dev = array_namespace(like), device(like)
        score = xp.full((B,), 0.0 if max_len == 1 else -xp.inf, dtype=like.dtype,
                        device=dev)
        return cls(xp.full((B, max_len), eos, dtype=xp.int64, device=dev),
                   xp.ones((B,), dtype=xp.int64, device=dev), score, eos)

    def add(self, score, row, token, tokens):
        """Where a source's best candidate of ``score`` (B, C) beats its best finished
        hypothesis, that candidate replaces it: the history ``tokens[row]``, then
        ``token`` (None: nothing more)."""
        xp = array_namespace(score)
        j = xp.argmax(score, axis=-1)[:, None]                       # (B, 1)
        s = xp.take_along_axis(score, j, axis=-1)[:, 0]              # (B,)
        hist = xp.take(tokens, xp.take_along_axis(row, j, axis=-1)[:, 0], axis=0)
        if token is not None:
            hist = xp.concat([hist, xp.take_along_axis(token, j, axis=-1)], axis=-1)
        B, n = hist.shape                                            # (B, n)
        pad = xp.full((B, self.tokens.shape[1] - n), self.eos,
                      dtype=self.tokens.dtype, device=device(self.tokens))
        better = s > self.score
        return Finished(
            xp.where(better[:, None], xp.concat([hist, pad], axis=-1), self.tokens),
            xp.where(better, n, self.length), xp.where(better, s, self.score),
            self.eos)


def _beams(memory, src_mask, params, K):
    """The memory, the source mask and the decoders' caches for K rows per source
    (B K rows); the memory's keys and values computed once per source."""
    xp = array_namespace(memory)
    B, n_src = memory.shape[0], memory.shape[1]
    rows = xp.arange(B * K, device=device(memory)) // K         # source of each row
    if src_mask is not None:
        src_mask = as_mask(src_mask, memory, (B, 1, n_src), xp)
        src_mask = xp.take(xp.broadcast_to(src_mask, (B, 1, n_src)), rows, axis=0)
    caches = [KVCache(cross_kv=tuple(xp.take(a, rows, axis=0) for a in key_values(
        memory, layer.cross_attn))) for layer in params.decoder_layers]
    return xp.take(memory, rows, axis=0), src_mask, caches


def _expand(logp, logits, first_row, K):
    """The 2K most probable one-token extensions of each source's K hypotheses:
    (row, token, log P), each (B, 2K), most probable first."""
    xp, V = array_namespace(logits), logits.shape[-1]
    B = first_row.shape[0]
    cand = xp.reshape(logp[:, None] + log_softmax(logits), (B, K * V))  # (B, K V)
    order = top_indices(cand, 2 * K)                            # (B, 2K)
    return (first_row + order // V, order % V,
            xp.take_along_axis(cand, order, axis=-1))


def _advance(row, token, cand, eos, K):
    """The K most probable extensions that are not EOS, flattened to (B K,):
    (row, token, log P)."""
    xp = array_namespace(cand)
    live = xp.argsort(xp.astype(token == eos, xp.int8), axis=-1, stable=True)[:, :K]
    return tuple(xp.reshape(xp.take_along_axis(a, live, axis=-1), (-1,))
                 for a in (row, token, cand))


def top_indices(a, k):
    """The indices of the k largest entries of each row of ``a`` (B, C), largest
    first, ties in index order: ``argsort(a, descending=True, stable=True)[:, :k]``
    without sorting whole rows. NumPy: ``argpartition`` finds the k largest (at a
    tie on the k-th value it may keep another of the tied entries), then only those
    are sorted; torch: ``topk``; other libraries: the full sort."""
    if is_numpy_array(a):
        if k < a.shape[-1]:
            part = np.argpartition(a, a.shape[-1] - k, axis=-1)[:, -k:]   # (B, k)
        else:
            part = np.broadcast_to(np.arange(a.shape[-1]), a.shape)
        vals = np.take_along_axis(a, part, axis=-1)
        order = np.lexsort((part, -vals), axis=-1)          # value down, then index
        return np.take_along_axis(part, order, axis=-1)
    xp = array_namespace(a)
    return xp.argsort(a, axis=-1, descending=True, stable=True)[:, :k]


def _max_len(max_len, n_src):
    return n_src + 50 if max_len is None else max_len


def _is_int(n):
    return isinstance(n, (int, np.integer)) and not isinstance(n, bool)


def _check_decoding(max_len, bos, eos, vocab):
    if not _is_int(max_len) or max_len < 1:
        raise ValueError(f"max_len must be an integer >= 1, got {max_len!r}")
    for name, token in (("bos", bos), ("eos", eos)):
        if not _is_int(token) or not 0 <= token < vocab:
            raise ValueError(f"{name} must be a token id in [0, vocab_size={vocab}), "
                             f"got {token!r}")


def _as_batch(src_tokens):
    """(batch, n_src) token ids, and True when ``src_tokens`` was one source (n_src,).
    """
    src = src_tokens if hasattr(src_tokens, "shape") else np.asarray(src_tokens)
    if not 1 <= src.ndim <= 2:
        raise ValueError(f"src_tokens must be (batch, n_src) or (n_src,), got shape "
                         f"{tuple(src.shape)}")
    return (src[None, :], True) if src.ndim == 1 else (src, False)


def _check_beam(beam_size, alpha):
    if not _is_int(beam_size) or beam_size < 1:
        raise ValueError(f"beam_size must be an integer >= 1, got {beam_size!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha >= 0:
        raise ValueError(f"alpha must be a number >= 0, got {alpha!r}")

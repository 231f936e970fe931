"""Beam search with a length penalty (the paper's §6.1): "we used beam search with a
beam size of 4 and length penalty α = 0.6 ... We set the maximum output length during
inference to input length + 50, but terminate early when possible."

The length penalty is Wu et al. (2016)'s, which the paper cites:

    lp(Y) = ((5 + |Y|) / 6)^α,    score(Y) = log P(Y | X) / lp(Y)

|Y| counts the generated tokens, EOS included (not BOS).
"""

from __future__ import annotations

import numpy as np
from array_api_compat import array_namespace, device

from .attention import as_mask
from .decoder import KVCache
from .softmax import log_sum_exp
from .transformer import (_check_decoding, _check_src_mask, _decode, _embedding,
                          _encode, embed)


def length_penalty(length, alpha: float):
    """lp(Y) = ((5 + |Y|) / 6)^α  (Wu et al., 2016, eq. 14); lp = 1 at |Y| = 1."""
    return ((5 + length) / 6) ** alpha


def beam_search(src_tokens, params, bos, eos, beam_size=4, alpha=0.6, max_len=None,
                src_mask=None, norm_first=False, attention=None):
    """The hypothesis Y of highest score log P(Y | X) / lp(Y) that a beam of
    ``beam_size`` finds, for each source.

    Each step extends every live hypothesis by every token; of the 2·beam_size
    most probable extensions (by log P), an EOS among the first beam_size
    finishes its hypothesis (as in fairseq), and the beam_size most probable
    others stay live. The search stops at ``max_len`` tokens (BOS included, as
    ``greedy_decode`` counts them; None means n_src + 50), where live hypotheses
    finish without EOS, or earlier when no live hypothesis can still win: log P
    only falls as tokens are added and lp(Y) <= lp(max_len − 1), so a live one
    scores at most log P / lp(max_len − 1), and when the best finished score is
    at least that for every source, the search ends. All the sources' beams run
    as one batch (batch · beam_size rows) through the decoder's key/value cache,
    reordered as hypotheses move between beams.

    src_tokens: (batch, n_src) or (n_src,)   src_mask: as in ``greedy_decode``
    Returns (tokens (batch, n) starting with bos, padded with eos after it,
    scores (batch,)); without the batch axis for a 1-D src_tokens.
    """
    E = _embedding(params)
    xp, dev = array_namespace(E), device(E)
    src_tokens = src_tokens if hasattr(src_tokens, "shape") else np.asarray(src_tokens)
    one = src_tokens.ndim == 1
    x = embed(src_tokens[None, :] if one else src_tokens, E, name="src_tokens")
    if x.ndim != 3:
        raise ValueError(f"src_tokens must be (batch, n_src) or (n_src,), got shape "
                         f"{tuple(src_tokens.shape)}")
    B, n_src, V = x.shape[0], x.shape[1], E.shape[0]
    max_len = n_src + 50 if max_len is None else max_len
    _check_decoding(max_len, bos, eos, V)
    _check_beam(beam_size, alpha)
    _check_src_mask(src_mask, x)
    K = beam_size
    memory = _encode(x, params, src_mask, norm_first, attention)    # (B, n_src, d)
    rows = xp.arange(B * K, device=dev) // K                        # source of each row
    memory = xp.take(memory, rows, axis=0)                          # (B K, n_src, d)
    if src_mask is not None:
        src_mask = as_mask(src_mask, x, (B, 1, n_src), xp)
        src_mask = xp.take(xp.broadcast_to(src_mask, (B, 1, n_src)), rows, axis=0)
    caches = [KVCache() for _ in params.decoder_layers]
    first = xp.arange(B * K, device=dev) % K == 0
    logp = xp.where(first, 0.0, -xp.inf)                            # (B K,) one live
    logp = xp.astype(logp, E.dtype)
    tokens = xp.full((B * K, 1), bos, dtype=xp.int64, device=dev)   # (B K, t + 1)
    best = xp.full((B, max_len), eos, dtype=xp.int64, device=dev)   # finished
    best_score = xp.full((B,), -xp.inf, dtype=E.dtype, device=dev)
    best_len = xp.ones((B,), dtype=xp.int64, device=dev)
    if max_len == 1:  # only BOS: |Y| = 0, log P = 0
        best_score = xp.zeros((B,), dtype=E.dtype, device=dev)
    lp_max = length_penalty(max_len - 1, alpha)
    base = xp.reshape(xp.arange(B, device=dev) * K, (B, 1))         # first row of each
    for t in range(max_len - 1):
        y = embed(tokens[:, t:], E, start=t)                        # (B K, 1, d)
        h = _decode(y, memory, params, None, src_mask, norm_first, attention, caches)
        logits = h[:, -1, :] @ E.T                                  # (B K, V)
        log_p = logits - log_sum_exp(logits, axis=-1)[:, None]      # log softmax
        cand = xp.reshape(logp[:, None] + log_p, (B, K * V))        # (B, K V)
        order = xp.argsort(cand, axis=-1, descending=True, stable=True)[:, :2 * K]
        cand_logp = xp.take_along_axis(cand, order, axis=-1)        # (B, 2K)
        row, token = base + order // V, order % V                   # (B, 2K)
        n = t + 1                                                   # |Y| with it
        # Finished: an EOS among the K most probable extensions.
        is_eos = (token == eos) & (xp.arange(2 * K, device=dev) < K)
        score = xp.where(is_eos, cand_logp / length_penalty(n, alpha), -xp.inf)
        best, best_score, best_len = _keep_best(
            xp, score, row, token, tokens, eos, best, best_score, best_len)
        # Live: the K most probable extensions that are not EOS.
        live = xp.argsort(xp.astype(token == eos, xp.int8), axis=-1, stable=True)[:, :K]
        row = xp.reshape(xp.take_along_axis(row, live, axis=-1), (B * K,))
        token = xp.reshape(xp.take_along_axis(token, live, axis=-1), (B * K, 1))
        logp = xp.reshape(xp.take_along_axis(cand_logp, live, axis=-1), (B * K,))
        tokens = xp.concat([xp.take(tokens, row, axis=0), token], axis=-1)
        for cache in caches:  # each row's keys and values follow its hypothesis
            k, v = cache.self_kv
            cache.self_kv = (xp.take(k, row, axis=0), xp.take(v, row, axis=0))
        if t == max_len - 2:  # out of room: the live hypotheses finish without EOS
            score = xp.reshape(logp / length_penalty(n, alpha), (B, K))
            rows_k = base + xp.arange(K, device=dev)
            best, best_score, best_len = _keep_best(
                xp, score, rows_k, None, tokens, eos, best, best_score, best_len)
            break
        bound = xp.max(xp.reshape(logp, (B, K)), axis=-1) / lp_max  # best a live can do
        if bool(xp.all(best_score >= bound)):
            break
    tokens = best[:, : int(xp.max(best_len))]
    return (tokens[0], best_score[0]) if one else (tokens, best_score)


def _keep_best(xp, score, row, token, tokens, eos, best, best_score, best_len):
    """Where the best candidate of ``score`` (B, C) beats a source's best finished
    hypothesis, it becomes that source's best: the history ``tokens[row]``, then
    ``token`` (None: nothing more), padded with EOS."""
    j = xp.argmax(score, axis=-1)[:, None]                           # (B, 1)
    s = xp.take_along_axis(score, j, axis=-1)[:, 0]                  # (B,)
    hist = xp.take(tokens, xp.take_along_axis(row, j, axis=-1)[:, 0], axis=0)
    if token is not None:
        hist = xp.concat([hist, xp.take_along_axis(token, j, axis=-1)], axis=-1)
    B, n = hist.shape                                                # (B, n)
    pad = xp.full((B, best.shape[1] - n), eos, dtype=best.dtype, device=device(best))
    better = s > best_score
    best = xp.where(better[:, None], xp.concat([hist, pad], axis=-1), best)
    best_len = xp.where(better, n, best_len)
    return best, xp.where(better, s, best_score), best_len


def _check_beam(beam_size, alpha):
    if isinstance(beam_size, bool) or not isinstance(beam_size, (int, np.integer)) \
            or beam_size < 1:
        raise ValueError(f"beam_size must be an integer >= 1, got {beam_size!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha >= 0:
        raise ValueError(f"alpha must be a number >= 0, got {alpha!r}")

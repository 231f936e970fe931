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

import numpy as np
from array_api_compat import array_namespace, device, is_numpy_array

from .attention import as_mask
from .decoder import KVCache
from .multihead import key_values
from .softmax import log_softmax
from .transformer import check_src_mask, decode, embed, encode, tied_embedding


def length_penalty(length, alpha: float):
    """lp(Y) = ((5 + |Y|) / 6)^α  (Wu et al., 2016, eq. 14); lp = 1 at |Y| = 1."""
    return ((5 + length) / 6) ** alpha


def encode_source(src_tokens, params, src_mask=None, norm_first=None, attention=None):
    """The memory the decoder attends to, computed once: Encoder(Embed(src_tokens)).

    src_tokens: (..., n_src)   src_mask: a key mask broadcast to (batch, 1, n_src).
    Returns (..., n_src, d_model).
    """
    x = embed(src_tokens, tied_embedding(params), name="src_tokens")
    check_src_mask(src_mask, x)
    return encode(x, params, src_mask, norm_first=norm_first,
                  attention=attention)                    # (..., n_src, d_model)


def decode_step(tokens, memory, params, caches, src_mask=None, norm_first=None,
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


def greedy_decode(src_tokens, params, max_len, bos, eos, src_mask=None,
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
    memory = encode_source(src_tokens, params, src_mask, norm_first, attention)
    max_len = _max_len(max_len, memory)
    _check_decoding(max_len, bos, eos, E.shape[0])
    xp, batch = array_namespace(E), memory.shape[:-2]
    caches = [KVCache() for _ in params.decoder_layers]
    tokens = xp.full((*batch, 1), bos, dtype=xp.int64, device=device(E))  # (..., 1)
    done = xp.zeros(batch, dtype=xp.bool, device=device(E))
    logits = []
    for _ in range(max_len - 1):
        logits.append(decode_step(tokens, memory, params, caches, src_mask, norm_first,
                                  attention))                   # (..., vocab_size)
        new = xp.where(done, eos, xp.argmax(logits[-1], axis=-1))  # (...,)
        tokens = xp.concat([tokens, new[..., None]], axis=-1)
        done = done | (new == eos)
        if xp.all(done):
            break
    if not return_logits:
        return tokens
    empty = xp.zeros((*batch, 0, E.shape[0]), dtype=E.dtype, device=device(E))
    return tokens, xp.stack(logits, axis=-2) if logits else empty


def beam_search(src_tokens, params, max_len, bos, eos, src_mask=None, beam_size=4,
                alpha=0.6, norm_first=None, attention=None):
    """The hypothesis Y of highest score log P(Y | X) / lp(Y) that a beam of
    ``beam_size`` finds, for each source.

    Each step extends every live hypothesis by every token; of the 2·beam_size
    most probable extensions (by log P), an EOS among the first beam_size
    finishes its hypothesis (as in fairseq), and the beam_size most probable
    others stay live. The search stops at ``max_len`` tokens, where live
    hypotheses finish without EOS, or earlier when no live hypothesis can still
    win: log P only falls as tokens are added and lp(Y) <= lp(max_len − 1), so a
    live one scores at most log P / lp(max_len − 1), and when the best finished
    score is at least that for every source, the search ends. All the sources'
    beams run as one batch (batch · beam_size rows) through the decoder's
    key/value caches, reordered (``KVCache.reorder``) as hypotheses move between
    rows.

    src_tokens: (batch, n_src) or (n_src,)   src_mask: as in ``greedy_decode``
    Returns (tokens (batch, n) starting with bos, padded with eos after it,
    scores (batch,)); without the batch axis for a 1-D src_tokens.
    """
    E = tied_embedding(params)
    xp, dev = array_namespace(E), device(E)
    src_tokens = src_tokens if hasattr(src_tokens, "shape") else np.asarray(src_tokens)
    one = src_tokens.ndim == 1
    if not 1 <= src_tokens.ndim <= 2:
        raise ValueError(f"src_tokens must be (batch, n_src) or (n_src,), got shape "
                         f"{tuple(src_tokens.shape)}")
    memory = encode_source(src_tokens[None, :] if one else src_tokens, params, src_mask,
                           norm_first, attention)               # (B, n_src, d)
    B, n_src, V, K = memory.shape[0], memory.shape[1], E.shape[0], beam_size
    max_len = _max_len(max_len, memory)
    _check_decoding(max_len, bos, eos, V)
    _check_beam(beam_size, alpha)
    rows = xp.arange(B * K, device=dev) // K                    # source of each row
    memory_b, memory = memory, xp.take(memory, rows, axis=0)    # (B K, n_src, d)
    if src_mask is not None:
        src_mask = as_mask(src_mask, memory, (B, 1, n_src), xp)
        src_mask = xp.take(xp.broadcast_to(src_mask, (B, 1, n_src)), rows, axis=0)
    # the memory's keys and values, computed once per source and copied to its rows
    caches = [KVCache(cross_kv=tuple(xp.take(a, rows, axis=0) for a in key_values(
        memory_b, layer.cross_attn))) for layer in params.decoder_layers]
    first = xp.arange(B * K, device=dev) % K == 0
    logp = xp.astype(xp.where(first, 0.0, -xp.inf), E.dtype)    # (B K,) one live
    tokens = xp.full((B * K, 1), bos, dtype=xp.int64, device=dev)   # (B K, t + 1)
    best = xp.full((B, max_len), eos, dtype=xp.int64, device=dev)   # finished
    best_score = xp.full((B,), -xp.inf, dtype=E.dtype, device=dev)
    best_len = xp.ones((B,), dtype=xp.int64, device=dev)
    if max_len == 1:  # only BOS: |Y| = 0, log P = 0
        best_score = xp.zeros((B,), dtype=E.dtype, device=dev)
    lp_max = length_penalty(max_len - 1, alpha)
    base = xp.reshape(xp.arange(B, device=dev) * K, (B, 1))     # first row of each
    for t in range(max_len - 1):
        logits = decode_step(tokens, memory, params, caches, src_mask, norm_first,
                             attention)                         # (B K, V)
        cand = xp.reshape(logp[:, None] + log_softmax(logits), (B, K * V))  # (B, K V)
        order = _top(cand, 2 * K)                               # (B, 2K)
        cand_logp = xp.take_along_axis(cand, order, axis=-1)    # (B, 2K)
        row, token = base + order // V, order % V               # (B, 2K)
        n = t + 1                                               # |Y| with it
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
        for cache in caches:  # each row's keys and values follow its hypothesis;
            # a row stays among its source's rows, whose memory keys and values
            # (cross_kv) are the same: only the self-attention's move
            cache.self_kv = tuple(xp.take(a, row, axis=0) for a in cache.self_kv)
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


def _top(a, k):
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


def _max_len(max_len, memory):
    return memory.shape[-2] + 50 if max_len is None else max_len


def _is_int(n):
    return isinstance(n, (int, np.integer)) and not isinstance(n, bool)


def _check_decoding(max_len, bos, eos, vocab):
    if not _is_int(max_len) or max_len < 1:
        raise ValueError(f"max_len must be an integer >= 1, got {max_len!r}")
    for name, token in (("bos", bos), ("eos", eos)):
        if not _is_int(token) or not 0 <= token < vocab:
            raise ValueError(f"{name} must be a token id in [0, vocab_size={vocab}), "
                             f"got {token!r}")


def _check_beam(beam_size, alpha):
    if not _is_int(beam_size) or beam_size < 1:
        raise ValueError(f"beam_size must be an integer >= 1, got {beam_size!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha >= 0:
        raise ValueError(f"alpha must be a number >= 0, got {alpha!r}")

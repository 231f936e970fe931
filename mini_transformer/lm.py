"""A decoder-only language model (GPT's shape): chapter 9's decoder without its
cross-attention, trained to predict each next token.

    X = Embed(tokens)                  the tied embedding E times √d_model, plus PE
    H = LN_f(Decoder(X, causal mask))  pre-LN layers: masked self-attention and FFN
    logits = H Eᵀ                      the score of every next token
    loss = cross_entropy(logits[t], tokens[t + 1]), the mean over positions t

The params are a ``TransformerParams`` with no encoder layers, whose decoder
layers have no cross-attention, and a final LayerNorm: what ``lm_params`` makes.
The stack is the package's ``decode`` with no memory (None), its forward filling
the ``saved`` values that ``decoder_backward`` reads.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from array_api_compat import array_namespace, device

from . import _checks
from ._ops import rows_outer
from .attention import causal_mask
from .decoder import KVCache, decoder_backward
from .layernorm import layer_norm_backward
from .loss import cross_entropy, cross_entropy_with_grad
from .params import DecoderLayerParams, LayerNormParams, TransformerParams
from .sampling import check_settings, draw, sampling_distribution
from .transformer import check_tokens_and_params, decode, embed, embedding_backward


def lm_params(rng, *, vocab_size: int, d_model: int, n_heads: int, n_layers: int,
              d_ff: int | None = None) -> TransformerParams:
    """Random weights of a decoder-only model (float64 NumPy): pre-LN decoder layers
    without cross-attention, a final LayerNorm, every LayerNorm γ = 1 and β = 0.
    (Each layer's weights are drawn as a full decoder layer's, then its
    cross-attention dropped: the shipped model's draws.)"""
    def norm():
        return LayerNormParams(gamma=np.ones(d_model), beta=np.zeros(d_model))

    layers = tuple(
        dataclasses.replace(
            DecoderLayerParams.random(rng, d_model=d_model, n_heads=n_heads, d_ff=d_ff),
            cross_attn=None, norm1=norm(), norm2=norm(), norm3=None)
        for _ in range(n_layers))
    return TransformerParams(
        embedding=rng.normal(0, d_model ** -0.5, size=(vocab_size, d_model)),
        encoder_layers=(), decoder_layers=layers, decoder_norm=norm(), norm_first=True)


def _check_lm(tokens, params, caches=None, start=0, **_):
    tokens = check_tokens_and_params(tokens, params)
    if caches is not None and len(caches) != len(params.decoder_layers):
        raise ValueError(f"caches must hold one KVCache per layer "
                         f"({len(params.decoder_layers)}), got {len(caches)}")
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ValueError(f"start must be an integer >= 0, got {start!r}")
    if caches is not None and start and tokens.shape[-1] > 1:
        raise ValueError("with caches, several new tokens are taken only at the "
                         "start (the prompt)")


@_checks.at_door(_check_lm)
def language_model(tokens, params, caches=None, start=0, *, saved=None):
    """The logits of the next token after every position, (..., n, vocab_size).

    tokens: (..., n) integer ids. caches: one ``KVCache`` per layer holding the keys
    and values of the ``start`` tokens before these (generation step by step): the
    n tokens then are one new token, or the whole prompt (start = 0). Without
    caches the self-attention is causal over the n tokens.
    saved: a dict the forward fills for ``lm_loss_and_grads`` (``decode``'s).
    """
    E = params.embedding
    x = embed(tokens, E, start)                          # (..., n, d_model)
    n = x.shape[-2]
    mask = None if caches is not None and start else causal_mask(n)
    h = decode(x, None, params, mask, caches=caches, saved=saved)  # (..., n, d_model)
    if saved is not None:
        saved.update(mask=mask, h=h)
    return h @ E.T                                       # (..., n, vocab_size)


def _check_windows(params, tokens, **_):
    tokens = check_tokens_and_params(tokens, params)
    if tokens.shape[-1] < 2:
        raise ValueError("tokens must hold windows of at least 2 ids (the inputs and "
                         f"their next tokens), got shape {tuple(tokens.shape)}")


@_checks.at_door(_check_windows)
def lm_loss_and_grads(params, tokens):
    """The mean next-token loss over a batch of token windows and its gradient.

    tokens: (batch, n + 1): the model reads tokens[:, :-1] and is scored on
    tokens[:, 1:], each position on the token after it (chapter 13's
    cross-entropy, shifted by one). The forward fills ``saved``; the backward goes
    through the output projection, the final LayerNorm, the decoder's layers in
    reverse (``decoder_backward``) and the embedding. E is used twice, at the input
    and the output: its gradient is the sum of both.
    Returns (loss, grads), grads a ``TransformerParams`` of the same layout.
    """
    E = params.embedding
    inputs, targets = tokens[..., :-1], tokens[..., 1:]
    s = {}
    logits = language_model(inputs, params, saved=s)     # (..., n, vocab_size)
    loss, g_logits = cross_entropy_with_grad(logits, targets)
    g_E = rows_outer(g_logits, s["h"])                  # logits = h Eᵀ
    g_h = g_logits @ E                                   # (..., n, d_model)
    norm = params.decoder_norm
    g_out, g_gamma, g_beta = layer_norm_backward(s["output"], norm.gamma, g_h,
                                                 params.eps, s["norm"])
    g_x, _, layer_grads = decoder_backward(None, params.decoder_layers, g_out,
                                           s["mask"], norm_first=params.norm_first,
                                           saved=s)
    g_E = g_E + embedding_backward(inputs, g_x, E) * math.sqrt(E.shape[-1])
    return loss, dataclasses.replace(params, embedding=g_E, decoder_layers=layer_grads,
                                     decoder_norm=LayerNormParams(g_gamma, g_beta))


@_checks.at_door(_check_windows)
def lm_loss(params, tokens):
    """The mean next-token loss (nats) of the windows ``tokens`` (..., n + 1), as in
    ``lm_loss_and_grads``, without the gradient."""
    return cross_entropy(language_model(tokens[..., :-1], params), tokens[..., 1:])


def _check_generate(params, prompt, max_new_tokens, temperature=1.0, top_k=None,
                    top_p=None, rng=None, context=None, **_):
    prompt = np.asarray(prompt).reshape(-1)
    if prompt.shape[0] == 0:
        raise ValueError("prompt must hold at least one token")
    check_tokens_and_params(prompt, params, "prompt")
    for name, n, low in (("max_new_tokens", max_new_tokens, 0),
                         ("context", context, 2)):
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < low):
            raise ValueError(f"{name} must be an integer >= {low}, got {n!r}")
    check_settings(temperature, top_k, top_p)
    if rng is None and temperature != 0 and max_new_tokens:
        raise ValueError("sampling needs rng (a numpy.random.Generator); "
                         "temperature=0 is greedy and needs none")


@_checks.at_door(_check_generate)
def generate(params, prompt, max_new_tokens: int, *, temperature=1.0, top_k=None,
             top_p=None, rng=None, cache=True, context=None):
    """Continue ``prompt`` (token ids, (n,)) by ``max_new_tokens`` tokens, each drawn
    from ``sampling_distribution(logits, temperature, top_k, top_p)`` with ``rng``
    (a ``numpy.random.Generator``; temperature 0 needs none).

    context: None, or the longest window the model reads (the length it was trained
    on): the model reads the last ``context`` tokens of the prompt, and when the
    window is full, its last ``context // 2`` tokens start a new one, at position 0.
    cache=True keeps each layer's keys and values (``KVCache``) so that a step
    computes only the newest position (a new window starts a new cache);
    cache=False runs the whole window again at every step. Both give the same
    tokens.
    Returns (tokens (n + max_new_tokens,) NumPy int64, logits (max_new_tokens,
    vocab_size), the scores each new token was drawn from).
    """
    tokens = [int(t) for t in np.asarray(prompt).reshape(-1)]
    xp = array_namespace(params.embedding)

    def ids(t):
        return xp.asarray(t, device=device(params.embedding))

    def restart(first):             # the window tokens[first:], from position 0
        caches = [KVCache() for _ in params.decoder_layers] if cache else None
        return first, caches, language_model(ids(tokens[first:]), params, caches)[-1]

    first, caches, logits = restart(0 if context is None else
                                    max(0, len(tokens) - context))
    out_logits = []
    for step in range(max_new_tokens):
        out_logits.append(logits)
        probs = sampling_distribution(logits, temperature, top_k, top_p)
        tokens.append(int(draw(probs, rng) if temperature != 0 else
                          xp.argmax(probs)))
        if step + 1 == max_new_tokens:
            break
        if context is not None and len(tokens) - first > context:
            first, caches, logits = restart(len(tokens) - context // 2)
        elif cache:   # only the newest token, at its position in the window
            logits = language_model(ids(tokens[-1:]), params, caches,
                                    start=len(tokens) - 1 - first)[-1]
        else:
            logits = language_model(ids(tokens[first:]), params)[-1]
    stacked = xp.stack(out_logits) if out_logits else \
        xp.zeros((0, params.embedding.shape[0]), dtype=params.embedding.dtype)
    return np.asarray(tokens, dtype=np.int64), stacked

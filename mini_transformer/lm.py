"""A decoder-only language model (GPT's shape): chapter 9's decoder without its
cross-attention, trained to predict each next token.

    X = Embed(tokens)                  the tied embedding E times √d_model, plus PE
    H = LN_f(Decoder(X, causal mask))  pre-LN layers: masked self-attention and FFN
    logits = H Eᵀ                      the score of every next token
    loss = cross_entropy(logits[t], tokens[t + 1]), the mean over positions t

The params are a ``TransformerParams`` with no encoder layers, whose decoder
layers have no cross-attention, and a final LayerNorm: what ``lm_params`` makes.
The decoder stack is the package's ``decoder`` with no memory.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from array_api_compat import array_namespace, device

from .attention import causal_mask
from .decoder import KVCache
from .feedforward import feed_forward, feed_forward_backward
from .layernorm import layer_norm, layer_norm_backward
from .loss import cross_entropy, cross_entropy_backward
from .multihead import multi_head_attention, multi_head_attention_backward
from .params import DecoderLayerParams, TransformerParams
from .sampling import draw, sampling_distribution
from .transformer import embed


def lm_params(rng, *, vocab_size: int, d_model: int, n_heads: int, n_layers: int,
              d_ff: int | None = None) -> TransformerParams:
    """Random weights of a decoder-only model (float64 NumPy): pre-LN layers without
    cross-attention, a final LayerNorm, LayerNorms γ = 1 and β = 0."""
    def ones():
        return np.ones(d_model)

    def zeros():
        return np.zeros(d_model)

    layers = tuple(
        dataclasses.replace(
            DecoderLayerParams.random(rng, d_model=d_model, n_heads=n_heads, d_ff=d_ff),
            cross_attn=None, norm1_gamma=ones(), norm1_beta=zeros(), norm2_gamma=ones(),
            norm2_beta=zeros(), norm3_gamma=None, norm3_beta=None)
        for _ in range(n_layers))
    return TransformerParams(
        embedding=rng.normal(0, d_model ** -0.5, size=(vocab_size, d_model)),
        encoder_layers=(), decoder_layers=layers, decoder_norm_gamma=ones(),
        decoder_norm_beta=zeros(), norm_first=True)


# --- the decoder stack without memory ------------------------------------------------

def _layer(y, p, mask, cache=None, saved=None):
    """Y1 = Y + SelfAttn(LN₁(Y)), Y2 = Y1 + FFN(LN₂(Y1)): a pre-LN decoder layer
    with no cross-attention."""
    s = {} if saved is None else saved
    s["self"], s["ffn"] = {}, {}
    s["n1"] = layer_norm(y, p.norm1_gamma, p.norm1_beta, p.eps)
    kv = None if cache is None else cache.extend(s["n1"], p.self_attn)
    a, _ = multi_head_attention(s["n1"], p.self_attn, mask, kv=kv, saved=s["self"])
    s["y1"] = y + a
    s["n2"] = layer_norm(s["y1"], p.norm2_gamma, p.norm2_beta, p.eps)
    return s["y1"] + feed_forward(s["n2"], p.ffn, s["ffn"])


def _layer_backward(y, p, g, mask, s):
    g_n2, g_ffn = feed_forward_backward(s["n2"], p.ffn, g, s["ffn"])
    g_ln2, g_gamma2, g_beta2 = layer_norm_backward(s["y1"], p.norm2_gamma, g_n2, p.eps)
    g_y1 = g + g_ln2
    g_n1, _, g_self = multi_head_attention_backward(s["n1"], p.self_attn, g_y1, mask,
                                                    saved=s["self"])
    g_ln1, g_gamma1, g_beta1 = layer_norm_backward(y, p.norm1_gamma, g_n1, p.eps)
    return g_y1 + g_ln1, dataclasses.replace(
        p, self_attn=g_self, ffn=g_ffn, norm1_gamma=g_gamma1, norm1_beta=g_beta1,
        norm2_gamma=g_gamma2, norm2_beta=g_beta2)


def _stack(y, layers, mask, caches=None, saved=None):
    inputs, layer_saved = [], []
    for i, p in enumerate(layers):
        s = None if saved is None else {}
        inputs.append(y)
        layer_saved.append(s)
        y = _layer(y, p, mask, None if caches is None else caches[i], s)
    if saved is not None:
        saved.update(inputs=inputs, layers=layer_saved)
    return y


def _stack_backward(layers, g, mask, saved):
    grads = [None] * len(layers)
    for i in reversed(range(len(layers))):
        g, grads[i] = _layer_backward(saved["inputs"][i], layers[i], g, mask,
                                      saved["layers"][i])
    return g, tuple(grads)


# --- the model -----------------------------------------------------------------------

def language_model(tokens, params, caches=None, start=0, saved=None):
    """The logits of the next token after every position, (..., n, vocab_size).

    tokens: (..., n) integer ids. caches: one ``KVCache`` per layer, holding the
    keys and values of the ``start`` tokens before these (generation step by step);
    without caches the self-attention is causal over the n tokens.
    saved: a dict the forward fills for ``lm_loss_and_grads``.
    """
    E = params.embedding
    x = embed(tokens, E, start)                          # (..., n, d_model)
    mask = None if caches is not None else causal_mask(x.shape[-2])
    if caches is not None and x.shape[-2] > 1:
        if start:
            raise ValueError("with caches, several new tokens are taken only "
                             "at the start (the prompt)")
        mask = causal_mask(x.shape[-2])
    s = {} if saved is None else saved
    s["stack"] = {}
    s["h_in"] = _stack(x, params.decoder_layers, mask, caches, s["stack"])
    s["mask"] = mask
    h = layer_norm(s["h_in"], params.decoder_norm_gamma, params.decoder_norm_beta,
                   params.eps)                            # (..., n, d_model)
    s["h"] = h
    return h @ E.T                                        # (..., n, vocab_size)


def lm_loss_and_grads(params, tokens):
    """The mean next-token loss over a batch of token windows and its gradient.

    tokens: (batch, n + 1): the model reads tokens[:, :-1] and is scored on
    tokens[:, 1:], each position on the token after it (chapter 13's
    cross-entropy, shifted by one). The embedding E is used twice, at the input
    and the output: its gradient is the sum of both.
    Returns (loss, grads), grads a ``TransformerParams`` of the same layout.
    """
    E = params.embedding
    xp = array_namespace(E)
    inputs, targets = tokens[..., :-1], tokens[..., 1:]
    s = {}
    logits = language_model(inputs, params, saved=s)
    loss = cross_entropy(logits, targets)
    g_logits = cross_entropy_backward(logits, targets)     # (..., n, vocab_size)
    h = s["h"]
    g_E = _rows(g_logits).T @ _rows(h)                     # logits = h Eᵀ
    g_h = g_logits @ E
    g_hin, g_gamma, g_beta = layer_norm_backward(s["h_in"], params.decoder_norm_gamma,
                                                 g_h, params.eps)
    g_x, layer_grads = _stack_backward(params.decoder_layers, g_hin, s["mask"],
                                       s["stack"])
    one_hot = xp.astype(inputs[..., None] == xp.arange(E.shape[0], device=device(E)),
                        E.dtype)                           # (..., n, vocab_size)
    g_E = g_E + _rows(one_hot).T @ _rows(g_x) * math.sqrt(E.shape[-1])
    return loss, dataclasses.replace(params, embedding=g_E, decoder_layers=layer_grads,
                                     decoder_norm_gamma=g_gamma,
                                     decoder_norm_beta=g_beta)


def _rows(a):
    xp = array_namespace(a)
    return xp.reshape(a, (-1, a.shape[-1]))


def generate(params, prompt, max_new_tokens: int, *, temperature=1.0, top_k=None,
             top_p=None, rng=None, cache=True):
    """Continue ``prompt`` (token ids, (n,)) by ``max_new_tokens`` tokens, each drawn
    from ``sampling_distribution(logits, temperature, top_k, top_p)`` with ``rng``
    (a ``numpy.random.Generator``; temperature 0 needs none).

    cache=True keeps each layer's keys and values (``KVCache``) so that a step
    computes only the newest position; cache=False runs the whole sequence again at
    every step. Both give the same tokens.
    Returns (tokens (n + max_new_tokens,) NumPy int64, logits (max_new_tokens,
    vocab_size), the scores each new token was drawn from).
    """
    tokens = [int(t) for t in np.asarray(prompt).reshape(-1)]
    if not tokens:
        raise ValueError("prompt must hold at least one token")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) \
            or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an integer >= 0, got "
                         f"{max_new_tokens!r}")
    sampling_distribution(np.zeros(1), temperature, top_k, top_p)  # settings checked
    if rng is None and temperature != 0 and max_new_tokens:
        raise ValueError("sampling needs rng (a numpy.random.Generator); "
                         "temperature=0 is greedy and needs none")
    xp = array_namespace(params.embedding)
    ids = lambda t: xp.asarray(t, device=device(params.embedding))  # noqa: E731
    caches = [KVCache() for _ in params.decoder_layers] if cache else None
    out_logits = []
    logits = language_model(ids(tokens), params, caches)[-1]
    for step in range(max_new_tokens):
        out_logits.append(logits)
        probs = sampling_distribution(logits, temperature, top_k, top_p)
        tokens.append(int(draw(probs, rng) if temperature != 0 else
                          xp.argmax(probs)))
        if step + 1 < max_new_tokens:
            logits = (language_model(ids(tokens[-1:]), params, caches,
                                     start=len(tokens) - 1)[-1] if cache else
                      language_model(ids(tokens), params)[-1])
    stacked = xp.stack(out_logits) if out_logits else \
        xp.zeros((0, params.embedding.shape[0]), dtype=params.embedding.dtype)
    return np.asarray(tokens, dtype=np.int64), stacked

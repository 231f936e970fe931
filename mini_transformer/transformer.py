"""The whole model (the paper's §3, figure 1): embeddings, encoder and decoder,
the output projection, and its loss and gradients for training."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from array_api_compat import array_namespace, device, is_array_api_obj, is_numpy_array

from . import _checks
from ._ops import rows_matmul, rows_outer
from .attention import as_mask, causal_mask
from .decoder import check_decoder, decoder, decoder_backward
from .dropout import DropoutMasks, dropout
from .encoder import check_encoder, encoder, encoder_backward
from .layernorm import layer_norm, layer_norm_backward
from .loss import check_targets, cross_entropy_with_grad
from .params import LayerNormParams
from .positional import positional_encoding
from .tree import named_leaves


# --- checks ---------------------------------------------------------------------

def tied_embedding(params):
    """The embedding E (vocab_size, d_model), refused when the params have none."""
    if params.embedding is None:
        raise ValueError(
            "these params have no embedding (torch.nn.Transformer has none): "
            "pass one to mini_transformer.torch.convert.from_torch(model, "
            "embedding=...)"
        )
    return params.embedding


def _in_library(tokens, embedding):
    """``tokens`` in the embedding's library and on its device (NumPy ids are
    welcome with torch weights)."""
    if not is_array_api_obj(tokens):
        tokens = np.asarray(tokens)
    if is_numpy_array(tokens) and not is_numpy_array(embedding):
        tokens = array_namespace(embedding).asarray(tokens, device=device(embedding))
    return tokens


def _token_ids(tokens, embedding):
    """``tokens`` as int64 ids in the embedding's library and on its device."""
    xp = array_namespace(embedding)
    return xp.astype(_in_library(tokens, embedding), xp.int64)


def _check_token_ids(tokens, embedding, name):
    """``tokens`` in the embedding's library, refused unless they are integer ids in
    [0, vocab_size) on its device; ``name`` is what the message calls them."""
    xp, tokens = array_namespace(embedding), _in_library(tokens, embedding)
    if _checks.kind(tokens).split(".")[0] != _checks.kind(embedding).split(".")[0]:
        raise ValueError(
            f"inputs mix array libraries ({name}: {_checks.kind(tokens)}, "
            f"embedding: {_checks.kind(embedding)})"
        )
    if device(tokens) != device(embedding):
        raise ValueError(
            f"device mismatch: {name} is on {device(tokens)} but the embedding "
            f"is on {device(embedding)}"
        )
    if not xp.isdtype(tokens.dtype, "integral"):
        raise ValueError(f"{name} must be integer token ids, got dtype {tokens.dtype}")
    _checks.rank_at_least(tokens, 1, name, "(..., n)")
    _checks.non_empty(tokens.shape[-1], name, tokens.shape)
    lo, hi, vocab = int(xp.min(tokens)), int(xp.max(tokens)), embedding.shape[0]
    if lo < 0 or hi >= vocab:
        raise ValueError(
            f"{name} must lie in [0, vocab_size={vocab}), got ids from {lo} "
            f"to {hi} (shape {tuple(tokens.shape)})"
        )
    return tokens


def _check_embedded(src, tgt, params, src_mask, tgt_mask, memory_mask, masks=None,
                    **_):
    _checks.namespace(src, tgt, names=("src", "tgt"))
    _checks.features(src, params.d_model, "src")
    _checks.features(tgt, params.d_model, "tgt")
    batch = _checks.batch_axes(src, tgt, "src", "tgt")
    n_src, n_tgt = src.shape[-2], tgt.shape[-2]
    for mask, name, shape, layout in (
            (src_mask, "src_mask", (n_src, n_src), "(batch, n_src, n_src)"),
            (tgt_mask, "tgt_mask", (n_tgt, n_tgt), "(batch, n_tgt, n_tgt)"),
            (memory_mask, "memory_mask", (n_tgt, n_src), "(batch, n_tgt, n_src)")):
        _checks.mask_broadcasts(mask, (*batch, *shape), name, layout)
    enc, dec = (None, None) if masks is None else (masks.encoder, masks.decoder)
    check_encoder(src, params.encoder_layers, src_mask, enc)
    check_decoder(tgt, src, params.decoder_layers, tgt_mask, memory_mask, dec)


def check_tokens_and_params(tokens, params, name="tokens"):
    """One library, dtype and device for every array of the params, each layer's arrays
    fitting d_model, and ``tokens`` integer ids in [0, vocab_size) (returned in the
    params' library); ``name`` is what an error message calls the tokens."""
    E = tied_embedding(params)
    leaves = named_leaves(params)
    _checks.namespace(*leaves.values(), names=tuple(leaves))
    _embedding_shape(E)
    params.check_shapes()                  # every layer's arrays fit d_model, by path
    return _check_token_ids(tokens, E, name)


def check_model_inputs(params, src_tokens, src_mask, tgt_tokens=None, tgt_in=None,
                       tgt_mask=None, **_):
    """Token ids in the vocabulary, one library, dtype and device for every array of
    the params, a source mask on the keys (it serves two attentions) and a target
    mask on the target's self-attention."""
    src, tgt = check_tokens_and_params(src_tokens, params, "src_tokens"), None
    E = tied_embedding(params)
    for name, tokens in (("tgt_tokens", tgt_tokens), ("tgt_in", tgt_in)):
        if tokens is not None:                          # none when decoding
            tgt = _check_token_ids(tokens, E, name)
    _checks.mask_broadcasts(src_mask, (*src.shape[:-1], 1, src.shape[-1]), "src_mask",
                            "(batch, 1, n_src)")
    if tgt is not None:
        n_tgt = tgt.shape[-1]
        _checks.mask_broadcasts(tgt_mask, (*tgt.shape[:-1], n_tgt, n_tgt), "tgt_mask",
                                "(batch, n_tgt, n_tgt)")
    return tgt


def _check_training(params, src_tokens, tgt_in, tgt_out, label_smoothing=0.0,
                    ignore_index=None, src_mask=None, tgt_mask=None, **_):
    """``check_model_inputs``, then tgt_out: ids in the vocabulary, shaped as tgt_in."""
    tgt = check_model_inputs(params, src_tokens, src_mask, tgt_in=tgt_in,
                             tgt_mask=tgt_mask)
    E = tied_embedding(params)
    check_targets(tgt_out, tgt.shape, E.shape[0], E, label_smoothing, ignore_index,
                  name="tgt_out")


def _check_encode(src, params, src_mask, masks=None, **_):
    check_encoder(src, params.encoder_layers, src_mask, masks)


def _check_decode(tgt, memory, params, tgt_mask, memory_mask, masks=None, caches=None,
                  **_):
    check_decoder(tgt, memory, params.decoder_layers, tgt_mask, memory_mask, masks,
                  caches)


def _check_embedding(tokens, embedding, name, **_):
    _checks.namespace(embedding, names=("embedding",))
    _embedding_shape(embedding)
    _check_token_ids(tokens, embedding, name)


def _embedding_shape(embedding):
    if embedding.ndim != 2 or 0 in embedding.shape:
        raise ValueError(f"embedding must have shape (vocab_size, d_model), got "
                         f"{tuple(embedding.shape)}")


@_checks.at_door(_check_embedding)
def embed(tokens, embedding, start=0, *, name="tokens"):
    """Embedding(tokens) √d_model + PE(positions start, start + 1, ...).

    tokens: (..., n) integer ids in [0, vocab_size)   embedding: (vocab_size, d_model)
    The paper multiplies the embedding by √d_model (§3.4) and adds the sinusoidal
    positional encoding (§3.5). ``name`` is what an error message calls tokens.
    Returns (..., n, d_model).
    """
    xp = array_namespace(embedding)
    tokens = _token_ids(tokens, embedding)
    d_model = embedding.shape[-1]
    pe = positional_encoding(start + tokens.shape[-1], d_model)[start:]  # (n, d_model)
    pe = xp.asarray(pe, dtype=embedding.dtype, device=device(embedding))
    return embedding[tokens] * math.sqrt(d_model) + pe  # (..., n, d_model)


@_checks.at_door(_check_embedded)
def encoder_decoder(src, tgt, params, src_mask=None, tgt_mask=None, memory_mask=None,
                    masks=None, *, norm_first=None, attention=None, saved=None):
    """memory = Encoder(src), output = Decoder(tgt, memory), each stack followed by
    its final LayerNorm where the params have one: what ``torch.nn.Transformer``
    computes.

    src: (..., n_src, d_model)   tgt: (..., n_tgt, d_model), embedded
    src_mask: broadcast to (batch, n_src, n_src), the encoder's self-attention
    tgt_mask: broadcast to (batch, n_tgt, n_tgt), e.g. ``causal_mask(n_tgt)``
    memory_mask: broadcast to (batch, n_tgt, n_src), the cross-attention
    Bool masks are True where a query may attend (torch's are the opposite).
    masks: None, or ``DropoutMasks`` for the sub-layers of both stacks.
    norm_first: None runs the layers as the params were made (``params.norm_first``).
    saved: a dict the forward fills for the backward: ``saved["encoder"]`` and
    ``saved["decoder"]`` (``encode``, ``decode``) and the memory.
    Returns (..., n_tgt, d_model).
    """
    enc, dec = (None, None) if masks is None else (masks.encoder, masks.decoder)
    s_enc, s_dec = (None, None) if saved is None else ({}, {})
    memory = encode(src, params, src_mask, enc, norm_first=norm_first,
                    attention=attention, saved=s_enc)
    out = decode(tgt, memory, params, tgt_mask, memory_mask, dec, norm_first=norm_first,
                 attention=attention, saved=s_dec)
    if saved is not None:
        saved.update(encoder=s_enc, decoder=s_dec, memory=memory)
    return out


@_checks.at_door(check_model_inputs)
def transformer(src_tokens, tgt_tokens, params, src_mask=None, tgt_mask=None, *,
                norm_first=None, attention=None, p_drop=0.0, rng=None, saved=None):
    """The scores (logits) of the next token at every target position.

    X = Embed(src_tokens), Y = Embed(tgt_tokens), H = EncoderDecoder(X, Y),
    logits = H Eᵀ with the embedding E shared by both inputs and the output (§3.4).
    src_tokens: (..., n_src)   tgt_tokens: (..., n_tgt) integer ids
    src_mask: a key mask broadcast to (batch, 1, n_src), e.g. ``padding_mask``; it
    serves the encoder's self-attentions and the cross-attentions. The target's
    self-attention is always causal; a tgt_mask (e.g. target padding) is combined
    with it.
    p_drop, rng: training with dropout (§5.4) on the embedded inputs and every
    sub-layer's output, masks drawn from ``rng`` (``DropoutMasks.draw``); the
    default p_drop = 0 is evaluation, no dropout.
    saved: a dict the forward fills for ``loss_and_grads``: ``encoder_decoder``'s
    values, its output ``h``, the dropout ``masks`` and the attention masks built
    (``src_mask``, ``self_mask``); None keeps nothing.
    Returns (..., n_tgt, vocab_size).
    """
    E = tied_embedding(params)
    x = embed(src_tokens, E, name="src_tokens")         # (..., n_src, d_model)
    y = embed(tgt_tokens, E, name="tgt_tokens")         # (..., n_tgt, d_model)
    masks = DropoutMasks.draw(rng, p_drop, params, x, y)
    if masks is not None:
        x, y = dropout(x, masks.src), dropout(y, masks.tgt)
    src_mask, self_mask = key_mask(src_mask, x), with_causal(tgt_mask, y)
    h = encoder_decoder(x, y, params, src_mask, self_mask, src_mask, masks,
                        norm_first=norm_first, attention=attention, saved=saved)
    if saved is not None:
        saved.update(h=h, masks=masks, src_mask=src_mask, self_mask=self_mask)
    return rows_matmul(h, E.T)                          # H Eᵀ, (..., n_tgt, vocab_size)


def count_parameters(params) -> int:
    """The number of scalars in a params container, or a sequence of them; an array
    met twice (the tied embedding, a shared layer) counts once."""
    arrays = {}
    for p in params if isinstance(params, (list, tuple)) else [params]:
        p.map(lambda a: arrays.setdefault(id(a), a))  # visits every array
    return sum(math.prod(a.shape) for a in arrays.values())


@_checks.at_door(_check_encode)
def encode(src, params, src_mask=None, masks=None, *, norm_first=None, attention=None,
           saved=None):
    """memory = Encoder(src), then the encoder's final LayerNorm where the params
    have one. src: (..., n_src, d_model), embedded. norm_first None: the params'.
    masks: None, or one pair of dropout masks per layer (``encoder``).
    saved: a dict the forward fills for the backward (``encoder``'s, and ``output``,
    the stack's output before the final LayerNorm).
    Returns (..., n_src, d_model)."""
    out = encoder(src, params.encoder_layers, src_mask, masks,
                  norm_first=_norm_first(params, norm_first), attention=attention,
                  saved=saved)
    if saved is not None:
        saved["output"], saved["norm"] = out, {}
    return _final_norm(out, params.encoder_norm, params.eps, saved)


@_checks.at_door(_check_decode)
def decode(tgt, memory, params, tgt_mask=None, memory_mask=None, masks=None, *,
           norm_first=None, attention=None, caches=None, saved=None):
    """Decoder(tgt, memory), then the decoder's final LayerNorm where the params
    have one. tgt: (..., n_tgt, d_model), embedded; caches: one ``KVCache`` per
    decoder layer, for decoding step by step; masks, saved: as in ``encode``.
    Returns (..., n_tgt, d_model)."""
    out = decoder(tgt, memory, params.decoder_layers, tgt_mask, memory_mask, masks,
                  norm_first=_norm_first(params, norm_first), attention=attention,
                  caches=caches, saved=saved)
    if saved is not None:
        saved["output"], saved["norm"] = out, {}
    return _final_norm(out, params.decoder_norm, params.eps, saved)


def _norm_first(params, norm_first):
    """The layers' order: as asked, or (None) as the params were made."""
    return params.norm_first if norm_first is None else norm_first


def _final_norm(x, norm, eps, saved=None):
    return x if norm is None else layer_norm(
        x, norm.gamma, norm.beta, eps, None if saved is None else saved["norm"])


def with_causal(tgt_mask, y):
    """The target's self-attention mask: causal_mask(n_tgt), combined with tgt_mask
    (None, or broadcast to (batch, n_tgt, n_tgt)) for the embedded target y: bool
    masks by "and", a float mask keeps its values on and below the diagonal and gets
    -inf above it."""
    xp, n = array_namespace(y), y.shape[-2]
    causal = as_mask(causal_mask(n), y, (n, n), xp)     # (n_tgt, n_tgt)
    if tgt_mask is None:
        return causal
    mask = as_mask(tgt_mask, y, (*y.shape[:-2], n, n), xp)
    return causal & mask if mask.dtype == xp.bool else xp.where(causal, mask, -xp.inf)


def key_mask(src_mask, x):
    """A source (key) mask in x's library, device and dtype convention, once per
    batch: (batch, 1, n_src), or None."""
    if src_mask is None:
        return None
    return as_mask(src_mask, x, (*x.shape[:-2], 1, x.shape[-2]), array_namespace(x))


@_checks.at_door(_check_training)
def loss_and_grads(
    params,
    src_tokens,
    tgt_in,
    tgt_out,
    *,
    label_smoothing=0.0,
    ignore_index=None,
    src_mask=None,
    tgt_mask=None,
    norm_first=None,
    p_drop=0.0,
    rng=None,
):
    """The training loss and its gradient for every array of ``params``.

    loss = cross_entropy(transformer(src_tokens, tgt_in, params), tgt_out, ...): one
    forward (``transformer(..., saved=saved)``) keeps each layer's input and the
    values its backward reads; the backward runs the layers in reverse. The memory
    feeds every decoder layer, so its gradient is the sum of theirs. The tied embedding
    E is used three times (source, target, output projection): its gradient is the sum
    of three.
    Masks, ``norm_first`` and dropout (p_drop, rng) as in ``transformer``: the same
    rng state draws the same masks, and the backward multiplies by them too.
    Returns (loss, grads), grads a ``TransformerParams`` of the same layout.
    """
    E = tied_embedding(params)
    norm_first = _norm_first(params, norm_first)
    s = {}                                  # the forward's values, for the backward
    logits = transformer(src_tokens, tgt_in, params, src_mask, tgt_mask,
                         norm_first=norm_first, p_drop=p_drop, rng=rng, saved=s)
    loss, g_logits = cross_entropy_with_grad(logits, tgt_out, label_smoothing,
                                             ignore_index)
    enc, dec, memory, h = s["encoder"], s["decoder"], s["memory"], s["h"]
    m = s["masks"] or DropoutMasks(None, None, (None,) * len(params.encoder_layers),
                                   (None,) * len(params.decoder_layers))
    # Backward: output projection, decoder, encoder, embeddings.
    g_E = rows_outer(g_logits, h)  # (vocab_size, d_model): logits = h Eᵀ
    g_h = rows_matmul(g_logits, E)                      # (..., n_tgt, d_model)
    g_y, g_dec_norm = _final_norm_backward(dec, params, "decoder", g_h)
    g_y, g_memory, dec_grads = decoder_backward(
        memory, params.decoder_layers, g_y, s["self_mask"], s["src_mask"], m.decoder,
        norm_first=norm_first, saved=dec)
    g_x, g_enc_norm = _final_norm_backward(enc, params, "encoder", g_memory)
    g_x, enc_grads = encoder_backward(params.encoder_layers, g_x, s["src_mask"],
                                      m.encoder, norm_first=norm_first, saved=enc)
    g_x, g_y = dropout(g_x, m.src), dropout(g_y, m.tgt)  # through the input dropout
    sqrt_d = math.sqrt(E.shape[-1])                     # Embed(t) = E[t] √d_model + PE
    g_E = (g_E + embedding_backward(src_tokens, g_x * sqrt_d, E)
           + embedding_backward(tgt_in, g_y * sqrt_d, E))
    grads = dataclasses.replace(
        params,
        embedding=g_E,
        encoder_layers=enc_grads,
        decoder_layers=dec_grads,
        **g_enc_norm,
        **g_dec_norm,
    )
    return loss, grads


def _final_norm_backward(saved, params, stack, grad):
    """The gradient through a stack's final LayerNorm, if the params have one:
    (grad_x, {"<stack>_norm": LayerNormParams of its gradients} or {})."""
    norm = getattr(params, f"{stack}_norm")
    if norm is None:
        return grad, {}
    grad_x, g_gamma, g_beta = layer_norm_backward(saved["output"], norm.gamma, grad,
                                                  params.eps, saved["norm"])
    return grad_x, {f"{stack}_norm": LayerNormParams(g_gamma, g_beta)}


def embedding_backward(tokens, grad, embedding):
    """∂L/∂E of the lookup E[tokens]: row v of E gets the sum of the gradients of every
    position holding token v, computed as one_hot(tokens)ᵀ grad,
    (vocab_size, d_model)."""
    xp = array_namespace(embedding)
    tokens = _token_ids(tokens, embedding)
    vocab = xp.arange(embedding.shape[0], device=device(embedding))
    # (..., n, vocab_size)
    one_hot = xp.astype(tokens[..., None] == vocab, embedding.dtype)
    return rows_outer(one_hot, grad)

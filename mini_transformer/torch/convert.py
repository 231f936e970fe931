"""Weights to and from ``torch.nn``: ``torch.nn.MultiheadAttention``,
``TransformerEncoderLayer``, ``TransformerDecoderLayer`` and ``Transformer``, the one
place where the package meets ``torch.nn``'s layout.

``from_torch(module)`` reads a ``torch.nn`` module into the params container of the
same kind (NumPy float64 arrays), through {name: array} under the containers' names
(``"attn.W_Q"``, ``"norm1.gamma"``, ...) and settings (``"eps"``, ``"norm_first"``),
which ``tree.from_named`` builds the container from; ``to_torch(params)`` builds the
``torch.nn`` module (batch_first, ReLU, no dropout) of a container::

    from mini_transformer.torch.convert import from_torch, to_torch
    params = from_torch(torch_model, embedding=emb)   # a TransformerParams
    layer = to_torch(params.encoder_layers[0], norm_first=True)
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from ..params import (DecoderLayerParams, EncoderLayerParams, MultiHeadParams,
                      TransformerParams)
from ..tree import from_named


def from_torch(module, embedding=None):
    """The params container of a ``torch.nn`` module, NumPy float64:
    ``MultiheadAttention`` -> ``MultiHeadParams``, ``TransformerEncoderLayer`` (ReLU)
    -> ``EncoderLayerParams``, ``TransformerDecoderLayer`` -> ``DecoderLayerParams``,
    ``Transformer`` -> ``TransformerParams`` (its final norms and norm_first too).

    ``torch.nn.Transformer`` has no embedding: pass one as ``embedding`` (a
    ``torch.nn.Embedding``, its weight, or an array (vocab_size, d_model)).
    """
    for kind, read in ((torch.nn.MultiheadAttention, multi_head_from_torch),
                       (torch.nn.TransformerEncoderLayer, encoder_layer_from_torch),
                       (torch.nn.TransformerDecoderLayer, decoder_layer_from_torch)):
        if isinstance(module, kind):
            return read(module)
    if isinstance(module, torch.nn.Transformer):
        return transformer_from_torch(module, embedding)
    raise ValueError(f"from_torch reads a torch.nn MultiheadAttention, "
                     f"TransformerEncoderLayer, TransformerDecoderLayer or "
                     f"Transformer, got {type(module).__name__}")


def to_torch(params, *, norm_first: bool | None = None, dtype=None, device=None):
    """The ``torch.nn`` module (batch_first, ReLU, no dropout, eval mode) with the
    weights of a params container: ``MultiHeadParams`` -> ``MultiheadAttention``,
    ``EncoderLayerParams`` -> ``TransformerEncoderLayer``, ``DecoderLayerParams`` ->
    ``TransformerDecoderLayer``, ``TransformerParams`` -> ``Transformer`` (final norms
    only where the params have them). norm_first: pre-LN layers; None is post-LN
    for a layer and, for a whole model, as its params were made.

    The embedding is not part of a ``torch.nn.Transformer``:
    ``torch.nn.Embedding.from_pretrained(torch.as_tensor(params.embedding))``
    makes one.
    """
    kw = dict(dtype=dtype, device=device)
    if isinstance(params, MultiHeadParams):
        return multi_head_to_torch(params, **kw)
    if isinstance(params, TransformerParams):
        norm_first = params.norm_first if norm_first is None else norm_first
        return transformer_to_torch(params, norm_first=norm_first, **kw)
    for kind, build in ((EncoderLayerParams, encoder_layer_to_torch),
                        (DecoderLayerParams, decoder_layer_to_torch)):
        if isinstance(params, kind):
            return build(params, norm_first=bool(norm_first), **kw)
    raise ValueError(f"to_torch builds a torch.nn module from a params container, got "
                     f"{type(params).__name__}")


def _numpy(t) -> np.ndarray:
    return t.detach().to("cpu", torch.float64).numpy().copy()


def _prefixed(prefix, named):
    return {f"{prefix}.{k}": v for k, v in named.items()}


# --- from torch.nn ---------------------------------------------------------------

def multi_head_from_torch(mha) -> MultiHeadParams:
    """A ``torch.nn.MultiheadAttention``'s weights as ``MultiHeadParams``."""
    return from_named(MultiHeadParams, _multi_head_named(mha))


def encoder_layer_from_torch(layer) -> EncoderLayerParams:
    """A ``torch.nn.TransformerEncoderLayer``'s (ReLU) weights and eps."""
    return from_named(EncoderLayerParams, _encoder_layer_named(layer))


def decoder_layer_from_torch(layer) -> DecoderLayerParams:
    """A ``torch.nn.TransformerDecoderLayer``'s (ReLU) weights and eps."""
    return from_named(DecoderLayerParams, _decoder_layer_named(layer))


def transformer_from_torch(model, embedding=None) -> TransformerParams:
    """A ``torch.nn.Transformer``'s weights (its final norms and norm_first too), and
    ``embedding`` (``from_torch``)."""
    return from_named(TransformerParams,
                      {"embedding": None} | _transformer_named(model, embedding))


def _multi_head_named(mha) -> dict:
    """A ``torch.nn.MultiheadAttention``'s weights, head-major: W_Q ... b_O."""
    if not mha._qkv_same_embed_dim:
        raise ValueError(
            "only MultiheadAttention with kdim == vdim == embed_dim is supported"
        )
    if mha.bias_k is not None or mha.add_zero_attn:
        raise ValueError("add_bias_kv and add_zero_attn are not supported")
    h, E = mha.num_heads, mha.embed_dim
    d_k = E // h
    W = _numpy(mha.in_proj_weight)  # (3E, E), torch computes x @ W.T
    bias = (
        _numpy(mha.in_proj_bias)
        if mha.in_proj_bias is not None
        else np.zeros(3 * E)
    )
    b_out = _numpy(mha.out_proj.bias) if mha.out_proj.bias is not None else np.zeros(E)

    def heads(Wp):  # (E_out, E_in) -> (h, E_in, d_k)
        return Wp.reshape(h, d_k, E).transpose(0, 2, 1).copy()

    return dict(
        W_Q=heads(W[:E]), W_K=heads(W[E:2 * E]), W_V=heads(W[2 * E:]),
        W_O=_numpy(mha.out_proj.weight).T.copy(),
        b_Q=bias[:E].reshape(h, d_k), b_K=bias[E:2 * E].reshape(h, d_k),
        b_V=bias[2 * E:].reshape(h, d_k), b_O=b_out,
    )


def _encoder_layer_named(layer) -> dict:
    _check_layer_type(layer, "TransformerEncoderLayer")
    return (_prefixed("attn", _multi_head_named(layer.self_attn))
            | _ffn_from_torch(layer) | _norms_from_torch(layer.norm1, layer.norm2))


def _decoder_layer_named(layer) -> dict:
    _check_layer_type(layer, "TransformerDecoderLayer")
    return (_prefixed("self_attn", _multi_head_named(layer.self_attn))
            | _prefixed("cross_attn", _multi_head_named(layer.multihead_attn))
            | _ffn_from_torch(layer)
            | _norms_from_torch(layer.norm1, layer.norm2, layer.norm3))


def _transformer_named(model, embedding=None) -> dict:
    named = {}
    for i, layer in enumerate(model.encoder.layers):
        named |= _prefixed(f"encoder_layers.{i}", _encoder_layer_named(layer))
    for i, layer in enumerate(model.decoder.layers):
        named |= _prefixed(f"decoder_layers.{i}", _decoder_layer_named(layer))
    stacks = [name for name in ("encoder", "decoder")
              if getattr(model, name).norm is not None]
    norms = [getattr(model, name).norm for name in stacks]
    for name, (gamma, beta) in zip(stacks, _gamma_beta(norms)):
        named |= {f"{name}_norm.gamma": gamma, f"{name}_norm.beta": beta}
    if norms:
        named["eps"] = norms[0].eps
    named["norm_first"] = bool(model.encoder.layers[0].norm_first
                               if len(model.encoder.layers)
                               else model.decoder.layers[0].norm_first)
    if embedding is not None:
        weight = getattr(embedding, "weight", embedding)  # nn.Embedding, or its weight
        embedding = (_numpy(weight) if hasattr(weight, "detach")
                     else np.array(weight, dtype=np.float64))
        if embedding.ndim != 2 or embedding.shape[1] != model.d_model:
            raise ValueError(f"embedding must have shape (vocab_size, d_model="
                             f"{model.d_model}), got {embedding.shape}")
        named["embedding"] = embedding
    return named


def _check_relu(layer):
    act = layer.activation
    if getattr(layer, "activation_relu_or_gelu", None) != 1 and not (
            act is torch.nn.functional.relu or isinstance(act, torch.nn.ReLU)):
        raise ValueError("only the ReLU activation of the paper is supported")


def _gamma_beta(norms):
    """(γ, β) of each ``torch.nn.LayerNorm`` (ones and zeros where it has none)."""
    if len({norm.eps for norm in norms}) > 1:
        raise ValueError(f"the {len(norms)} LayerNorms must share eps, got "
                         f"{[norm.eps for norm in norms]}")
    out = []
    for norm in norms:
        d = norm.normalized_shape[0]
        out.append((_numpy(norm.weight) if norm.weight is not None else np.ones(d),
                    _numpy(norm.bias) if norm.bias is not None else np.zeros(d)))
    return out


def _norms_from_torch(*norms) -> dict:
    """{"norm1.gamma": ..., "norm1.beta": ..., ..., "eps": ...} of a layer's norms."""
    named = {"eps": norms[0].eps}
    for i, (gamma, beta) in enumerate(_gamma_beta(norms), 1):
        named |= {f"norm{i}.gamma": gamma, f"norm{i}.beta": beta}
    return named


def _check_layer_type(layer, expected: str) -> None:
    """Refuse the other kind of layer: a decoder layer read as an encoder layer would
    silently lose its cross-attention."""
    if not isinstance(layer, getattr(torch.nn, expected)):
        raise ValueError(f"expected a torch.nn.{expected}, got {type(layer).__name__}")


def _ffn_from_torch(layer) -> dict:
    """The feed-forward weights of a torch encoder or decoder layer (ReLU only)."""
    _check_relu(layer)

    def bias(linear):  # bias=False layers have none: zeros
        b = linear.bias
        return _numpy(b) if b is not None else np.zeros(linear.out_features)

    return {"ffn.W_1": _numpy(layer.linear1.weight).T.copy(),
            "ffn.b_1": bias(layer.linear1),
            "ffn.W_2": _numpy(layer.linear2.weight).T.copy(),
            "ffn.b_2": bias(layer.linear2)}


# --- to torch.nn -----------------------------------------------------------------

def multi_head_to_torch(p, *, dtype=None, device=None):
    """A ``torch.nn.MultiheadAttention`` (batch_first, no dropout) with the weights of
    the ``MultiHeadParams`` p."""
    dtype = dtype or torch.float64
    h, E, d_k = p.n_heads, p.d_model, p.d_k
    if p.d_v != d_k or h * d_k != E:
        raise ValueError(
            f"torch.nn.MultiheadAttention needs d_k = d_v = d_model / n_heads, got "
            f"d_model={E}, n_heads={h}, d_k={d_k}, d_v={p.d_v}"
        )
    p = p.map(lambda a: np.asarray(a, dtype=np.float64))
    mha = torch.nn.MultiheadAttention(
        E, h, dropout=0.0, batch_first=True, device=device, dtype=dtype
    )

    def rows(W):  # (h, E_in, d_k) -> (E_out, E_in)
        return W.transpose(0, 2, 1).reshape(E, E)

    _put(mha.in_proj_weight, np.concatenate([rows(p.W_Q), rows(p.W_K), rows(p.W_V)]))
    _put(mha.in_proj_bias, np.concatenate([p.b_Q.ravel(), p.b_K.ravel(),
                                           p.b_V.ravel()]))
    _put(mha.out_proj.weight, p.W_O.T)
    _put(mha.out_proj.bias, p.b_O)
    return mha


def encoder_layer_to_torch(p, *, norm_first: bool = False, dtype=None, device=None):
    """A ``torch.nn.TransformerEncoderLayer`` (batch_first, ReLU, no dropout) with
    the weights of the ``EncoderLayerParams`` p."""
    dtype = dtype or torch.float64
    layer = torch.nn.TransformerEncoderLayer(
        p.d_model, p.attn.n_heads, dim_feedforward=p.ffn.d_ff, dropout=0.0,
        layer_norm_eps=p.eps, batch_first=True, norm_first=norm_first,
        device=device, dtype=dtype,
    )
    layer.self_attn = multi_head_to_torch(p.attn, dtype=dtype, device=device)
    _put_ffn_and_norms(layer, p, 2)
    return layer.eval()


def decoder_layer_to_torch(p, *, norm_first: bool = False, dtype=None, device=None):
    """A ``torch.nn.TransformerDecoderLayer`` (batch_first, ReLU, no dropout) with
    the weights of the ``DecoderLayerParams`` p."""
    if p.cross_attn is None:
        raise ValueError("a decoder-only layer (no cross_attn) has no "
                         "torch.nn.TransformerDecoderLayer: its block is a "
                         "torch.nn.TransformerEncoderLayer under a causal mask")
    dtype = dtype or torch.float64
    layer = torch.nn.TransformerDecoderLayer(
        p.d_model,
        p.self_attn.n_heads,
        dim_feedforward=p.ffn.d_ff,
        dropout=0.0,
        layer_norm_eps=p.eps,
        batch_first=True,
        norm_first=norm_first,
        device=device,
        dtype=dtype,
    )
    layer.self_attn = multi_head_to_torch(p.self_attn, dtype=dtype, device=device)
    layer.multihead_attn = multi_head_to_torch(p.cross_attn, dtype=dtype, device=device)
    _put_ffn_and_norms(layer, p, 3)
    return layer.eval()


def transformer_to_torch(p, *, norm_first: bool = False, dtype=None, device=None):
    """A ``torch.nn.Transformer`` (batch_first, ReLU, no dropout) with the weights of
    the ``TransformerParams`` p, and final norms only where p has them.

    Its encoder never turns padded inputs into nested tensors (which would give
    zeros at padded positions). The embedding is not part of a
    ``torch.nn.Transformer``: ``torch.nn.Embedding.from_pretrained(torch.as_tensor(
    params.embedding))`` makes one.
    """
    layer = (*p.encoder_layers, *p.decoder_layers)[0]
    n_heads = (layer.attn if hasattr(layer, "attn") else layer.self_attn).n_heads
    with warnings.catch_warnings():  # the nested-tensor fast path, switched off below
        warnings.filterwarnings("ignore", "enable_nested_tensor is True")
        model = torch.nn.Transformer(
            p.d_model,
            n_heads,
            len(p.encoder_layers),
            len(p.decoder_layers),
            layer.ffn.d_ff,
            dropout=0.0,
            layer_norm_eps=p.eps,
            batch_first=True,
            norm_first=norm_first,
            device=device,
            dtype=dtype or torch.float64,
        )
    model.encoder.use_nested_tensor = False
    kw = dict(norm_first=norm_first, dtype=dtype, device=device)
    model.encoder.layers = torch.nn.ModuleList(
        encoder_layer_to_torch(q, **kw) for q in p.encoder_layers)
    model.decoder.layers = torch.nn.ModuleList(
        decoder_layer_to_torch(q, **kw) for q in p.decoder_layers)
    for stack, norm in ((model.encoder, p.encoder_norm),
                        (model.decoder, p.decoder_norm)):
        if norm is None:
            stack.norm = None
        else:
            _put(stack.norm.weight, norm.gamma)
            _put(stack.norm.bias, norm.beta)
    return model.eval()


def _put(param, a):
    with torch.no_grad():
        param.copy_(torch.as_tensor(np.asarray(a, dtype=np.float64)))


def _put_ffn_and_norms(layer, p, n_norms):
    """Copy the feed-forward weights and the LayerNorms of ``p`` into a torch layer."""
    for param, a in (
        (layer.linear1.weight, p.ffn.W_1.T),
        (layer.linear1.bias, p.ffn.b_1),
        (layer.linear2.weight, p.ffn.W_2.T),
        (layer.linear2.bias, p.ffn.b_2),
    ):
        _put(param, a)
    for i in range(1, n_norms + 1):
        torch_norm, norm = getattr(layer, f"norm{i}"), getattr(p, f"norm{i}")
        _put(torch_norm.weight, norm.gamma)
        _put(torch_norm.bias, norm.beta)

"""``torch.nn.Module`` wrappers around the package's math.

Each module holds the arrays of one params container as ``nn.Parameter``s under the
container's names, so its ``state_dict`` keys are the checkpoint's
(``"encoder_layers.0.attn.W_Q"``): ``model.load_state_dict`` takes a checkpoint's
arrays, and ``model.params`` gives a container back. Every module is built one
way, by its ``__init__``: from ``params`` when given, else from random weights of
the given sizes (``seed``). The equations they run are the package's functions,
unchanged. ``fused=True`` routes the per-head attention through
``torch.nn.functional.scaled_dot_product_attention`` (FlashAttention or
memory-efficient kernels on a GPU, a fused kernel on CPU); the tests check it
against the readable path.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from array_api_compat import array_namespace
from torch import nn

from .. import _checks
from ..attention import as_mask
from ..decoder import decoder_layer
from ..decoding import greedy_decode
from ..encoder import encoder_layer
from ..multihead import multi_head_attention
from ..params import (DecoderLayerParams, EncoderLayerParams, FeedForwardParams,
                      LayerNormParams, MultiHeadParams, TransformerParams)
from ..transformer import encoder_decoder, transformer
from .convert import from_torch


def _check_fused(q, k, v, **_):
    _checks.check_qkv(q, k, v)
    if not torch.is_tensor(q):
        raise ValueError(
            f"fused_attention needs torch tensors, got {type(q).__module__}."
            f"{type(q).__name__}; use scaled_dot_product_attention for other arrays"
        )


@_checks.at_door(_check_fused)
def fused_attention(q, k, v, mask=None):
    """softmax(Q Kᵀ / √d_k) V through ``F.scaled_dot_product_attention``.

    Same arguments and mask convention as ``scaled_dot_product_attention``
    (bool True = may attend, float added). Returns (output, None): the fused
    kernel never forms the weights, which is the point of it.
    """
    if mask is not None:
        shape = (
            *torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]),
            q.shape[-2],
            k.shape[-2],
        )
        mask = as_mask(mask, q, shape, array_namespace(q))
    return torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask
    ), None


def _parameter(a, device, dtype):
    return nn.Parameter(torch.as_tensor(np.asarray(a), device=device, dtype=dtype))


def _arrays(module, params, names, device, dtype):
    """The arrays ``names`` of ``params`` as parameters of ``module`` (None kept)."""
    for name in names:
        value = getattr(params, name)
        module.register_parameter(
            name, None if value is None else _parameter(value, device, dtype))


def _params(module):
    """A module's params container, or None for no module."""
    return None if module is None else module.params


def _norm(params, device, dtype):
    """A ``LayerNorm`` module holding ``params`` (a ``LayerNormParams``), or None."""
    return None if params is None else LayerNorm(params, device=device, dtype=dtype)


class MultiHeadAttention(nn.Module):
    """Multi-head attention holding ``MultiHeadParams`` as ``nn.Parameter``s.

    forward(x, mask=None, memory=None) -> (output, weights); weights are None
    when ``fused=True``.
    """

    _names = ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")

    def __init__(self, d_model: int | None = None, n_heads: int | None = None, *,
                 params: MultiHeadParams | None = None, fused: bool = False,
                 seed: int = 0, device=None, dtype=None):
        super().__init__()
        if params is None:
            params = MultiHeadParams.random(np.random.default_rng(seed),
                                            d_model=d_model, n_heads=n_heads)
        _arrays(self, params, self._names, device, dtype or torch.get_default_dtype())
        self.fused = fused

    @classmethod
    def from_params(cls, params: MultiHeadParams, **kwargs):
        return cls(params=params, **kwargs)

    @classmethod
    def from_torch(cls, mha: nn.MultiheadAttention, **kwargs):
        """Copy the weights of a ``torch.nn.MultiheadAttention``."""
        kwargs.setdefault("dtype", mha.in_proj_weight.dtype)
        kwargs.setdefault("device", mha.in_proj_weight.device)
        return cls(params=from_torch(mha), **kwargs)

    @property
    def params(self) -> MultiHeadParams:
        return MultiHeadParams(**{name: getattr(self, name) for name in self._names})

    def forward(self, x, mask=None, memory=None):
        attention = fused_attention if self.fused else None
        return multi_head_attention(x, self.params, mask, memory, attention=attention)


class FeedForward(nn.Module):
    """The feed-forward weights ``FeedForwardParams`` (W_1, b_1, W_2, b_2) of a layer.
    """

    _names = ("W_1", "b_1", "W_2", "b_2")

    def __init__(self, params: FeedForwardParams, *, device=None, dtype=None):
        super().__init__()
        _arrays(self, params, self._names, device, dtype or torch.get_default_dtype())

    @property
    def params(self) -> FeedForwardParams:
        return FeedForwardParams(**{name: getattr(self, name) for name in self._names})


class LayerNorm(nn.Module):
    """One LayerNorm's γ and β (``LayerNormParams``: gamma, beta)."""

    _names = ("gamma", "beta")

    def __init__(self, params: LayerNormParams, *, device=None, dtype=None):
        super().__init__()
        _arrays(self, params, self._names, device, dtype or torch.get_default_dtype())

    @property
    def params(self) -> LayerNormParams:
        return LayerNormParams(self.gamma, self.beta)


class _Layer(nn.Module):
    """What the encoder and decoder layers share: the attentions and the
    feed-forward and the LayerNorms as submodules, all under
    the params container's names; built from ``params``, or from random weights
    (``seed``) of the given sizes."""

    _Params: type                # EncoderLayerParams or DecoderLayerParams
    _attentions: tuple           # the names of its attentions
    _norms: tuple                # the names of its LayerNorms

    def __init__(self, d_model: int | None = None, n_heads: int | None = None,
                 d_ff: int | None = None, *, params=None, norm_first: bool = False,
                 fused: bool = False, eps: float | None = None, seed: int = 0,
                 device=None, dtype=None):
        super().__init__()
        if params is None:
            params = self._Params.random(np.random.default_rng(seed), d_model=d_model,
                                         n_heads=n_heads, d_ff=d_ff)
        if eps is not None:
            params = dataclasses.replace(params, eps=eps)
        dtype = dtype or torch.get_default_dtype()
        for name in self._attentions:   # None: a decoder-only layer's cross_attn
            p = getattr(params, name)
            setattr(self, name, None if p is None else MultiHeadAttention(
                params=p, fused=fused, device=device, dtype=dtype))
        self.ffn = FeedForward(params.ffn, device=device, dtype=dtype)
        for name in self._norms:
            setattr(self, name, _norm(getattr(params, name), device, dtype))
        self.norm_first, self.eps = norm_first, params.eps

    @classmethod
    def from_params(cls, params, **kwargs):
        return cls(params=params, **kwargs)

    @classmethod
    def from_torch(cls, layer, *, fused=False, **kwargs):
        """Copy the weights (and norm_first) of a ``torch.nn.TransformerEncoderLayer``
        (for ``EncoderLayer``) or ``torch.nn.TransformerDecoderLayer``
        (``DecoderLayer``)."""
        kwargs.setdefault("dtype", layer.linear1.weight.dtype)
        kwargs.setdefault("device", layer.linear1.weight.device)
        return cls(params=from_torch(layer), norm_first=layer.norm_first,
                   fused=fused, **kwargs)

    @property
    def params(self):
        return self._Params(
            **{name: _params(getattr(self, name)) for name in self._attentions},
            ffn=self.ffn.params,
            **{name: _params(getattr(self, name)) for name in self._norms},
            eps=self.eps)

    @property
    def _attention(self):
        return fused_attention if getattr(self, self._attentions[0]).fused else None


class EncoderLayer(_Layer):
    """One encoder layer (post-LN by default, pre-LN with ``norm_first=True``)."""

    _Params, _attentions, _norms = EncoderLayerParams, ("attn",), ("norm1", "norm2")

    def forward(self, x, mask=None):
        return encoder_layer(x, self.params, mask, norm_first=self.norm_first,
                             attention=self._attention)


class DecoderLayer(_Layer):
    """One decoder layer (post-LN by default, pre-LN with ``norm_first=True``).

    forward(y, memory, self_mask=None, memory_mask=None, cache=None)
    """

    _Params, _attentions = DecoderLayerParams, ("self_attn", "cross_attn")
    _norms = ("norm1", "norm2", "norm3")

    def forward(self, y, memory, self_mask=None, memory_mask=None, cache=None):
        return decoder_layer(y, memory, self.params, self_mask, memory_mask,
                             norm_first=self.norm_first, attention=self._attention,
                             cache=cache)


class _Stack(nn.Module):
    """``n_layers`` layers of one kind, layer i seeded with ``seed + i``."""

    layer_class: type

    def __init__(self, n_layers: int, d_model: int, n_heads: int,
                 d_ff: int | None = None, *, seed: int = 0, **kwargs):
        super().__init__()
        self.layers = nn.ModuleList(
            self.layer_class(d_model, n_heads, d_ff, seed=seed + i, **kwargs)
            for i in range(n_layers)
        )


class Encoder(_Stack):
    """A stack of ``n_layers`` encoder layers (the paper: 6)."""

    layer_class = EncoderLayer

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return x


class Decoder(_Stack):
    """A stack of ``n_layers`` decoder layers (the paper: 6)."""

    layer_class = DecoderLayer

    def forward(self, y, memory, self_mask=None, memory_mask=None):
        for layer in self.layers:
            y = layer(y, memory, self_mask, memory_mask)
        return y


class Transformer(nn.Module):
    """The whole model holding ``TransformerParams``: a tied embedding, the encoder
    and decoder stacks and, where the params have them, final LayerNorms; its
    ``state_dict`` keys are the names of a checkpoint's arrays.

    forward(src_tokens, tgt_tokens, src_mask=None, tgt_mask=None) -> logits, as
    ``mini_transformer.transformer``; ``encoder_decoder`` and ``greedy_decode``
    as the functions of the same names. norm_first None: as the params say.
    """


    def __init__(self, vocab_size: int | None = None, d_model: int | None = None,
                 n_heads: int | None = None, d_ff: int | None = None,
                 n_layers: int = 6, *, params: TransformerParams | None = None,
                 norm_first: bool | None = None, fused: bool = False, seed: int = 0,
                 device=None, dtype=None):
        super().__init__()
        if params is None:
            params = TransformerParams.random(
                np.random.default_rng(seed), vocab_size=vocab_size, d_model=d_model,
                n_heads=n_heads, d_ff=d_ff, n_layers=n_layers)
        if norm_first is not None:
            params = dataclasses.replace(params, norm_first=norm_first)
        dtype = dtype or torch.get_default_dtype()
        kw = dict(norm_first=params.norm_first, fused=fused, device=device, dtype=dtype)
        self.encoder_layers = nn.ModuleList(
            EncoderLayer(params=p, **kw) for p in params.encoder_layers)
        self.decoder_layers = nn.ModuleList(
            DecoderLayer(params=p, **kw) for p in params.decoder_layers)
        _arrays(self, params, ("embedding",), device, dtype)
        self.encoder_norm = _norm(params.encoder_norm, device, dtype)
        self.decoder_norm = _norm(params.decoder_norm, device, dtype)
        self.norm_first, self.fused, self.eps = params.norm_first, fused, params.eps

    @classmethod
    def from_params(cls, params: TransformerParams, **kwargs):
        return cls(params=params, **kwargs)

    @classmethod
    def from_torch(cls, model: nn.Transformer, embedding=None, *, fused=False,
                   **kwargs):
        """Copy the weights (final norms and norm_first too) of a torch.nn.Transformer,
        and ``embedding`` (an ``nn.Embedding``), which it does not have."""
        weight = model.encoder.layers[0].linear1.weight
        kwargs.setdefault("dtype", weight.dtype)
        kwargs.setdefault("device", weight.device)
        return cls(params=from_torch(model, embedding), fused=fused,
                   **kwargs)

    @property
    def params(self) -> TransformerParams:
        return TransformerParams(
            embedding=self.embedding,
            encoder_layers=tuple(layer.params for layer in self.encoder_layers),
            decoder_layers=tuple(layer.params for layer in self.decoder_layers),
            encoder_norm=_params(self.encoder_norm),
            decoder_norm=_params(self.decoder_norm),
            eps=self.eps,
            norm_first=self.norm_first,
        )

    @property
    def _attention(self):
        return fused_attention if self.fused else None

    def forward(self, src_tokens, tgt_tokens, src_mask=None, tgt_mask=None):
        return transformer(src_tokens, tgt_tokens, self.params, src_mask, tgt_mask,
                           attention=self._attention)

    def encoder_decoder(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None):
        return encoder_decoder(src, tgt, self.params, src_mask, tgt_mask, memory_mask,
                               attention=self._attention)

    def greedy_decode(self, src_tokens, max_len, bos, eos, src_mask=None,
                      return_logits=False):
        return greedy_decode(src_tokens, self.params, max_len, bos, eos, src_mask,
                             attention=self._attention, return_logits=return_logits)

"""``torch.nn.Module`` wrappers around the package's math.

The modules hold parameters (and so devices and dtypes); the equations they run
are the package's own functions, unchanged. ``fused=True`` routes the
per-head attention through ``torch.nn.functional.scaled_dot_product_attention``
(FlashAttention or memory-efficient kernels on a GPU, a fused kernel on CPU);
the tests check it against the readable path.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from array_api_compat import array_namespace

from ..attention import as_mask, check_qkv
from ..decoder import decoder_layer
from ..encoder import encoder_layer
from ..multihead import multi_head_attention
from ..params import (DecoderLayerParams, EncoderLayerParams, FeedForwardParams,
                      MultiHeadParams, TransformerParams)
from ..transformer import encoder_decoder, greedy_decode, transformer

__all__ = ["Decoder", "DecoderLayer", "Encoder", "EncoderLayer", "MultiHeadAttention",
           "Transformer", "fused_attention"]


def fused_attention(q, k, v, mask=None):
    """softmax(Q Kᵀ / √d_k) V through ``F.scaled_dot_product_attention``.

    Same arguments and mask convention as ``scaled_dot_product_attention``
    (bool True = may attend, float added). Returns (output, None): the fused
    kernel never forms the weights, which is the point of it.
    """
    check_qkv(q, k, v)
    if not torch.is_tensor(q):
        raise ValueError(
            f"fused_attention needs torch tensors, got {type(q).__module__}."
            f"{type(q).__name__}; use scaled_dot_product_attention for other arrays"
        )
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


def _load_ffn_and_norms(module, params, n_norms, device, dtype):
    """The feed-forward weights and the LayerNorms' γ, β of a layer as parameters."""
    for name in ("W_1", "b_1", "W_2", "b_2"):
        setattr(module, name, _parameter(getattr(params.ffn, name), device, dtype))
    for i in range(1, n_norms + 1):
        for name in (f"norm{i}_gamma", f"norm{i}_beta"):
            setattr(module, name, _parameter(getattr(params, name), device, dtype))


class MultiHeadAttention(nn.Module):
    """Multi-head attention holding ``MultiHeadParams`` as ``nn.Parameter``s.

    forward(x, mask=None, memory=None) -> (output, weights); weights are None
    when ``fused=True``.
    """

    _names = ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")

    def __init__(self, d_model: int, n_heads: int, *, fused: bool = False,
                 seed: int = 0, device=None, dtype=None):
        super().__init__()
        params = MultiHeadParams.random(np.random.default_rng(seed),
                                        d_model=d_model, n_heads=n_heads)
        self._load(params, device, dtype or torch.get_default_dtype())
        self.fused = fused

    def _load(self, params: MultiHeadParams, device, dtype):
        for name in self._names:
            setattr(self, name, _parameter(getattr(params, name), device, dtype))

    @classmethod
    def from_params(
        cls, params: MultiHeadParams, *, fused=False, device=None, dtype=None
    ):
        module = cls.__new__(cls)
        nn.Module.__init__(module)
        module._load(params, device, dtype or torch.get_default_dtype())
        module.fused = fused
        return module

    @classmethod
    def from_torch(cls, mha: nn.MultiheadAttention, **kwargs):
        """Copy the weights of a ``torch.nn.MultiheadAttention``."""
        kwargs.setdefault("dtype", mha.in_proj_weight.dtype)
        kwargs.setdefault("device", mha.in_proj_weight.device)
        return cls.from_params(MultiHeadParams.from_torch(mha), **kwargs)

    @property
    def params(self) -> MultiHeadParams:
        return MultiHeadParams(**{name: getattr(self, name) for name in self._names})

    def forward(self, x, mask=None, memory=None):
        attention = fused_attention if self.fused else None
        return multi_head_attention(x, self.params, mask, memory, attention=attention)


class _Layer(nn.Module):
    """What the encoder and decoder layers share: built from random weights (``seed``),
    from a params container, or from the matching ``torch.nn`` layer."""

    _Params: type  # EncoderLayerParams or DecoderLayerParams

    def __init__(self, d_model: int, n_heads: int, d_ff: int | None = None, *,
                 norm_first: bool = False, fused: bool = False, eps: float = 1e-5,
                 seed: int = 0, device=None, dtype=None):
        super().__init__()
        params = self._Params.random(np.random.default_rng(seed), d_model=d_model,
                                     n_heads=n_heads, d_ff=d_ff)
        self._load(params, norm_first, fused, eps, device, dtype)

    @classmethod
    def from_params(
        cls, params, *, norm_first=False, fused=False, device=None, dtype=None
    ):
        module = cls.__new__(cls)
        nn.Module.__init__(module)
        module._load(params, norm_first, fused, params.eps, device, dtype)
        return module

    @classmethod
    def from_torch(cls, layer, *, fused=False, **kwargs):
        """Copy the weights (and norm_first) of a ``torch.nn.TransformerEncoderLayer``
        (for ``EncoderLayer``) or ``torch.nn.TransformerDecoderLayer``
        (``DecoderLayer``)."""
        kwargs.setdefault("dtype", layer.linear1.weight.dtype)
        kwargs.setdefault("device", layer.linear1.weight.device)
        return cls.from_params(
            cls._Params.from_torch(layer),
            norm_first=layer.norm_first,
            fused=fused,
            **kwargs,
        )


class EncoderLayer(_Layer):
    """One encoder layer (post-LN by default, pre-LN with ``norm_first=True``)."""

    _Params = EncoderLayerParams

    def _load(self, params, norm_first, fused, eps, device, dtype):
        dtype = dtype or torch.get_default_dtype()
        self.self_attn = MultiHeadAttention.from_params(params.attn, fused=fused,
                                                        device=device, dtype=dtype)
        _load_ffn_and_norms(self, params, 2, device, dtype)
        self.norm_first, self.eps = norm_first, eps

    @property
    def params(self) -> EncoderLayerParams:
        return EncoderLayerParams(
            attn=self.self_attn.params,
            ffn=FeedForwardParams(self.W_1, self.b_1, self.W_2, self.b_2),
            norm1_gamma=self.norm1_gamma, norm1_beta=self.norm1_beta,
            norm2_gamma=self.norm2_gamma, norm2_beta=self.norm2_beta, eps=self.eps,
        )

    def forward(self, x, mask=None):
        attention = fused_attention if self.self_attn.fused else None
        return encoder_layer(x, self.params, mask, norm_first=self.norm_first,
                             attention=attention)


class DecoderLayer(_Layer):
    """One decoder layer (post-LN by default, pre-LN with ``norm_first=True``).

    forward(y, memory, self_mask=None, memory_mask=None, cache=None)
    """

    _Params = DecoderLayerParams

    def _load(self, params, norm_first, fused, eps, device, dtype):
        dtype = dtype or torch.get_default_dtype()
        self.self_attn = MultiHeadAttention.from_params(params.self_attn, fused=fused,
                                                        device=device, dtype=dtype)
        self.cross_attn = MultiHeadAttention.from_params(params.cross_attn, fused=fused,
                                                         device=device, dtype=dtype)
        _load_ffn_and_norms(self, params, 3, device, dtype)
        self.norm_first, self.eps = norm_first, eps

    @property
    def params(self) -> DecoderLayerParams:
        return DecoderLayerParams(
            self_attn=self.self_attn.params, cross_attn=self.cross_attn.params,
            ffn=FeedForwardParams(self.W_1, self.b_1, self.W_2, self.b_2),
            norm1_gamma=self.norm1_gamma, norm1_beta=self.norm1_beta,
            norm2_gamma=self.norm2_gamma, norm2_beta=self.norm2_beta,
            norm3_gamma=self.norm3_gamma, norm3_beta=self.norm3_beta, eps=self.eps,
        )

    def forward(self, y, memory, self_mask=None, memory_mask=None, cache=None):
        attention = fused_attention if self.self_attn.fused else None
        return decoder_layer(
            y,
            memory,
            self.params,
            self_mask,
            memory_mask,
            norm_first=self.norm_first,
            attention=attention,
            cache=cache,
        )


class _Stack(nn.Module):
    """``n_layers`` layers of one kind, layer i seeded with ``seed + i``."""

    layer_class: type

    def __init__(
        self,
        n_layers: int,
        d_model: int,
        n_heads: int,
        d_ff: int | None = None,
        *,
        seed: int = 0,
        **kwargs,
    ):
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
    and decoder stacks and, where the params have them, final LayerNorms.

    forward(src_tokens, tgt_tokens, src_mask=None, tgt_mask=None) -> logits, as
    ``mini_transformer.transformer``; ``encoder_decoder`` and ``greedy_decode``
    as the functions of the same names.
    """

    _norms = ("encoder_norm_gamma", "encoder_norm_beta",
              "decoder_norm_gamma", "decoder_norm_beta")

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        n_heads: int,
        d_ff: int | None = None,
        n_layers: int = 6,
        *,
        norm_first: bool = False,
        fused: bool = False,
        seed: int = 0,
        device=None,
        dtype=None,
    ):
        super().__init__()
        params = TransformerParams.random(
            np.random.default_rng(seed),
            vocab_size=vocab_size,
            d_model=d_model,
            n_heads=n_heads,
            d_ff=d_ff,
            n_layers=n_layers,
        )
        self._load(params, norm_first, fused, device, dtype)

    def _load(self, params, norm_first, fused, device, dtype):
        dtype = dtype or torch.get_default_dtype()
        kw = dict(norm_first=norm_first, fused=fused, device=device, dtype=dtype)
        self.encoder_layers = nn.ModuleList(
            EncoderLayer.from_params(p, **kw) for p in params.encoder_layers)
        self.decoder_layers = nn.ModuleList(
            DecoderLayer.from_params(p, **kw) for p in params.decoder_layers)
        for name in ("embedding", *self._norms):
            value = getattr(params, name)
            self.register_parameter(
                name, None if value is None else _parameter(value, device, dtype))
        self.norm_first, self.fused, self.eps = norm_first, fused, params.eps

    @classmethod
    def from_params(cls, params: TransformerParams, *, norm_first=False, fused=False,
                    device=None, dtype=None):
        module = cls.__new__(cls)
        nn.Module.__init__(module)
        module._load(params, norm_first, fused, device, dtype)
        return module

    @classmethod
    def from_torch(
        cls, model: nn.Transformer, embedding=None, *, fused=False, **kwargs
    ):
        """Copy the weights (final norms and norm_first too) of a torch.nn.Transformer,
        and ``embedding`` (an ``nn.Embedding``), which it does not have."""
        weight = model.encoder.layers[0].linear1.weight
        kwargs.setdefault("dtype", weight.dtype)
        kwargs.setdefault("device", weight.device)
        return cls.from_params(
            TransformerParams.from_torch(model, embedding),
            norm_first=model.encoder.layers[0].norm_first,
            fused=fused,
            **kwargs,
        )

    @property
    def params(self) -> TransformerParams:
        return TransformerParams(
            embedding=self.embedding,
            encoder_layers=tuple(layer.params for layer in self.encoder_layers),
            decoder_layers=tuple(layer.params for layer in self.decoder_layers),
            **{name: getattr(self, name) for name in self._norms}, eps=self.eps,
        )

    @property
    def _attention(self):
        return fused_attention if self.fused else None

    def forward(self, src_tokens, tgt_tokens, src_mask=None, tgt_mask=None):
        return transformer(src_tokens, tgt_tokens, self.params, src_mask, tgt_mask,
                           norm_first=self.norm_first, attention=self._attention)

    def encoder_decoder(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None):
        return encoder_decoder(src, tgt, self.params, src_mask, tgt_mask, memory_mask,
                               norm_first=self.norm_first, attention=self._attention)

    def greedy_decode(self, src_tokens, max_len, bos, eos, src_mask=None,
                      return_logits=False):
        return greedy_decode(src_tokens, self.params, max_len, bos, eos, src_mask,
                             norm_first=self.norm_first, attention=self._attention,
                             return_logits=return_logits)

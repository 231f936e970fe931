"""Weight containers in the paper's row-vector convention (``X @ W``).

Every container is a frozen dataclass of arrays. ``.map(f)`` returns a copy with
``f`` applied to every array, which is how weights move between libraries,
devices and dtypes::

    params.map(lambda a: torch.as_tensor(a, device="cuda", dtype=torch.float32))

``from_torch`` / ``to_torch`` move weights exactly to and from ``torch.nn``
(``torch.nn.MultiheadAttention``, ``torch.nn.TransformerEncoderLayer``,
``torch.nn.TransformerDecoderLayer`` and ``torch.nn.Transformer``);
``from_torch`` returns NumPy float64 arrays. Only these methods import torch.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass

import numpy as np


class _Params:
    def map(self, f):
        """A copy with ``f`` applied to every array (nested containers too)."""
        changes = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, _Params):
                changes[field.name] = value.map(f)
            elif isinstance(value, tuple):  # a stack of layers
                changes[field.name] = tuple(layer.map(f) for layer in value)
            elif hasattr(value, "shape"):
                changes[field.name] = f(value)
        return dataclasses.replace(self, **changes)


def _uniform(rng, fan_in, fan_out, shape):
    bound = math.sqrt(6.0 / (fan_in + fan_out))  # Glorot/Xavier uniform
    return rng.uniform(-bound, bound, size=shape)


def _numpy(t) -> np.ndarray:
    import torch

    return t.detach().to("cpu", torch.float64).numpy().copy()


@dataclass(frozen=True)
class MultiHeadParams(_Params):
    """Weights of multi-head attention, head-major.

    W_Q, W_K: (n_heads, d_model, d_k)   W_V: (n_heads, d_model, d_v)
    W_O: (n_heads * d_v, d_model)
    b_Q, b_K: (n_heads, d_k)   b_V: (n_heads, d_v)   b_O: (d_model,)
    The paper writes no biases; ``torch.nn.MultiheadAttention`` has them by default.
    """

    W_Q: object
    W_K: object
    W_V: object
    W_O: object
    b_Q: object
    b_K: object
    b_V: object
    b_O: object

    @property
    def n_heads(self) -> int:
        return self.W_Q.shape[0]

    @property
    def d_model(self) -> int:
        return self.W_Q.shape[1]

    @property
    def d_k(self) -> int:
        return self.W_Q.shape[2]

    @property
    def d_v(self) -> int:
        return self.W_V.shape[2]

    @classmethod
    def random(cls, rng, *, d_model: int, n_heads: int, bias: bool = True):
        """Glorot-uniform weights (float64 NumPy), d_k = d_v = d_model / n_heads."""
        if n_heads < 1 or d_model < 1 or d_model % n_heads:
            raise ValueError(
                f"d_model={d_model} must be a positive multiple of n_heads={n_heads}"
            )
        h, d_k = n_heads, d_model // n_heads

        def b(*shape):
            return rng.normal(0, 0.1, size=shape) if bias else np.zeros(shape)

        return cls(
            W_Q=_uniform(rng, d_model, d_model, (h, d_model, d_k)),
            W_K=_uniform(rng, d_model, d_model, (h, d_model, d_k)),
            W_V=_uniform(rng, d_model, d_model, (h, d_model, d_k)),
            W_O=_uniform(rng, d_model, d_model, (h * d_k, d_model)),
            b_Q=b(h, d_k), b_K=b(h, d_k), b_V=b(h, d_k), b_O=b(d_model),
        )

    @classmethod
    def from_torch(cls, mha) -> "MultiHeadParams":
        """Weights of a ``torch.nn.MultiheadAttention`` as NumPy float64 arrays."""
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
        b_out = (
            _numpy(mha.out_proj.bias) if mha.out_proj.bias is not None else np.zeros(E)
        )

        def heads(Wp):  # (E_out, E_in) -> (h, E_in, d_k)
            return Wp.reshape(h, d_k, E).transpose(0, 2, 1).copy()

        return cls(
            W_Q=heads(W[:E]), W_K=heads(W[E:2 * E]), W_V=heads(W[2 * E:]),
            W_O=_numpy(mha.out_proj.weight).T.copy(),
            b_Q=bias[:E].reshape(h, d_k), b_K=bias[E:2 * E].reshape(h, d_k),
            b_V=bias[2 * E:].reshape(h, d_k), b_O=b_out,
        )

    def to_torch(self, *, dtype=None, device=None):
        """A torch.nn.MultiheadAttention (batch_first, no dropout) with these weights.
        """
        import torch

        dtype = dtype or torch.float64
        h, E, d_k = self.n_heads, self.d_model, self.d_k
        if self.d_v != d_k or h * d_k != E:
            raise ValueError(
                f"torch.nn.MultiheadAttention needs d_k = d_v = d_model / n_heads, got "
                f"d_model={E}, n_heads={h}, d_k={d_k}, d_v={self.d_v}"
            )
        p = self.map(lambda a: np.asarray(a, dtype=np.float64))
        mha = torch.nn.MultiheadAttention(
            E, h, dropout=0.0, batch_first=True, device=device, dtype=dtype
        )

        def rows(W):  # (h, E_in, d_k) -> (E_out, E_in)
            return W.transpose(0, 2, 1).reshape(E, E)

        with torch.no_grad():
            mha.in_proj_weight.copy_(torch.as_tensor(
                np.concatenate([rows(p.W_Q), rows(p.W_K), rows(p.W_V)])))
            mha.in_proj_bias.copy_(torch.as_tensor(
                np.concatenate([p.b_Q.ravel(), p.b_K.ravel(), p.b_V.ravel()])))
            mha.out_proj.weight.copy_(torch.as_tensor(p.W_O.T))
            mha.out_proj.bias.copy_(torch.as_tensor(p.b_O))
        return mha


@dataclass(frozen=True)
class FeedForwardParams(_Params):
    """W_1: (d_model, d_ff)  b_1: (d_ff,)  W_2: (d_ff, d_model)  b_2: (d_model,)."""

    W_1: object
    b_1: object
    W_2: object
    b_2: object

    @property
    def d_model(self) -> int:
        return self.W_1.shape[0]

    @property
    def d_ff(self) -> int:
        return self.W_1.shape[1]

    @classmethod
    def random(cls, rng, *, d_model: int, d_ff: int | None = None):
        """Glorot-uniform weights (float64 NumPy); d_ff defaults to 4 d_model."""
        d_ff = 4 * d_model if d_ff is None else d_ff
        if d_model < 1 or d_ff < 1:
            raise ValueError(
                f"d_model and d_ff must be positive, got {d_model}, {d_ff}"
            )
        return cls(
            W_1=_uniform(rng, d_model, d_ff, (d_model, d_ff)),
            b_1=rng.normal(0, 0.1, size=d_ff),
            W_2=_uniform(rng, d_ff, d_model, (d_ff, d_model)),
            b_2=rng.normal(0, 0.1, size=d_model),
        )


@dataclass(frozen=True)
class EncoderLayerParams(_Params):
    """One encoder layer: attention, feed-forward, and two LayerNorms (γ, β)."""

    attn: MultiHeadParams
    ffn: FeedForwardParams
    norm1_gamma: object
    norm1_beta: object
    norm2_gamma: object
    norm2_beta: object
    eps: float = 1e-5

    @property
    def d_model(self) -> int:
        return self.attn.d_model

    @classmethod
    def random(cls, rng, *, d_model: int, n_heads: int, d_ff: int | None = None):
        """Random weights (float64 NumPy); LayerNorm γ near 1 and β near 0."""
        return cls(
            attn=MultiHeadParams.random(rng, d_model=d_model, n_heads=n_heads),
            ffn=FeedForwardParams.random(rng, d_model=d_model, d_ff=d_ff),
            norm1_gamma=1 + rng.normal(0, 0.1, size=d_model),
            norm1_beta=rng.normal(0, 0.1, size=d_model),
            norm2_gamma=1 + rng.normal(0, 0.1, size=d_model),
            norm2_beta=rng.normal(0, 0.1, size=d_model),
        )

    @classmethod
    def from_torch(cls, layer) -> "EncoderLayerParams":
        """Weights of a ``torch.nn.TransformerEncoderLayer`` (ReLU) as NumPy float64."""
        _check_layer_type(layer, "TransformerEncoderLayer")
        (g1, b1), (g2, b2) = _norms_from_torch(layer.norm1, layer.norm2)
        return cls(attn=MultiHeadParams.from_torch(layer.self_attn),
                   ffn=_ffn_from_torch(layer), norm1_gamma=g1, norm1_beta=b1,
                   norm2_gamma=g2, norm2_beta=b2, eps=layer.norm1.eps)

    def to_torch(self, *, norm_first: bool = False, dtype=None, device=None):
        """A ``torch.nn.TransformerEncoderLayer`` (batch_first, ReLU, no dropout)."""
        import torch

        dtype = dtype or torch.float64
        layer = torch.nn.TransformerEncoderLayer(
            self.d_model, self.attn.n_heads, dim_feedforward=self.ffn.d_ff, dropout=0.0,
            layer_norm_eps=self.eps, batch_first=True, norm_first=norm_first,
            device=device, dtype=dtype,
        )
        layer.self_attn = self.attn.to_torch(dtype=dtype, device=device)
        _put_ffn_and_norms(layer, self, 2)
        return layer.eval()


@dataclass(frozen=True)
class DecoderLayerParams(_Params):
    """One decoder layer: self-attention, cross-attention over the encoder's
    output, feed-forward, and three LayerNorms (γ, β)."""

    self_attn: MultiHeadParams
    cross_attn: MultiHeadParams
    ffn: FeedForwardParams
    norm1_gamma: object
    norm1_beta: object
    norm2_gamma: object
    norm2_beta: object
    norm3_gamma: object
    norm3_beta: object
    eps: float = 1e-5

    @property
    def d_model(self) -> int:
        return self.self_attn.d_model

    @classmethod
    def random(cls, rng, *, d_model: int, n_heads: int, d_ff: int | None = None):
        """Random weights (float64 NumPy); LayerNorm γ near 1 and β near 0."""
        return cls(
            self_attn=MultiHeadParams.random(rng, d_model=d_model, n_heads=n_heads),
            cross_attn=MultiHeadParams.random(rng, d_model=d_model, n_heads=n_heads),
            ffn=FeedForwardParams.random(rng, d_model=d_model, d_ff=d_ff),
            norm1_gamma=1 + rng.normal(0, 0.1, size=d_model),
            norm1_beta=rng.normal(0, 0.1, size=d_model),
            norm2_gamma=1 + rng.normal(0, 0.1, size=d_model),
            norm2_beta=rng.normal(0, 0.1, size=d_model),
            norm3_gamma=1 + rng.normal(0, 0.1, size=d_model),
            norm3_beta=rng.normal(0, 0.1, size=d_model),
        )

    @classmethod
    def from_torch(cls, layer) -> "DecoderLayerParams":
        """Weights of a ``torch.nn.TransformerDecoderLayer`` (ReLU) as NumPy float64."""
        _check_layer_type(layer, "TransformerDecoderLayer")
        (g1, b1), (g2, b2), (g3, b3) = _norms_from_torch(layer.norm1, layer.norm2,
                                                         layer.norm3)
        return cls(self_attn=MultiHeadParams.from_torch(layer.self_attn),
                   cross_attn=MultiHeadParams.from_torch(layer.multihead_attn),
                   ffn=_ffn_from_torch(layer), norm1_gamma=g1, norm1_beta=b1,
                   norm2_gamma=g2, norm2_beta=b2, norm3_gamma=g3, norm3_beta=b3,
                   eps=layer.norm1.eps)

    def to_torch(self, *, norm_first: bool = False, dtype=None, device=None):
        """A ``torch.nn.TransformerDecoderLayer`` (batch_first, ReLU, no dropout)."""
        import torch

        dtype = dtype or torch.float64
        layer = torch.nn.TransformerDecoderLayer(
            self.d_model,
            self.self_attn.n_heads,
            dim_feedforward=self.ffn.d_ff,
            dropout=0.0,
            layer_norm_eps=self.eps,
            batch_first=True,
            norm_first=norm_first,
            device=device,
            dtype=dtype,
        )
        layer.self_attn = self.self_attn.to_torch(dtype=dtype, device=device)
        layer.multihead_attn = self.cross_attn.to_torch(dtype=dtype, device=device)
        _put_ffn_and_norms(layer, self, 3)
        return layer.eval()


@dataclass(frozen=True)
class TransformerParams(_Params):
    """The whole model: a tied embedding, the encoder and decoder stacks, final norms.

    embedding: (vocab_size, d_model), shared by the source and target embeddings
    and the pre-softmax projection (the paper's §3.4); None when absent (a
    ``torch.nn.Transformer`` has none).
    encoder_layers, decoder_layers: tuples of EncoderLayerParams / DecoderLayerParams.
    encoder_norm_gamma, ... : the LayerNorms after each stack, (d_model,); the
    paper's post-LN model has none (None), ``torch.nn.Transformer`` has both.
    """

    embedding: object
    encoder_layers: tuple
    decoder_layers: tuple
    encoder_norm_gamma: object = None
    encoder_norm_beta: object = None
    decoder_norm_gamma: object = None
    decoder_norm_beta: object = None
    eps: float = 1e-5

    @property
    def d_model(self) -> int:
        layers = (*self.encoder_layers, *self.decoder_layers)
        return (
            self.embedding.shape[1] if self.embedding is not None else layers[0].d_model
        )

    @property
    def vocab_size(self) -> int:
        return self.embedding.shape[0]

    def save(self, path) -> None:
        """Write these params (NumPy arrays) to an ``.npz`` file, no pickle:
        ``TransformerParams.load(path)`` gives them back bit for bit."""
        from .checkpoint import save_params

        save_params(self, path)

    @classmethod
    def load(cls, path) -> "TransformerParams":
        """Params written by ``save``, as NumPy arrays; a truncated, corrupted or
        mismatched file raises ValueError saying what is wrong."""
        from .checkpoint import load_params

        return load_params(path, cls)

    @classmethod
    def random(cls, rng, *, vocab_size: int, d_model: int, n_heads: int,
               d_ff: int | None = None, n_layers: int = 6):
        """The paper's model (post-LN, no final norms, tied embedding), float64 NumPy.

        Embedding entries N(0, 1/d_model): times √d_model they have unit variance.
        """
        if vocab_size < 1 or n_layers < 0:
            raise ValueError(
                "vocab_size must be >= 1 and n_layers "
                f">= 0, got {vocab_size}, {n_layers}"
            )
        sizes = dict(d_model=d_model, n_heads=n_heads, d_ff=d_ff)
        return cls(
            embedding=rng.normal(0, d_model ** -0.5, size=(vocab_size, d_model)),
            encoder_layers=tuple(EncoderLayerParams.random(rng, **sizes)
                                 for _ in range(n_layers)),
            decoder_layers=tuple(DecoderLayerParams.random(rng, **sizes)
                                 for _ in range(n_layers)),
        )

    @classmethod
    def from_torch(cls, model, embedding=None) -> "TransformerParams":
        """Weights of a ``torch.nn.Transformer`` (its final norms too) as NumPy float64.

        ``torch.nn.Transformer`` has no embedding: pass one as ``embedding`` (a
        ``torch.nn.Embedding``, its weight, or an array (vocab_size, d_model)).
        """
        stacks = [name for name in ("encoder", "decoder")
                  if getattr(model, name).norm is not None]
        norms = [getattr(model, name).norm for name in stacks]
        final = {"eps": norms[0].eps} if norms else {}
        for name, (gamma, beta) in zip(stacks, _norms_from_torch(*norms)):
            final |= {f"{name}_norm_gamma": gamma, f"{name}_norm_beta": beta}
        if embedding is not None:
            # an nn.Embedding, or its weight
            weight = getattr(embedding, "weight", embedding)
            embedding = (_numpy(weight) if hasattr(weight, "detach")
                         else np.array(weight, dtype=np.float64))
            if embedding.ndim != 2 or embedding.shape[1] != model.d_model:
                raise ValueError(f"embedding must have shape (vocab_size, d_model="
                                 f"{model.d_model}), got {embedding.shape}")
        return cls(
            embedding=embedding,
            encoder_layers=tuple(
                map(EncoderLayerParams.from_torch, model.encoder.layers)
            ),
            decoder_layers=tuple(
                map(DecoderLayerParams.from_torch, model.decoder.layers)
            ),
            **final,
        )

    def to_torch(self, *, norm_first: bool = False, dtype=None, device=None):
        """A ``torch.nn.Transformer`` (batch_first, ReLU, no dropout) with these
        weights, and final norms only where these params have them.

        Its encoder never turns padded inputs into nested tensors (which would give
        zeros at padded positions). The embedding is not part of a
        ``torch.nn.Transformer``: ``torch.nn.Embedding.from_pretrained(torch.as_tensor(
        params.embedding))`` makes one.
        """
        import torch

        layer = (*self.encoder_layers, *self.decoder_layers)[0]
        n_heads = (layer.attn if hasattr(layer, "attn") else layer.self_attn).n_heads
        # the nested-tensor fast path, switched off below
        with (warnings.catch_warnings()):
            warnings.filterwarnings("ignore", "enable_nested_tensor is True")
            model = torch.nn.Transformer(
                self.d_model,
                n_heads,
                len(self.encoder_layers),
                len(self.decoder_layers),
                layer.ffn.d_ff,
                dropout=0.0,
                layer_norm_eps=self.eps,
                batch_first=True,
                norm_first=norm_first,
                device=device,
                dtype=dtype or torch.float64,
            )
        model.encoder.use_nested_tensor = False
        kw = dict(norm_first=norm_first, dtype=dtype, device=device)
        model.encoder.layers = torch.nn.ModuleList(
            p.to_torch(**kw) for p in self.encoder_layers
        )
        model.decoder.layers = torch.nn.ModuleList(
            p.to_torch(**kw) for p in self.decoder_layers
        )
        for stack, gamma, beta in (
                (model.encoder, self.encoder_norm_gamma, self.encoder_norm_beta),
                (model.decoder, self.decoder_norm_gamma, self.decoder_norm_beta)):
            if gamma is None:
                stack.norm = None
            else:
                _put(stack.norm.weight, gamma)
                _put(stack.norm.bias, beta)
        return model.eval()


def _check_relu(layer):
    import torch

    act = layer.activation
    if getattr(layer, "activation_relu_or_gelu", None) != 1 and not (
            act is torch.nn.functional.relu or isinstance(act, torch.nn.ReLU)):
        raise ValueError("only the ReLU activation of the paper is supported")


def _norms_from_torch(*norms):
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


def _check_layer_type(layer, expected: str) -> None:
    """Refuse the other kind of layer: a decoder layer read as an encoder layer would
    silently lose its cross-attention."""
    import torch

    if not isinstance(layer, getattr(torch.nn, expected)):
        raise ValueError(f"expected a torch.nn.{expected}, got {type(layer).__name__}")


def _ffn_from_torch(layer) -> FeedForwardParams:
    """The feed-forward weights of a torch encoder or decoder layer (ReLU only)."""
    _check_relu(layer)

    def bias(linear):  # bias=False layers have none: zeros
        b = linear.bias
        return _numpy(b) if b is not None else np.zeros(linear.out_features)

    return FeedForwardParams(
        W_1=_numpy(layer.linear1.weight).T.copy(), b_1=bias(layer.linear1),
        W_2=_numpy(layer.linear2.weight).T.copy(), b_2=bias(layer.linear2),
    )


def _put(param, a):
    import torch

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
        norm = getattr(layer, f"norm{i}")
        _put(norm.weight, getattr(p, f"norm{i}_gamma"))
        _put(norm.bias, getattr(p, f"norm{i}_beta"))

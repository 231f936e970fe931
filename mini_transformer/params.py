"""Weight containers in the paper's row-vector convention (``X @ W``).

Every container is a frozen dataclass of arrays. ``.map(f)`` returns a copy with
``f`` applied to every array, which is how weights move between libraries,
devices and dtypes::

    params.map(lambda a: torch.as_tensor(a, device="cuda", dtype=torch.float32))

Each array has a name, its path (``"encoder_layers.0.attn.W_Q"``, ``tree.py``): the
name it has in a checkpoint (``save`` / ``load``) and in a ``mini_transformer.torch``
module's ``state_dict``. ``mini_transformer.torch.convert`` (``from_torch``,
``to_torch``) moves weights exactly to and from ``torch.nn``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .checkpoint import load_params, save_params
from .tree import named_leaves, tree_map


class _Params:
    def map(self, f):
        """A copy with ``f`` applied to every array (nested containers too)."""
        return tree_map(f, self)

    def check_shapes(self, d_model: int | None = None, where: str = "") -> None:
        """Refuse arrays whose shapes do not fit together (d_model, heads, d_ff),
        naming the first that does not: ``<where><name> has shape ..., expected ...``.
        """
        d_model = self.d_model if d_model is None else d_model
        arrays = named_leaves(self)
        for name, shape in _expected_shapes(self, d_model).items():
            a = arrays.get(name)
            if a is not None and tuple(a.shape) != shape:
                raise ValueError(f"{where}{name} has shape {tuple(a.shape)}, "
                                 f"expected {shape} (d_model={d_model})")


def _uniform(rng, fan_in, fan_out, shape):
    bound = math.sqrt(6.0 / (fan_in + fan_out))  # Glorot/Xavier uniform
    return rng.uniform(-bound, bound, size=shape)


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
class LayerNormParams(_Params):
    """One LayerNorm's weights: gamma (γ, the scale) and beta (β, the shift),
    (d_model,) each (``layer_norm``)."""

    gamma: object
    beta: object

    @property
    def d_model(self) -> int:
        return self.gamma.shape[0]

    @classmethod
    def random(cls, rng, *, d_model: int):
        """γ near 1 and β near 0 (float64 NumPy), so that a test sees them act."""
        return cls(gamma=1 + rng.normal(0, 0.1, size=d_model),
                   beta=rng.normal(0, 0.1, size=d_model))


@dataclass(frozen=True)
class EncoderLayerParams(_Params):
    """One encoder layer: attention, feed-forward, and two LayerNorms; eps, the
    LayerNorms' ε."""

    attn: MultiHeadParams
    ffn: FeedForwardParams
    norm1: LayerNormParams
    norm2: LayerNormParams
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
            norm1=LayerNormParams.random(rng, d_model=d_model),
            norm2=LayerNormParams.random(rng, d_model=d_model),
        )


@dataclass(frozen=True)
class DecoderLayerParams(_Params):
    """One decoder layer: self-attention, cross-attention over the encoder's
    output, feed-forward, and three LayerNorms; eps, the LayerNorms' ε.

    A decoder-only layer (a language model's block, ``decoder_layer`` without
    memory) has no cross-attention and two LayerNorms: cross_attn and norm3 None.
    """

    self_attn: MultiHeadParams
    cross_attn: MultiHeadParams | None
    ffn: FeedForwardParams
    norm1: LayerNormParams
    norm2: LayerNormParams
    norm3: LayerNormParams | None = None
    eps: float = 1e-5

    @property
    def d_model(self) -> int:
        return self.self_attn.d_model

    @classmethod
    def random(cls, rng, *, d_model: int, n_heads: int, d_ff: int | None = None,
               cross_attention: bool = True):
        """Random weights (float64 NumPy); LayerNorm γ near 1 and β near 0.
        cross_attention=False: a decoder-only layer (cross_attn and norm3 None)."""
        sizes = dict(d_model=d_model, n_heads=n_heads)
        self_attn = MultiHeadParams.random(rng, **sizes)
        cross_attn = MultiHeadParams.random(rng, **sizes) if cross_attention else None
        ffn = FeedForwardParams.random(rng, d_model=d_model, d_ff=d_ff)
        norms = [LayerNormParams.random(rng, d_model=d_model)
                 for _ in range(3 if cross_attention else 2)]
        return cls(self_attn=self_attn, cross_attn=cross_attn, ffn=ffn, norm1=norms[0],
                   norm2=norms[1], norm3=norms[2] if cross_attention else None)


@dataclass(frozen=True)
class TransformerParams(_Params):
    """The whole model: a tied embedding, the encoder and decoder stacks, final norms.

    embedding: (vocab_size, d_model), shared by the source and target embeddings
    and the pre-softmax projection (the paper's §3.4); None when absent (a
    ``torch.nn.Transformer`` has none).
    encoder_layers, decoder_layers: tuples of EncoderLayerParams / DecoderLayerParams.
    encoder_norm, decoder_norm: the ``LayerNormParams`` after each stack; the
    paper's post-LN model has none (None), ``torch.nn.Transformer`` has both.
    norm_first: False for the paper's post-LN layers, True for pre-LN; the model
    functions (``transformer``, ``greedy_decode``, ...) run the layers this way
    unless told otherwise, and a checkpoint keeps it.
    """

    embedding: object
    encoder_layers: tuple[EncoderLayerParams, ...]
    decoder_layers: tuple[DecoderLayerParams, ...]
    encoder_norm: LayerNormParams | None = None
    decoder_norm: LayerNormParams | None = None
    eps: float = 1e-5
    norm_first: bool = False

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
        """Write these params (NumPy arrays) and their settings (eps, norm_first) to
        an ``.npz`` file, no pickle: ``TransformerParams.load(path)`` gives them back
        bit for bit."""
        save_params(self, path)

    @classmethod
    def load(cls, path) -> "TransformerParams":
        """Params written by ``save``, as NumPy arrays, with their eps and norm_first;
        a truncated, corrupted or mismatched file raises ValueError saying what is
        wrong."""
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


def _expected_shapes(p, d_model) -> dict:
    """{name: shape} of the arrays of the container p at this d_model, the heads,
    d_k, d_v and d_ff read from p's own W_Q, W_V and W_1."""
    if isinstance(p, MultiHeadParams):
        h, d_k, d_v = p.n_heads, p.d_k, p.d_v
        return dict(W_Q=(h, d_model, d_k), W_K=(h, d_model, d_k), W_V=(h, d_model, d_v),
                    W_O=(h * d_v, d_model), b_Q=(h, d_k), b_K=(h, d_k), b_V=(h, d_v),
                    b_O=(d_model,))
    if isinstance(p, FeedForwardParams):
        return dict(W_1=(d_model, p.d_ff), b_1=(p.d_ff,), W_2=(p.d_ff, d_model),
                    b_2=(d_model,))
    if isinstance(p, LayerNormParams):
        return dict(gamma=(d_model,), beta=(d_model,))
    shapes = {}
    if getattr(p, "embedding", None) is not None:
        shapes["embedding"] = (p.embedding.shape[0], d_model)
    for name, value in vars(p).items():
        parts = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        for i, part in enumerate(parts):
            if isinstance(part, _Params):
                prefix = f"{name}.{i}" if isinstance(value, (tuple, list)) else name
                shapes |= {f"{prefix}.{k}": v
                           for k, v in _expected_shapes(part, d_model).items()}
    return shapes

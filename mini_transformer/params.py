"""Weight containers in the paper's row-vector convention (``X @ W``).

Every container is a frozen dataclass of arrays. ``.map(f)`` returns a copy with
``f`` applied to every array, which is how weights move between libraries,
devices and dtypes::

    params.map(lambda a: torch.as_tensor(a, device="cuda", dtype=torch.float32))

``from_torch`` / ``to_torch`` move weights exactly to and from ``torch.nn``
(``torch.nn.MultiheadAttention`` and ``torch.nn.TransformerEncoderLayer``);
``from_torch`` returns NumPy float64 arrays. Only these methods import torch.
"""

from __future__ import annotations

import dataclasses
import math
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
    The paper has no biases; ``torch.nn.MultiheadAttention`` has them by default.
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
            raise ValueError("only MultiheadAttention with kdim == vdim == embed_dim is supported")
        if mha.bias_k is not None or mha.add_zero_attn:
            raise ValueError("add_bias_kv and add_zero_attn are not supported")
        h, E = mha.num_heads, mha.embed_dim
        d_k = E // h
        W = _numpy(mha.in_proj_weight)  # (3E, E), torch computes x @ W.T
        bias = _numpy(mha.in_proj_bias) if mha.in_proj_bias is not None else np.zeros(3 * E)
        b_out = _numpy(mha.out_proj.bias) if mha.out_proj.bias is not None else np.zeros(E)

        def heads(Wp):  # (E_out, E_in) -> (h, E_in, d_k)
            return Wp.reshape(h, d_k, E).transpose(0, 2, 1).copy()

        return cls(
            W_Q=heads(W[:E]), W_K=heads(W[E:2 * E]), W_V=heads(W[2 * E:]),
            W_O=_numpy(mha.out_proj.weight).T.copy(),
            b_Q=bias[:E].reshape(h, d_k), b_K=bias[E:2 * E].reshape(h, d_k),
            b_V=bias[2 * E:].reshape(h, d_k), b_O=b_out,
        )

    def to_torch(self, *, dtype=None, device=None):
        """A ``torch.nn.MultiheadAttention`` (batch_first, no dropout) with these weights."""
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
            raise ValueError(f"d_model and d_ff must be positive, got {d_model}, {d_ff}")
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
        import torch

        act = getattr(layer, "activation_relu_or_gelu", None)
        if act != 1 and layer.activation not in (torch.nn.functional.relu,):
            raise ValueError("only the ReLU activation of the paper is supported")
        if layer.norm1.eps != layer.norm2.eps:
            raise ValueError("the two LayerNorms must share eps")
        norms = []
        for norm in (layer.norm1, layer.norm2):
            d = norm.normalized_shape[0]
            norms.append(_numpy(norm.weight) if norm.weight is not None else np.ones(d))
            norms.append(_numpy(norm.bias) if norm.bias is not None else np.zeros(d))
        def bias(linear):  # bias=False layers have none: zeros
            b = linear.bias
            return _numpy(b) if b is not None else np.zeros(linear.out_features)

        return cls(
            attn=MultiHeadParams.from_torch(layer.self_attn),
            ffn=FeedForwardParams(
                W_1=_numpy(layer.linear1.weight).T.copy(), b_1=bias(layer.linear1),
                W_2=_numpy(layer.linear2.weight).T.copy(), b_2=bias(layer.linear2),
            ),
            norm1_gamma=norms[0], norm1_beta=norms[1],
            norm2_gamma=norms[2], norm2_beta=norms[3],
            eps=layer.norm1.eps,
        )

    def to_torch(self, *, norm_first: bool = False, dtype=None, device=None):
        """A ``torch.nn.TransformerEncoderLayer`` (batch_first, ReLU, no dropout)."""
        import torch

        dtype = dtype or torch.float64
        p = self.map(lambda a: np.asarray(a, dtype=np.float64))
        layer = torch.nn.TransformerEncoderLayer(
            p.d_model, p.attn.n_heads, dim_feedforward=p.ffn.d_ff, dropout=0.0,
            layer_norm_eps=p.eps, batch_first=True, norm_first=norm_first,
            device=device, dtype=dtype,
        )
        layer.self_attn = p.attn.to_torch(dtype=dtype, device=device)

        def put(param, a):
            param.copy_(torch.as_tensor(a))

        with torch.no_grad():
            put(layer.linear1.weight, p.ffn.W_1.T)
            put(layer.linear1.bias, p.ffn.b_1)
            put(layer.linear2.weight, p.ffn.W_2.T)
            put(layer.linear2.bias, p.ffn.b_2)
            put(layer.norm1.weight, p.norm1_gamma)
            put(layer.norm1.bias, p.norm1_beta)
            put(layer.norm2.weight, p.norm2_gamma)
            put(layer.norm2.bias, p.norm2_beta)
        return layer.eval()

"""The decoder layer and the decoder stack (the paper's §3.1, figure 1, right)."""

from __future__ import annotations

from dataclasses import dataclass

from array_api_compat import array_namespace

from . import _checks
from .feedforward import feed_forward
from .layernorm import layer_norm
from .multihead import key_values, multi_head_attention


@dataclass
class KVCache:
    """The keys and values one decoder layer has computed, kept between the
    steps of decoding so that each step computes only the newest position.

    self_kv: (K, V) of the self-attention, one row per position so far,
    (..., h, t, d_k) and (..., h, t, d_v); cross_kv: (K, V) of the memory,
    computed on the first step.
    """

    self_kv: tuple | None = None
    cross_kv: tuple | None = None

    @property
    def length(self) -> int:
        return 0 if self.self_kv is None else self.self_kv[0].shape[-2]

    def extend(self, y, params):
        """The cached (K, V) with the rows of the new positions ``y`` appended."""
        k, v = key_values(y, params)                   # (..., h, n, d_k), (..., h, n, d_v)
        if self.self_kv is not None:
            xp = array_namespace(k)
            k = xp.concat([self.self_kv[0], k], axis=-2)  # (..., h, t + n, d_k)
            v = xp.concat([self.self_kv[1], v], axis=-2)  # (..., h, t + n, d_v)
        self.self_kv = (k, v)
        return self.self_kv

    def memory(self, memory, params):
        """(K, V) of the memory, computed once."""
        if self.cross_kv is None:
            self.cross_kv = key_values(memory, params)
        return self.cross_kv


def decoder_layer(y, memory, params, self_mask=None, memory_mask=None, norm_first=False,
                  attention=None, cache=None):
    """One decoder layer.

    Post-LN, as in the paper (norm_first=False):
        Y1 = LayerNorm(Y + SelfAttn(Y))
        Y2 = LayerNorm(Y1 + CrossAttn(Y1, memory))
        Y3 = LayerNorm(Y2 + FFN(Y2))
    Pre-LN (norm_first=True): Y1 = Y + SelfAttn(LayerNorm(Y)), and so on; the
    memory enters the cross-attention as it is.
    y: (..., n_tgt, d_model)   memory: (..., n_src, d_model), the encoder's output
    self_mask: broadcast to (batch, n_tgt, n_tgt), e.g. ``causal_mask(n_tgt)``
    memory_mask: broadcast to (batch, n_tgt, n_src), e.g. ``padding_mask(lengths, n_src)``
    cache: a ``KVCache``: y holds only the newest position(s), whose queries meet
    the cached keys and values of the earlier positions and their own; a
    self_mask then broadcasts to (batch, n_tgt, t + n_tgt).
    """
    p = params
    _check_inputs(y, memory, p, self_mask, memory_mask, 0 if cache is None else cache.length)

    def norm(i, h):
        return layer_norm(h, getattr(p, f"norm{i}_gamma"), getattr(p, f"norm{i}_beta"), p.eps)

    def self_attn(h):
        kv = None if cache is None else cache.extend(h, p.self_attn)
        return multi_head_attention(h, p.self_attn, self_mask, attention=attention, kv=kv)[0]

    def cross_attn(h):
        kv = None if cache is None else cache.memory(memory, p.cross_attn)
        return multi_head_attention(h, p.cross_attn, memory_mask, memory,
                                    attention=attention, kv=kv)[0]

    if norm_first:
        y = y + self_attn(norm(1, y))
        y = y + cross_attn(norm(2, y))
        return y + feed_forward(norm(3, y), p.ffn)
    y = norm(1, y + self_attn(y))
    y = norm(2, y + cross_attn(y))
    return norm(3, y + feed_forward(y, p.ffn))


def decoder(y, memory, layers, self_mask=None, memory_mask=None, norm_first=False,
            attention=None, caches=None):
    """A stack of decoder layers (the paper uses 6), each attending to the same memory.

    caches: one ``KVCache`` per layer, for step-by-step decoding.
    """
    for i, params in enumerate(layers):
        y = decoder_layer(y, memory, params, self_mask, memory_mask, norm_first, attention,
                          None if caches is None else caches[i])
    return y


def _check_inputs(y, memory, p, self_mask, memory_mask, n_cached):
    """Refuse, in the decoder's terms, inputs or masks of the wrong shape."""
    _checks.namespace(y, memory, names=("y", "memory"))
    _checks.features(y, p.d_model, "y")
    _checks.features(memory, p.d_model, "memory")
    batch = _checks.batch_axes(y, memory, "y", "memory")
    n_tgt, n_src = y.shape[-2], memory.shape[-2]
    _checks.mask_broadcasts(self_mask, (*batch, n_tgt, n_cached + n_tgt), "self_mask",
                            "(batch, n_tgt, n_tgt)")
    _checks.mask_broadcasts(memory_mask, (*batch, n_tgt, n_src), "memory_mask",
                            "(batch, n_tgt, n_src)")

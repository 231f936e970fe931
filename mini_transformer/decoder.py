"""The decoder layer and the decoder stack (the paper's §3.1, figure 1, right)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from array_api_compat import array_namespace

from . import _checks
from .dropout import dropout as drop
from .feedforward import feed_forward, feed_forward_backward
from .layernorm import layer_norm, layer_norm_backward
from .multihead import key_values, multi_head_attention, multi_head_attention_backward


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
        k, v = key_values(y, params)  # (..., h, n, d_k), (..., h, n, d_v)
        if self.self_kv is not None:
            xp = array_namespace(k)
            k = xp.concat([self.self_kv[0], k], axis=-2)  # (..., h, t + n, d_k)
            v = xp.concat([self.self_kv[1], v], axis=-2)  # (..., h, t + n, d_v)
        self.self_kv = (k, v)
        return self.self_kv

    def reorder(self, rows):
        """Keep the batch rows ``rows`` (int ids, axis 0), in that order: a beam's
        hypotheses moving between rows take their keys and values with them."""
        xp = array_namespace(self.self_kv[0])
        self.self_kv = tuple(xp.take(a, rows, axis=0) for a in self.self_kv)
        if self.cross_kv is not None:
            self.cross_kv = tuple(xp.take(a, rows, axis=0) for a in self.cross_kv)

    def memory(self, memory, params):
        """(K, V) of the memory, computed once."""
        if self.cross_kv is None:
            self.cross_kv = key_values(memory, params)
        return self.cross_kv


def decoder_layer(y, memory, params, self_mask=None, memory_mask=None, norm_first=False,
                  attention=None, cache=None, dropout=None):
    """One decoder layer.

    Post-LN, as in the paper (norm_first=False):
        Y1 = LayerNorm(Y + SelfAttn(Y))
        Y2 = LayerNorm(Y1 + CrossAttn(Y1, memory))
        Y3 = LayerNorm(Y2 + FFN(Y2))
    Pre-LN (norm_first=True): Y1 = Y + SelfAttn(LayerNorm(Y)), and so on; the
    memory enters the cross-attention as it is.
    y: (..., n_tgt, d_model)   memory: (..., n_src, d_model), the encoder's output
    self_mask: broadcast to (batch, n_tgt, n_tgt), e.g. ``causal_mask(n_tgt)``
    memory_mask: broadcast to (batch, n_tgt, n_src), e.g. padding_mask(lengths, n_src)
    cache: a ``KVCache``: y holds only the newest position(s), whose queries meet
    the cached keys and values of the earlier positions and their own; a
    self_mask then broadcasts to (batch, n_tgt, t + n_tgt).
    dropout: None, or three masks (..., n_tgt, d_model), one per sub-layer, applied
    to its output before the residual add (§5.4).
    """
    p = params
    m_self, m_cross, m_ffn = (None,) * 3 if dropout is None else dropout
    _check_inputs(
        y, memory, p, self_mask, memory_mask, 0 if cache is None else cache.length
    )

    def norm(i, h):
        return layer_norm(
            h, getattr(p, f"norm{i}_gamma"), getattr(p, f"norm{i}_beta"), p.eps
        )

    def self_attn(h):
        kv = None if cache is None else cache.extend(h, p.self_attn)
        return multi_head_attention(
            h, p.self_attn, self_mask, attention=attention, kv=kv
        )[0]

    def cross_attn(h):
        kv = None if cache is None else cache.memory(memory, p.cross_attn)
        return multi_head_attention(h, p.cross_attn, memory_mask, memory,
                                    attention=attention, kv=kv)[0]

    if norm_first:
        y = y + drop(self_attn(norm(1, y)), m_self)
        y = y + drop(cross_attn(norm(2, y)), m_cross)
        return y + drop(feed_forward(norm(3, y), p.ffn), m_ffn)
    y = norm(1, y + drop(self_attn(y), m_self))
    y = norm(2, y + drop(cross_attn(y), m_cross))
    return norm(3, y + drop(feed_forward(y, p.ffn), m_ffn))


def decoder(y, memory, layers, self_mask=None, memory_mask=None, norm_first=False,
            attention=None, caches=None, dropout=None):
    """A stack of decoder layers (the paper uses 6), each attending to the same memory.

    caches: one ``KVCache`` per layer, for step-by-step decoding.
    dropout: None, or one triple of masks per layer (``decoder_layer``).
    """
    for i, params in enumerate(layers):
        y = decoder_layer(
            y,
            memory,
            params,
            self_mask,
            memory_mask,
            norm_first,
            attention,
            None if caches is None else caches[i],
            dropout=None if dropout is None else dropout[i],
        )
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


def decoder_layer_saved(y, memory, params, self_mask=None, memory_mask=None,
                        norm_first=False, dropout=None):
    """``decoder_layer``'s output and the values its backward reads: (out, saved),
    as ``encoder_layer_saved``: the sums and LayerNorm outputs between the three
    sub-layers (post-LN: a, Y1, b, Y2, c; pre-LN: n1, Y1, n2, Y2, n3) and what each
    sub-layer kept (``saved["self"]``, ``saved["cross"]``, ``saved["ffn"]``).
    """
    p = params
    m_self, m_cross, m_ffn = (None,) * 3 if dropout is None else dropout
    _check_inputs(y, memory, p, self_mask, memory_mask, 0)
    s = {"self": {}, "cross": {}, "ffn": {}}

    def norm(i, h):
        return layer_norm(
            h, getattr(p, f"norm{i}_gamma"), getattr(p, f"norm{i}_beta"), p.eps
        )

    def self_attn(h):
        return multi_head_attention(h, p.self_attn, self_mask, saved=s["self"])[0]

    def cross_attn(h):
        return multi_head_attention(h, p.cross_attn, memory_mask, memory,
                                    saved=s["cross"])[0]

    if norm_first:
        s["n1"] = norm(1, y)
        s["y1"] = y + drop(self_attn(s["n1"]), m_self)
        s["n2"] = norm(2, s["y1"])
        s["y2"] = s["y1"] + drop(cross_attn(s["n2"]), m_cross)
        s["n3"] = norm(3, s["y2"])
        return s["y2"] + drop(feed_forward(s["n3"], p.ffn, s["ffn"]), m_ffn), s
    s["a"] = y + drop(self_attn(y), m_self)
    s["y1"] = norm(1, s["a"])
    s["b"] = s["y1"] + drop(cross_attn(s["y1"]), m_cross)
    s["y2"] = norm(2, s["b"])
    s["c"] = s["y2"] + drop(feed_forward(s["y2"], p.ffn, s["ffn"]), m_ffn)
    return norm(3, s["c"]), s


def decoder_layer_backward(
    y,
    memory,
    params,
    grad_output,
    self_mask=None,
    memory_mask=None,
    norm_first=False,
    dropout=None,
    saved=None,
):
    """The gradients of ``decoder_layer``, its three sub-layers in reverse order.
    Post-LN (the paper's):

        forward                                 backward
        Y1 = LN₁(R₁), R₁ = Y + SelfAttn(Y)        g_R₁ = LN₁ᵀ(g_Y1),
                                                  g_Y = g_R₁ + SelfAttnᵀ(g_R₁)
        Y2 = LN₂(R₂), R₂ = Y1 + CrossAttn(Y1, mem)  g_R₂ = LN₂ᵀ(g_Y2),
                                                  g_Y1 = g_R₂ + CrossAttnᵀ(g_R₂)
        Y3 = LN₃(R₃), R₃ = Y2 + FFN(Y2)           g_R₃ = LN₃ᵀ(g),
                                                  g_Y2 = g_R₃ + FFNᵀ(g_R₃)

    The memory mem receives gradient only through the cross-attention's keys and
    values. With dropout masks M₁, M₂, M₃ (the forward's), R₁ = Y + M₁ ⊙ SelfAttn(Y)
    and so on: each sub-layer's gradient is multiplied by its mask,
    g_Y = g_R₁ + SelfAttnᵀ(M₁ ⊙ g_R₁).
    saved: the forward's values (``decoder_layer_saved``); by default recomputed.
    Returns (grad_y, grad_memory, grad_params), grad_params a ``DecoderLayerParams``.
    """
    p = params
    m_self, m_cross, m_ffn = (None,) * 3 if dropout is None else dropout
    _check_inputs(y, memory, p, self_mask, memory_mask, 0)
    if saved is None:
        _, saved = decoder_layer_saved(y, memory, p, self_mask, memory_mask,
                                       norm_first, dropout)
    s = saved

    def norm_backward(i, h, g):
        return layer_norm_backward(h, getattr(p, f"norm{i}_gamma"), g, p.eps)

    g = grad_output
    # pre-LN: Y1 = Y + SelfAttn(LN₁(Y)), Y2 = Y1 + CrossAttn(LN₂(Y1), mem),
    #         Y3 = Y2 + FFN(LN₃(Y2))
    if norm_first:
        g_n3, g_ffn = feed_forward_backward(s["n3"], p.ffn, drop(g, m_ffn), s["ffn"])
        g_ln3, g_gamma3, g_beta3 = norm_backward(3, s["y2"], g_n3)
        g_y2 = g + g_ln3
        g_n2, g_memory, g_cross = multi_head_attention_backward(
            s["n2"], p.cross_attn, drop(g_y2, m_cross), memory_mask, memory,
            saved=s["cross"])
        g_ln2, g_gamma2, g_beta2 = norm_backward(2, s["y1"], g_n2)
        g_y1 = g_y2 + g_ln2
        g_n1, _, g_self = multi_head_attention_backward(
            s["n1"], p.self_attn, drop(g_y1, m_self), self_mask, saved=s["self"])
        g_ln1, g_gamma1, g_beta1 = norm_backward(1, y, g_n1)
        g_y = g_y1 + g_ln1
    else:
        g_c, g_gamma3, g_beta3 = norm_backward(3, s["c"], g)
        g_ffn_y2, g_ffn = feed_forward_backward(s["y2"], p.ffn, drop(g_c, m_ffn),
                                                s["ffn"])
        g_b, g_gamma2, g_beta2 = norm_backward(2, s["b"], g_c + g_ffn_y2)
        g_cross_y1, g_memory, g_cross = multi_head_attention_backward(
            s["y1"], p.cross_attn, drop(g_b, m_cross), memory_mask, memory,
            saved=s["cross"])
        g_a, g_gamma1, g_beta1 = norm_backward(1, s["a"], g_b + g_cross_y1)
        g_self_y, _, g_self = multi_head_attention_backward(
            y, p.self_attn, drop(g_a, m_self), self_mask, saved=s["self"])
        g_y = g_a + g_self_y
    grads = dataclasses.replace(
        p,
        self_attn=g_self,
        cross_attn=g_cross,
        ffn=g_ffn,
        norm1_gamma=g_gamma1,
        norm1_beta=g_beta1,
        norm2_gamma=g_gamma2,
        norm2_beta=g_beta2,
        norm3_gamma=g_gamma3,
        norm3_beta=g_beta3,
    )
    return g_y, g_memory, grads

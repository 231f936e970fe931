"""The decoder layer and the decoder stack (the paper's §3.1, figure 1, right)."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from array_api_compat import array_namespace

from . import _checks
from .feedforward import check_feed_forward, feed_forward, feed_forward_backward
from .multihead import (check_multi_head, key_values, multi_head_attention,
                        multi_head_attention_backward)
from .residual import residual, residual_backward


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

    def reorder(self, rows, *, memory=True):
        """Keep the batch rows ``rows`` (int ids, axis 0), in that order: a beam's
        hypotheses moving between rows take their keys and values with them.
        memory=False leaves the memory's (K, V) as they are: right when every row
        moves among rows of the same memory (a beam's rows of one source)."""
        xp = array_namespace(self.self_kv[0])
        self.self_kv = tuple(xp.take(a, rows, axis=0) for a in self.self_kv)
        if memory and self.cross_kv is not None:
            self.cross_kv = tuple(xp.take(a, rows, axis=0) for a in self.cross_kv)

    def memory_kv(self, memory, params):
        """(K, V) of the memory, computed once."""
        if self.cross_kv is None:
            self.cross_kv = key_values(memory, params)
        return self.cross_kv


def check_decoder_layer(y, memory, params, self_mask=None, memory_mask=None,
                        masks=None, cache=None, grad_output=None, **_):
    """Refuse, in the decoder's terms, inputs or masks of the wrong shape (dropout
    masks included), and what the layer's attentions or feed-forward network would
    refuse."""
    p, n_cached = params, 0 if cache is None else cache.length
    if memory is None:
        if p.cross_attn is not None:
            raise ValueError("memory is None but this decoder layer has a "
                             "cross-attention: pass the encoder's output as memory")
        _checks.namespace(y, names=("y",))
        _checks.features(y, p.d_model, "y")
        batch, n_src = tuple(y.shape[:-2]), None
    else:
        _checks.namespace(y, memory, names=("y", "memory"))
        _checks.features(y, p.d_model, "y")
        _checks.features(memory, p.d_model, "memory")
        batch = _checks.batch_axes(y, memory, "y", "memory")
        n_src = memory.shape[-2]
    n_tgt = y.shape[-2]
    _checks.dropout_masks(y, masks, 2 if memory is None else 3, "y")
    _checks.mask_broadcasts(self_mask, (*batch, n_tgt, n_cached + n_tgt), "self_mask",
                            "(batch, n_tgt, n_tgt)")
    if n_src is not None:
        _checks.mask_broadcasts(memory_mask, (*batch, n_tgt, n_src), "memory_mask",
                                "(batch, n_tgt, n_src)")
        check_multi_head(y, p.cross_attn, memory=memory)
    check_multi_head(y, p.self_attn)
    check_feed_forward(y, p.ffn)
    for norm in (p.norm1, p.norm2, p.norm3):
        if norm is not None:
            _checks.normalisation(y, {"gamma": norm.gamma, "beta": norm.beta})
    if grad_output is not None:
        _checks.namespace(y, grad_output, names=("y", "grad_output"))
        _checks.same(tuple(grad_output.shape), tuple(y.shape), "grad_output must have "
                     f"y's shape {tuple(y.shape)}, got {tuple(grad_output.shape)}")


def check_decoder(y, memory, layers, self_mask=None, memory_mask=None, masks=None,
                  caches=None, **_):
    if masks is not None and len(masks) != len(layers):
        raise ValueError(f"masks must hold one set of dropout masks per layer "
                         f"({len(layers)}), got {len(masks)}")
    for i, params in enumerate(layers):
        check_decoder_layer(y, memory, params, self_mask, memory_mask,
                            None if masks is None else masks[i],
                            None if caches is None else caches[i])


@_checks.at_door(check_decoder_layer)
def decoder_layer(y, memory, params, self_mask=None, memory_mask=None, masks=None, *,
                  norm_first=False, attention=None, cache=None, saved=None):
    """One decoder layer: a masked self-attention sub-layer, a cross-attention
    sub-layer and a feed-forward sub-layer, each inside a residual connection with
    its LayerNorm (``residual``).

    Post-LN, as in the paper (norm_first=False):
        Y1 = LayerNorm(Y + SelfAttn(Y))
        Y2 = LayerNorm(Y1 + CrossAttn(Y1, memory))
        Y3 = LayerNorm(Y2 + FFN(Y2))
    Pre-LN (norm_first=True): Y1 = Y + SelfAttn(LayerNorm(Y)), and so on; the
    memory enters the cross-attention as it is.
    y: (..., n_tgt, d_model)   memory: (..., n_src, d_model), the encoder's output,
    or None for a decoder-only layer (a language model's block): masked
    self-attention and the feed-forward network, with LayerNorms 1 and 2, and no
    cross-attention (the params' ``cross_attn`` and third LayerNorm are None).
    self_mask: broadcast to (batch, n_tgt, n_tgt), e.g. ``causal_mask(n_tgt)``
    memory_mask: broadcast to (batch, n_tgt, n_src), e.g. padding_mask(lengths, n_src)
    masks: None, or one dropout mask (..., n_tgt, d_model) per sub-layer (three;
    two without memory), applied to its output before the residual add (§5.4).
    cache: a ``KVCache``: y holds only the newest position(s), whose queries meet
    the cached keys and values of the earlier positions and their own; a
    self_mask then broadcasts to (batch, n_tgt, t + n_tgt).
    saved: a dict the forward fills for ``decoder_layer_backward``, one dict per
    sub-layer (``saved["self"]``, ``saved["cross"]``, ``saved["ffn"]``) holding what
    the sub-layer and its residual kept; None keeps nothing.
    """
    p = params
    m_self, m_cross, m_ffn = _sublayer_masks(masks, memory)
    s = {} if saved is None else saved
    s["self"], s["cross"], s["ffn"] = {}, {}, {}
    # residual with this layer's eps and placement fixed: res(x, F, norm, mask)
    res = functools.partial(residual, eps=p.eps, norm_first=norm_first)

    def self_attn(h):
        kv = None if cache is None else cache.extend(h, p.self_attn)
        return multi_head_attention(h, p.self_attn, self_mask, attention=attention,
                                    kv=kv, saved=s["self"])[0]

    def cross_attn(h):
        kv = None if cache is None else cache.memory_kv(memory, p.cross_attn)
        return multi_head_attention(h, p.cross_attn, memory_mask, memory,
                                    attention=attention, kv=kv, saved=s["cross"])[0]

    def ffn(h):
        return feed_forward(h, p.ffn, s["ffn"])

    y = res(y, self_attn, p.norm1, m_self, saved=s["self"])         # Y1
    if memory is None:      # a decoder-only block: no cross-attention
        return res(y, ffn, p.norm2, m_ffn, saved=s["ffn"])
    y = res(y, cross_attn, p.norm2, m_cross, saved=s["cross"])      # Y2
    return res(y, ffn, p.norm3, m_ffn, saved=s["ffn"])              # Y3


@_checks.at_door(check_decoder)
def decoder(y, memory, layers, self_mask=None, memory_mask=None, masks=None, *,
            norm_first=False, attention=None, caches=None, saved=None):
    """A stack of decoder layers (the paper uses 6), each attending to the same memory
    (None: a decoder-only stack, ``decoder_layer``).

    masks: None, or one triple of dropout masks per layer (``decoder_layer``).
    caches: one ``KVCache`` per layer, for step-by-step decoding.
    saved: a dict the forward fills for ``decoder_backward``: ``inputs``, each
    layer's input, and ``layers``, each layer's own ``saved``.
    """
    inputs, layer_saved = [], []
    for i, params in enumerate(layers):
        s = None if saved is None else {}
        inputs.append(y)
        layer_saved.append(s)
        y = decoder_layer(y, memory, params, self_mask, memory_mask,
                          None if masks is None else masks[i], norm_first=norm_first,
                          attention=attention,
                          cache=None if caches is None else caches[i], saved=s)
    if saved is not None:
        saved.update(inputs=inputs, layers=layer_saved)
    return y


def _sublayer_masks(masks, memory):
    """(self, cross, ffn) dropout masks; a decoder-only layer takes (self, ffn)."""
    if masks is None:
        return None, None, None
    if memory is None:
        return masks[0], None, masks[1]
    return tuple(masks)


@_checks.at_door(check_decoder_layer)
def decoder_layer_backward(y, memory, params, grad_output, self_mask=None,
                           memory_mask=None, masks=None, *, norm_first=False,
                           saved=None):
    """The gradients of ``decoder_layer``, its sub-layers in reverse order.
    Post-LN (the paper's):

        forward                                   backward
        Y1 = LN₁(R₁), R₁ = Y + SelfAttn(Y)          g_R₁ = J_LN₁ᵀ g_Y1,
                                                    g_Y = g_R₁ + J_SelfAttnᵀ g_R₁
        Y2 = LN₂(R₂), R₂ = Y1 + CrossAttn(Y1, mem)  g_R₂ = J_LN₂ᵀ g_Y2,
                                                    g_Y1 = g_R₂ + J_CrossAttnᵀ g_R₂
        Y3 = LN₃(R₃), R₃ = Y2 + FFN(Y2)             g_R₃ = J_LN₃ᵀ g,
                                                    g_Y2 = g_R₃ + J_FFNᵀ g_R₃

    with J_Fᵀ g the vector–Jacobian product of F at the forward's input (chapter 14).
    Pre-LN, Yi = Y(i−1) + Sub(LNᵢ(Y(i−1))): g_Y(i−1) = g_Yi + J_LNᵢᵀ J_Subᵀ g_Yi.
    The memory mem receives gradient only through the cross-attention's keys and
    values (None without memory). With dropout, R₁ = Y + Dropout(SelfAttn(Y)) and so
    on: each sub-layer's gradient is multiplied by the forward's mask,
    g_Y = g_R₁ + J_SelfAttnᵀ Dropout(g_R₁).
    saved: what the forward filled (``decoder_layer(..., saved=saved)``); by
    default the forward is run again to fill it.
    Returns (grad_y, grad_memory, grad_params), grad_params a ``DecoderLayerParams``.
    """
    p = params
    m_self, m_cross, m_ffn = _sublayer_masks(masks, memory)
    if not saved:
        saved = {}
        decoder_layer(y, memory, p, self_mask, memory_mask, masks,
                      norm_first=norm_first, saved=saved)
    s = saved
    # residual_backward with this layer's eps and placement fixed
    res_backward = functools.partial(residual_backward, eps=p.eps,
                                     norm_first=norm_first)

    # Each sub-layer's backward at its input h: (g_h, its gradients).
    def self_attn(h, g):
        g_h, _, g_p = multi_head_attention_backward(h, p.self_attn, g, self_mask,
                                                    saved=s["self"])
        return g_h, g_p

    def cross_attn(h, g):           # its gradients: (g_memory, g_params)
        g_h, g_memory, g_p = multi_head_attention_backward(
            h, p.cross_attn, g, memory_mask, memory, saved=s["cross"])
        return g_h, (g_memory, g_p)

    def ffn(h, g):
        return feed_forward_backward(h, p.ffn, g, s["ffn"])

    grads, g_memory = {}, None          # grads: {field of p: its gradient}
    if memory is None:
        g, grads["norm2"], grads["ffn"] = res_backward(
            ffn, p.norm2, grad_output, m_ffn, saved=s["ffn"])
    else:
        g, grads["norm3"], grads["ffn"] = res_backward(
            ffn, p.norm3, grad_output, m_ffn, saved=s["ffn"])
        g, grads["norm2"], (g_memory, grads["cross_attn"]) = res_backward(
            cross_attn, p.norm2, g, m_cross, saved=s["cross"])
    g, grads["norm1"], grads["self_attn"] = res_backward(
        self_attn, p.norm1, g, m_self, saved=s["self"])
    return g, g_memory, dataclasses.replace(p, **grads)


def _check_backward(memory, layers, grad_output, saved, **_):
    if saved["inputs"]:
        check_decoder_layer(saved["inputs"][-1], memory, layers[-1],
                            grad_output=grad_output)


@_checks.at_door(_check_backward)
def decoder_backward(memory, layers, grad_output, self_mask=None, memory_mask=None,
                     masks=None, *, norm_first=False, saved):
    """The gradients of ``decoder``, from what its forward filled in ``saved``: the
    layers in reverse. The memory feeds every layer, so its gradient is the sum of
    theirs (None without memory).
    Returns (grad_y, grad_memory, (grad_params of each layer, first to last))."""
    grads, g_memory = [None] * len(layers), None
    for i in reversed(range(len(layers))):
        grad_output, g_m, grads[i] = decoder_layer_backward(
            saved["inputs"][i], memory, layers[i], grad_output, self_mask, memory_mask,
            None if masks is None else masks[i], norm_first=norm_first,
            saved=saved["layers"][i])
        if g_m is not None:
            g_memory = g_m if g_memory is None else g_memory + g_m
    return grad_output, g_memory, tuple(grads)

"""The decoder layer and the decoder stack (the paper's §3.1, figure 1, right)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from array_api_compat import array_namespace

from . import _checks
from .dropout import dropout
from .feedforward import check_feed_forward, feed_forward, feed_forward_backward
from .layernorm import layer_norm, layer_norm_backward
from .multihead import (check_multi_head, key_values, multi_head_attention,
                        multi_head_attention_backward)
from .params import LayerNormParams


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

    def memory_kv(self, memory, params):
        """(K, V) of the memory, computed once."""
        if self.cross_kv is None:
            self.cross_kv = key_values(memory, params)
        return self.cross_kv


def check_decoder_layer(y, memory, params, self_mask=None, memory_mask=None,
                        cache=None, grad_output=None, **_):
    """Refuse, in the decoder's terms, inputs or masks of the wrong shape, and what
    the layer's attentions or feed-forward network would refuse."""
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


def check_decoder(y, memory, layers, self_mask=None, memory_mask=None, caches=None,
                   **_):
    for i, params in enumerate(layers):
        check_decoder_layer(y, memory, params, self_mask, memory_mask,
                            None if caches is None else caches[i])


@_checks.at_door(check_decoder_layer)
def decoder_layer(y, memory, params, self_mask=None, memory_mask=None, masks=None, *,
                  norm_first=False, attention=None, cache=None, saved=None):
    """One decoder layer.

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
    saved: a dict the forward fills with what ``decoder_layer_backward`` reads: the
    sums and LayerNorm outputs between the sub-layers (post-LN: rᵢ and yᵢ, pre-LN:
    nᵢ = LNᵢ(Y(i−1)) and yᵢ, i = 1, 2, 3) and what each sub-layer kept
    (``saved["self"]``, ``saved["cross"]``, ``saved["ffn"]``); None keeps nothing.
    """
    p = params
    m_self, m_cross, m_ffn = _sublayer_masks(masks, memory)
    s = {} if saved is None else saved
    s["self"], s["cross"], s["ffn"] = {}, {}, {}

    norms = (p.norm1, p.norm2, p.norm3)

    def norm(i, h):       # LayerNorm i, keeping x̂ and 1/σ in s["ln<i>"]
        s[f"ln{i}"] = {}
        return layer_norm(h, norms[i - 1].gamma, norms[i - 1].beta, p.eps, s[f"ln{i}"])

    def self_attn(h):
        kv = None if cache is None else cache.extend(h, p.self_attn)
        return dropout(multi_head_attention(h, p.self_attn, self_mask,
                                            attention=attention, kv=kv,
                                            saved=s["self"])[0], m_self)

    def cross_attn(h):
        kv = None if cache is None else cache.memory_kv(memory, p.cross_attn)
        return dropout(multi_head_attention(h, p.cross_attn, memory_mask, memory,
                                            attention=attention, kv=kv,
                                            saved=s["cross"])[0], m_cross)

    def ffn(h):
        return dropout(feed_forward(h, p.ffn, s["ffn"]), m_ffn)

    subs = [self_attn, ffn] if memory is None else [self_attn, cross_attn, ffn]
    for i, sub in enumerate(subs, start=1):
        if norm_first:   # Yi = Y(i−1) + Sub(LNᵢ(Y(i−1)))
            s[f"n{i}"] = norm(i, y)
            y = s[f"y{i}"] = y + sub(s[f"n{i}"])
        else:            # Yi = LNᵢ(Rᵢ),  Rᵢ = Y(i−1) + Sub(Y(i−1))
            s[f"r{i}"] = y + sub(y)
            y = s[f"y{i}"] = norm(i, s[f"r{i}"])
    return y


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
    if memory is None and len(masks) == 2:
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
    values (None without memory). With dropout masks M₁, M₂, M₃ (the forward's),
    R₁ = Y + M₁ ⊙ SelfAttn(Y) and so on: each sub-layer's gradient is multiplied by
    its mask, g_Y = g_R₁ + J_SelfAttnᵀ (M₁ ⊙ g_R₁).
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
    norms = (p.norm1, p.norm2, p.norm3)

    def norm_backward(i, h, g):  # LayerNorm i at its input h: (g_h, g_γ, g_β)
        return layer_norm_backward(h, norms[i - 1].gamma, g, p.eps, s[f"ln{i}"])

    # Each sub-layer's backward, named as its field of p, at its input h:
    # (g_h, g_memory or None, g_params).
    def self_attn(h, g):
        g_h, _, g_p = multi_head_attention_backward(h, p.self_attn, dropout(g, m_self),
                                                    self_mask, saved=s["self"])
        return g_h, None, g_p

    def cross_attn(h, g):
        return multi_head_attention_backward(h, p.cross_attn, dropout(g, m_cross),
                                             memory_mask, memory, saved=s["cross"])

    def ffn(h, g):
        g_h, g_p = feed_forward_backward(h, p.ffn, dropout(g, m_ffn), s["ffn"])
        return g_h, None, g_p

    subs = [self_attn, ffn] if memory is None else [self_attn, cross_attn, ffn]
    grads, g_memory, g = {}, None, grad_output   # grads: {field of p: its gradient}
    for i, sub in reversed(list(enumerate(subs, start=1))):
        h = y if i == 1 else s[f"y{i - 1}"]                 # the sub-layer's input
        if norm_first:   # Yi = Y(i−1) + Sub(LNᵢ(Y(i−1)))
            g_n, g_m, grads[sub.__name__] = sub(s[f"n{i}"], g)
            g_ln, *g_norm = norm_backward(i, h, g_n)
            g = g + g_ln
        else:            # Yi = LNᵢ(Y(i−1) + Sub(Y(i−1)))
            g_r, *g_norm = norm_backward(i, s[f"r{i}"], g)
            g_h, g_m, grads[sub.__name__] = sub(h, g_r)
            g = g_r + g_h
        grads[f"norm{i}"] = LayerNormParams(*g_norm)
        g_memory = g_m if g_m is not None else g_memory
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

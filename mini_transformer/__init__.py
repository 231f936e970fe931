"""mini_transformer: the equations of "Attention Is All You Need", each written once.

Every function runs on NumPy arrays (the reference) and, unchanged, on torch
tensors on any device, through the Array API (``array-api-compat``).
``import mini_transformer`` does not import torch. The modules, bottom-up (each
imports only modules above it in this list; ``tests/test_imports.py`` checks):

- ``_checks``, ``_ops``: the argument checks (run at the door, ``at_door``), and the
  shared array operations (products over all rows, summing a gradient back to a
  broadcast shape).
- ``tree``: the one walker over a params container (map, leaves, named leaves,
  rebuild from names).
- ``positional``: the sinusoidal positional encoding (§3.5).
- ``bpe``: byte-pair encoding, learnt, saved and loaded (§5.1).
- ``batching``: padding and batches by approximate length (§5.1).
- ``tasks``: the synthetic tasks (reverse, sort) of chapters 15 and 16.
- ``softmax``: softmax, log-sum-exp, log-softmax and the softmax's backward.
- ``row_blocks``: the softmax's NumPy fast path (in place, cache-sized blocks of
  rows, in threads), which attention calls.
- ``layernorm``, ``feedforward``, ``dropout``: one sub-layer idea each, forward
  and backward.
- ``checkpoint``: params to and from ``.npz`` files, and checkpoint averaging (§6.1).
- ``attention``: scaled dot-product attention, its masks and its backward (§3.2.1).
- ``loss``: cross-entropy with label smoothing and its gradient (§5.4).
- ``optim``: Adam and the paper's learning-rate schedule (§5.3).
- ``params``: the weight containers (frozen dataclasses of arrays).
- ``sampling``: the distribution a sampler draws from (greedy, temperature, top-k,
  top-p) and the draw.
- ``multihead``: multi-head attention and its backward (§3.2.2).
- ``tiled``: attention in tiles with an online softmax, forward and backward.
- ``residual``: the residual sub-layer, LN(x + dropout(F(x))) or its pre-LN form,
  forward and backward, which both layers wrap around each sub-layer.
- ``encoder``, ``decoder``: one layer and the stack each; the decoder's
  ``KVCache``.
- ``transformer``: the whole model (§3), and its loss and gradients.
- ``decoding``: greedy search and beam search with the length penalty (§6.1).
- ``lm``: the decoder-only language model (chapter 18): params, forward, loss and
  gradients through the decoder with no memory, generation with the key/value cache.
- ``rmsnorm``, ``rotary``, ``swiglu``, ``grouped_query``: chapter 19's changes since
  2017 (RMSNorm, rotary position embedding, SwiGLU, grouped-query attention), forward
  and backward.
- ``translation``: texts in, texts out, and the scores (BLEU, chrF, exact match).
- ``number_words``: chapter 17's experiment (data, training, command line),
  outside the equations.
- ``pydoc_lm``: chapter 18's experiment (Python's help pages split by topic, n-gram
  baselines, training, bits per character, the ``pydoc-lm`` command).
- ``torch``: ``nn.Module`` wrappers (``torch.modules``) and weight conversion to
  and from ``torch.nn`` (``torch.convert``: of the package, it imports only the
  containers of ``params`` and ``tree``'s builder).
"""

from .attention import (
    apply_mask,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
)
from .bpe import BPE
from .checkpoint import average_params
from .decoder import KVCache, decoder, decoder_layer, decoder_layer_backward
from .decoding import beam_search, greedy_decode, length_penalty
from .encoder import encoder, encoder_layer, encoder_layer_backward
from .feedforward import feed_forward, feed_forward_backward
from .layernorm import layer_norm, layer_norm_backward
from .loss import cross_entropy, cross_entropy_backward, cross_entropy_with_grad
from .multihead import key_values, multi_head_attention, multi_head_attention_backward
from .params import (DecoderLayerParams, EncoderLayerParams, FeedForwardParams,
                     LayerNormParams, MultiHeadParams, TransformerParams)
from .positional import positional_encoding
from .softmax import log_softmax, log_sum_exp, softmax, softmax_backward
from .tiled import tiled_attention, tiled_attention_backward
from .translation import corpus_bleu, corpus_chrf, exact_match, translate
from .transformer import (count_parameters, decode, embed, encode, encoder_decoder,
                          loss_and_grads, transformer)

__version__ = "0.1.0"

__all__ = [
    "BPE",
    "DecoderLayerParams",
    "EncoderLayerParams",
    "FeedForwardParams",
    "KVCache",
    "LayerNormParams",
    "MultiHeadParams",
    "TransformerParams",
    "apply_mask",
    "beam_search",
    "causal_mask",
    "count_parameters",
    "cross_entropy",
    "cross_entropy_backward",
    "cross_entropy_with_grad",
    "decode",
    "decoder",
    "decoder_layer",
    "decoder_layer_backward",
    "embed",
    "encode",
    "encoder",
    "encoder_decoder",
    "encoder_layer",
    "encoder_layer_backward",
    "feed_forward",
    "feed_forward_backward",
    "greedy_decode",
    "key_values",
    "layer_norm",
    "layer_norm_backward",
    "length_penalty",
    "log_softmax",
    "log_sum_exp",
    "loss_and_grads",
    "multi_head_attention",
    "multi_head_attention_backward",
    "padding_mask",
    "positional_encoding",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_backward",
    "softmax",
    "softmax_backward",
    "tiled_attention",
    "tiled_attention_backward",
    "transformer",
    "translate",
    "average_params",
    "corpus_bleu",
    "corpus_chrf",
    "exact_match",
]

# --- Chapter 19, what changed since 2017: RMSNorm, RoPE, SwiGLU, grouped queries.
from .grouped_query import grouped_query_attention, grouped_query_attention_backward
from .rmsnorm import rms_norm, rms_norm_backward
from .rotary import rotary_angles, rotary_embedding, rotary_embedding_backward
from .swiglu import silu, swiglu, swiglu_backward

__all__ += [
    "grouped_query_attention",
    "grouped_query_attention_backward",
    "rms_norm",
    "rms_norm_backward",
    "rotary_angles",
    "rotary_embedding",
    "rotary_embedding_backward",
    "silu",
    "swiglu",
    "swiglu_backward",
]

# --- language models: sampling and the decoder-only model (chapter 18) ---------------
from .lm import (generate, language_model, lm_loss, lm_loss_and_grads,  # noqa: E402
                 lm_params)
from .sampling import sampling_distribution  # noqa: E402

__all__ += ["generate", "language_model", "lm_loss", "lm_loss_and_grads", "lm_params",
            "sampling_distribution"]

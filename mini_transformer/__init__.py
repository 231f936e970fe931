"""mini_transformer: the equations of "Attention Is All You Need", each written once.

Every function runs on NumPy arrays (the reference) and, unchanged, on torch
tensors on any device, through the Array API (``array-api-compat``).
``import mini_transformer`` does not import torch; ``mini_transformer.torch``
holds the ``nn.Module`` wrappers.
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
from .loss import cross_entropy, cross_entropy_backward
from .multihead import key_values, multi_head_attention, multi_head_attention_backward
from .params import (DecoderLayerParams, EncoderLayerParams, FeedForwardParams,
                     MultiHeadParams, TransformerParams)
from .positional import positional_encoding
from .softmax import log_softmax, log_sum_exp, softmax, softmax_backward
from .tiled import tiled_attention, tiled_attention_backward
from .translation import corpus_bleu, corpus_chrf, exact_match, translate
from .transformer import (count_parameters, embed, encoder_decoder, loss_and_grads,
                          transformer)

__version__ = "0.1.0"

__all__ = [
    "BPE",
    "DecoderLayerParams",
    "EncoderLayerParams",
    "FeedForwardParams",
    "KVCache",
    "MultiHeadParams",
    "TransformerParams",
    "apply_mask",
    "beam_search",
    "causal_mask",
    "count_parameters",
    "cross_entropy",
    "cross_entropy_backward",
    "decoder",
    "decoder_layer",
    "decoder_layer_backward",
    "embed",
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

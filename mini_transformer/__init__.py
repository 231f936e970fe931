"""mini_transformer: the equations of "Attention Is All You Need", each written once.

Every function runs on NumPy arrays (the reference) and, unchanged, on torch
tensors on any device, through the Array API (``array-api-compat``).
``import mini_transformer`` does not import torch; ``mini_transformer.torch``
holds the ``nn.Module`` wrappers.
"""

from .attention import apply_mask, causal_mask, padding_mask, scaled_dot_product_attention
from .decoder import KVCache, decoder, decoder_layer
from .encoder import encoder, encoder_layer
from .feedforward import feed_forward
from .layernorm import layer_norm
from .multihead import key_values, multi_head_attention
from .params import (DecoderLayerParams, EncoderLayerParams, FeedForwardParams,
                     MultiHeadParams, TransformerParams)
from .positional import positional_encoding
from .softmax import log_sum_exp, softmax
from .tiled import tiled_attention
from .transformer import (count_parameters, embed, encoder_decoder, greedy_decode,
                          transformer)

__version__ = "0.1.0"

__all__ = [
    "DecoderLayerParams",
    "EncoderLayerParams",
    "FeedForwardParams",
    "KVCache",
    "MultiHeadParams",
    "TransformerParams",
    "apply_mask",
    "causal_mask",
    "count_parameters",
    "decoder",
    "decoder_layer",
    "embed",
    "encoder",
    "encoder_decoder",
    "encoder_layer",
    "feed_forward",
    "greedy_decode",
    "key_values",
    "layer_norm",
    "log_sum_exp",
    "multi_head_attention",
    "padding_mask",
    "positional_encoding",
    "scaled_dot_product_attention",
    "softmax",
    "tiled_attention",
    "transformer",
]

"""The package on torch: ``nn.Module`` wrappers around its math (``modules``) and
weight interop with ``torch.nn`` (``convert``).

``import mini_transformer`` does not import torch; ``import mini_transformer.torch``
does.
"""

from .modules import (Decoder, DecoderLayer, Encoder, EncoderLayer, FeedForward,
                      MultiHeadAttention, Transformer, fused_attention)

__all__ = ["Decoder", "DecoderLayer", "Encoder", "EncoderLayer", "FeedForward",
           "MultiHeadAttention", "Transformer", "fused_attention"]

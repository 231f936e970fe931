"""Every input the package refuses, and the edge cases it accepts, as data.

``test_errors.py`` runs each case; ``book/appendix_refused_inputs.md`` is
written from the same data with the messages the code really produces:

    .venv/bin/python tests/refused_cases.py      # rewrites the appendix page

and ``test_errors.py::test_appendix_page_is_in_sync`` fails if the page and
the cases drift apart.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

PAGE = Path(__file__).resolve().parents[1] / "book" / "appendix_refused_inputs.md"

# Run once before the calls below; shown on the page.
SETUP = """\
import dataclasses
import numpy as np, torch
import mini_transformer as mt
from mini_transformer.torch import MultiHeadAttention, fused_attention
from mini_transformer.torch.convert import (decoder_layer_from_torch,
    encoder_layer_from_torch, multi_head_from_torch, to_torch, transformer_from_torch)

rng = np.random.default_rng(0)
q = rng.normal(size=(3, 4))                          # (n_q, d_k)
k = rng.normal(size=(5, 4))                          # (n_k, d_k)
v = rng.normal(size=(5, 2))                          # (n_k, d_v)
tq, tk, tv = torch.as_tensor(q), torch.as_tensor(k), torch.as_tensor(v)
x = rng.normal(size=(2, 3, 8))                       # (batch, n, d_model)
mha = mt.MultiHeadParams.random(rng, d_model=8, n_heads=2)
ffn = mt.FeedForwardParams.random(rng, d_model=8)
layer = mt.EncoderLayerParams.random(rng, d_model=8, n_heads=2)
gamma, beta = np.ones(8), np.zeros(8)
dec = mt.DecoderLayerParams.random(rng, d_model=8, n_heads=2)
model = mt.TransformerParams.random(                 # 10 tokens, 1 layer each
    rng, vocab_size=10, d_model=8, n_heads=2, n_layers=1)
src = np.array([[1, 2, 3], [4, 5, 6]])               # (batch, n) token ids
layer_6 = dataclasses.replace(layer, ffn=mt.FeedForwardParams.random(rng, d_model=6))
"""

# The refusals the issues ask for, by category; each must have a case.
CATEGORIES = {
    "rank": "Wrong rank",
    "features": "Mismatched feature sizes",
    "length": "k/v length mismatch",
    "mask-shape": "Mask of the wrong shape",
    "mask-dtype": "Mask of the wrong dtype",
    "heads": "n_heads not dividing d_model",
    "empty": "Empty sequences",
    "temperature": "Non-positive temperature",
    "libraries": "Mixed NumPy/torch inputs",
    "devices": "Mixed devices",
    "dtypes": "Mixed or non-floating dtypes",
    "sizes": "Bad sizes and lengths for the mask and encoding builders",
    "tokens": "Token ids and decoding arguments",
    "gradients": "Gradients and the loss",
    "other": "Other refused arguments",
    "interop": "torch.nn modules the interop cannot represent",
    "translation": "Translation: subwords, batches, dropout, beam search, checkpoints",
}


@dataclass(frozen=True)
class Refused:
    id: str         # the test id: test_errors.py::test_refused[<id>]
    category: str   # a key of CATEGORIES
    what: str       # the bad input in words
    call: str       # a Python expression, evaluated after SETUP
    expect: str     # a piece of the message (literal text)


R = Refused
REFUSED = [
    # rank
    R("attention-rank-1", "rank", "a query that is a single vector",
      "mt.scaled_dot_product_attention(q[0], k, v)", "q must have rank >= 2"),
    R("attention-k-rank-1", "rank", "keys given as a vector",
      "mt.scaled_dot_product_attention(q, k[0], v)", "k must have rank >= 2"),
    R("multihead-rank-1", "rank", "one token without the sequence axis",
      "mt.multi_head_attention(x[0, 0], mha)", "x must have rank >= 2"),
    R("feed-forward-rank-0", "rank", "a scalar",
      "mt.feed_forward(np.float64(1.0), ffn)", "x must have rank >= 1"),
    R("layer-norm-rank-0", "rank", "a scalar",
      "mt.layer_norm(np.float64(1.0), np.ones(1), np.zeros(1))", "x must have rank >= 1"),
    R("softmax-axis", "rank", "an axis the array does not have",
      "mt.softmax(q, axis=2)", "axis 2 is out of range for x of shape (3, 4)"),
    # feature sizes
    R("attention-qk-features", "features", "q and k with different d_k",
      "mt.scaled_dot_product_attention(q, k[:, :3], v)",
      "q and k must share the feature size d_k: q (3, 4), k (5, 3)"),
    R("multihead-features", "features", "x with the wrong d_model",
      "mt.multi_head_attention(x[..., :7], mha)",
      "x has 7 features but the weights expect d_model=8"),
    R("multihead-memory-features", "features", "memory with the wrong d_model",
      "mt.multi_head_attention(x, mha, memory=x[..., :6])",
      "memory has 6 features but the weights expect d_model=8"),
    R("multihead-W_O", "features", "W_O that does not fit the concatenated heads",
      "mt.multi_head_attention(x, mt.MultiHeadParams(**{**vars(mha), 'W_O': np.ones((6, 8))}))",
      "W_O has shape (6, 8) but the heads concatenate to n_heads * d_v = 2 * 4 = 8"),
    R("feed-forward-features", "features", "x with the wrong d_model",
      "mt.feed_forward(x[..., :7], ffn)", "x has 7 features but W_1 has shape (8, 32)"),
    R("layer-norm-gamma", "features", "gamma of the wrong size",
      "mt.layer_norm(x, np.ones(7), beta)", "gamma must have shape (8,) to match x (2, 3, 8)"),
    R("layer-norm-beta", "features", "beta of the wrong size",
      "mt.layer_norm(x, gamma, np.zeros((1, 8)))", "beta must have shape (8,)"),
    R("encoder-layer-features", "features", "x with the wrong d_model",
      "mt.encoder_layer(x[..., :4], layer)",
      "x has 4 features but the weights expect d_model=8"),
    R("decoder-features", "features", "a target with the wrong d_model",
      "mt.decoder_layer(x[..., :4], x, dec)",
      "y has 4 features but the weights expect d_model=8 (shape (2, 3, 4))"),
    R("decoder-memory-features", "features", "memory with another d_model",
      "mt.decoder_layer(x, x[..., :6], dec)",
      "memory has 6 features but the weights expect d_model=8 (shape (2, 3, 6))"),
    R("encoder-layer-norm", "features", "a layer whose LayerNorm has another width",
      "mt.encoder_layer(x, dataclasses.replace(layer, norm1=mt.LayerNormParams(np.ones(5), "
      "np.zeros(5))))", "gamma must have shape (8,) to match x (2, 3, 8), got (5,)"),
    R("model-layer-shapes", "features", "a model with one layer of another width",
      "mt.transformer(src, src, dataclasses.replace(model, encoder_layers=(layer_6,)))",
      "encoder_layers.0.ffn.W_1 has shape (6, 24), expected (8, 24) (d_model=8)"),
    R("encoder-decoder-features", "features", "an embedded target with the wrong d_model",
      "mt.encoder_decoder(x, x[..., :4], model)",
      "tgt has 4 features but the weights expect d_model=8"),
    # k/v length
    R("attention-kv-length", "length", "4 values for 5 keys",
      "mt.scaled_dot_product_attention(q, k, v[:4])",
      "k and v must have the same length n_k: k (5, 4), v (4, 2)"),
    R("attention-batch-qk", "length", "batch axes of q and k that do not broadcast",
      "mt.scaled_dot_product_attention(np.stack([q, q]), np.stack([k, k, k]), v)",
      "leading (batch/head) axes of q (2, 3, 4) and k (3, 5, 4) do not broadcast"),
    R("attention-batch-v", "length", "batch axes of v that do not broadcast",
      "mt.scaled_dot_product_attention(np.stack([q, q]), k, np.stack([v, v, v]))",
      "and v (3, 5, 2) do not broadcast"),
    R("multihead-memory-batch", "length", "memory with another batch size",
      "mt.multi_head_attention(x, mha, memory=np.concatenate([x, x, x]))",
      "the batch axes of x (2, 3, 8) and memory (6, 3, 8) do not broadcast"),
    R("decoder-memory-batch", "length", "memory with another batch size",
      "mt.decoder_layer(x, np.concatenate([x, x, x]), dec)",
      "the batch axes of y (2, 3, 8) and memory (6, 3, 8) do not broadcast"),
    # mask shape
    R("mask-shape", "mask-shape", "a (3, 4) mask for (3, 5) scores",
      "mt.scaled_dot_product_attention(q, k, v, mask=np.ones((3, 4), bool))",
      "mask of shape (3, 4) does not broadcast to the scores' shape (3, 5)"),
    R("mask-extra-batch", "mask-shape", "a mask with a batch axis the inputs lack",
      "mt.scaled_dot_product_attention(q, k, v, mask=np.ones((2, 3, 5), bool))",
      "mask of shape (2, 3, 5) does not broadcast"),
    R("multihead-mask-keys", "mask-shape", "a padding mask for 4 keys on 3 tokens",
      "mt.multi_head_attention(x, mha, mask=mt.padding_mask([3, 4], 4))",
      "mask of shape (2, 1, 4) does not broadcast to (batch, n_q, n_k) = (2, 3, 3)"),
    R("multihead-mask-batch", "mask-shape", "a mask for 3 sequences on a batch of 2",
      "mt.multi_head_attention(x, mha, mask=mt.padding_mask([1, 2, 3], 3))",
      "mask of shape (3, 1, 3) does not broadcast to (batch, n_q, n_k) = (2, 3, 3)"),
    R("encoder-mask", "mask-shape", "a causal mask of the wrong size",
      "mt.encoder(x, [layer], mask=mt.causal_mask(4))",
      "mask of shape (4, 4) does not broadcast to (batch, n_q, n_k) = (2, 3, 3)"),
    R("decoder-self-mask", "mask-shape", "a causal mask for 4 target tokens on 3",
      "mt.decoder_layer(x, x[:, :2], dec, self_mask=mt.causal_mask(4))",
      "self_mask of shape (4, 4) does not broadcast to (batch, n_tgt, n_tgt) = (2, 3, 3)"),
    R("decoder-memory-mask", "mask-shape", "a padding mask for 3 source tokens on 2",
      "mt.decoder(x, x[:, :2], [dec], memory_mask=mt.padding_mask([3, 3], 3))",
      "memory_mask of shape (2, 1, 3) does not broadcast to (batch, n_tgt, n_src) = "
      "(2, 3, 2)"),
    R("transformer-src-mask", "mask-shape",
      "a square source mask (it must mask keys: it also serves the cross-attention)",
      "mt.transformer(src, src[:, :2], model, src_mask=np.ones((3, 3), bool))",
      "src_mask of shape (3, 3) does not broadcast to (batch, 1, n_src) = (2, 1, 3)"),
    R("transformer-tgt-mask", "mask-shape", "a target mask of the wrong size",
      "mt.transformer(src, src, model, tgt_mask=mt.causal_mask(4))",
      "tgt_mask of shape (4, 4) does not broadcast to (batch, n_tgt, n_tgt) = (2, 3, 3)"),
    R("fused-mask-shape", "mask-shape", "a mask of the wrong shape, fused path",
      "fused_attention(tq, tk, tv, np.ones((3, 4), bool))",
      "mask of shape (3, 4) does not broadcast to the scores' shape (3, 5)"),
    # mask dtype
    R("mask-int", "mask-dtype", "an integer 0/1 mask (ambiguous: keep or add?)",
      "mt.scaled_dot_product_attention(q, k, v, mask=np.ones((3, 5), int))",
      "mask must be bool (True = may attend) or floating (added to the scores), "
      "got dtype int64"),
    R("mask-int-torch", "mask-dtype", "an integer torch mask",
      "mt.scaled_dot_product_attention(tq, tk, tv, mask=torch.ones(3, 5, dtype=torch.int64))",
      "got dtype torch.int64"),
    R("transformer-tgt-mask-int", "mask-dtype", "an integer target mask",
      "mt.transformer(src, src, model, tgt_mask=np.ones((3, 3), int))", "got dtype int64"),
    R("fused-mask-int", "mask-dtype", "an integer mask, fused path",
      "fused_attention(tq, tk, tv, np.ones((3, 5), np.int32))", "got dtype torch.int32"),
    # heads
    R("heads-divide", "heads", "8 features for 3 heads",
      "mt.MultiHeadParams.random(rng, d_model=8, n_heads=3)",
      "d_model=8 must be a positive multiple of n_heads=3"),
    R("heads-zero", "heads", "no heads",
      "mt.MultiHeadParams.random(rng, d_model=8, n_heads=0)",
      "d_model=8 must be a positive multiple of n_heads=0"),
    R("heads-module", "heads", "the same, in the nn.Module",
      "MultiHeadAttention(6, 4)", "d_model=6 must be a positive multiple of n_heads=4"),
    R("heads-encoder-layer", "heads", "the same, for a layer",
      "mt.EncoderLayerParams.random(rng, d_model=10, n_heads=4)",
      "d_model=10 must be a positive multiple of n_heads=4"),
    R("heads-decoder-layer", "heads", "the same, for a decoder layer",
      "mt.DecoderLayerParams.random(rng, d_model=10, n_heads=4)",
      "d_model=10 must be a positive multiple of n_heads=4"),
    # empty
    R("attention-empty-q", "empty", "no queries",
      "mt.scaled_dot_product_attention(q[:0], k, v)", "q is an empty sequence (shape (0, 4))"),
    R("attention-empty-k", "empty", "no keys",
      "mt.scaled_dot_product_attention(q, k[:0], v[:0])",
      "k is an empty sequence (shape (0, 4))"),
    R("attention-empty-features", "empty", "zero features",
      "mt.scaled_dot_product_attention(q[:, :0], k[:, :0], v)",
      "the feature axis of q is an empty sequence"),
    R("multihead-empty", "empty", "sequences of length 0",
      "mt.multi_head_attention(x[:, :0], mha)", "x is an empty sequence"),
    R("softmax-empty", "empty", "a row of no scores",
      "mt.softmax(np.zeros((2, 0)))", "x is empty along axis -1 (shape (2, 0))"),
    R("log-sum-exp-empty", "empty", "a row of no scores",
      "mt.log_sum_exp(np.zeros((0,)))", "x is empty along axis -1"),
    R("layer-norm-empty", "empty", "zero features",
      "mt.layer_norm(np.zeros((3, 0)), np.ones(0), np.zeros(0))",
      "the feature axis of x is an empty sequence"),
    R("tokens-empty", "empty", "a source of no tokens",
      "mt.greedy_decode(src[:, :0], model, 5, bos=0, eos=1)",
      "src_tokens is an empty sequence (shape (2, 0))"),
    # temperature
    R("temperature-zero", "temperature", "T = 0",
      "mt.softmax(q, temperature=0)", "temperature must be > 0, got 0"),
    R("temperature-negative", "temperature", "T < 0",
      "mt.softmax(q, temperature=-1.5)", "temperature must be > 0, got -1.5"),
    R("temperature-nan", "temperature", "T = NaN",
      "mt.softmax(q, temperature=float('nan'))", "temperature must be > 0, got nan"),
    R("temperature-zero-array", "temperature", "T = 0 as a 0-d array",
      "mt.softmax(q, temperature=np.array(0.0))", "temperature must be > 0, got 0.0"),
    R("temperature-zero-tensor", "temperature", "T = 0 as a 0-d tensor",
      "mt.softmax(tq, temperature=torch.tensor(0.0))", "temperature must be > 0"),
    R("temperature-vector", "temperature", "one temperature per row",
      "mt.softmax(q, temperature=np.ones(3))", "temperature must be a real number > 0"),
    R("temperature-string", "temperature", "a string",
      "mt.softmax(q, temperature='hot')",
      "temperature must be a real number > 0, got 'hot'"),
    # libraries
    R("mixed-numpy-torch", "libraries", "a torch q with NumPy k and v",
      "mt.scaled_dot_product_attention(tq, k, v)",
      "inputs mix array libraries (q: torch.Tensor, k: numpy.ndarray, v: numpy.ndarray)"),
    R("mixed-weights", "libraries", "torch x with NumPy weights",
      "mt.multi_head_attention(torch.as_tensor(x), mha)",
      "inputs mix array libraries (x: torch.Tensor, W_Q: numpy.ndarray"),
    R("mixed-layer-norm", "libraries", "NumPy x with torch gamma",
      "mt.layer_norm(x, torch.ones(8, dtype=torch.float64), beta)",
      "inputs mix array libraries (x: numpy.ndarray, gamma: torch.Tensor"),
    R("torch-mask-numpy-inputs", "libraries", "a torch mask with NumPy inputs",
      "mt.scaled_dot_product_attention(q, k, v, mask=torch.ones(3, 5, dtype=torch.bool))",
      "a torch mask cannot be used with NumPy inputs"),
    R("tokens-torch-numpy-weights", "libraries", "torch token ids with NumPy weights",
      "mt.transformer(torch.as_tensor(src), src, model)",
      "inputs mix array libraries (src_tokens: torch.Tensor, embedding: numpy.ndarray)"),
    R("fused-numpy", "libraries", "NumPy arrays on the fused (torch-only) path",
      "fused_attention(q, k, v)", "fused_attention needs torch tensors, got numpy.ndarray"),
    R("tiled-torch", "libraries", "torch tensors on the NumPy-only tiled path",
      "mt.tiled_attention(tq, tk, tv)", "tiled_attention is NumPy-only"),
    # devices
    R("mixed-devices", "devices", "q on the CPU, k on another device",
      "mt.scaled_dot_product_attention(tq, tk.to('meta'), tv)",
      "device mismatch: q is on cpu but k is on meta"),
    R("mixed-devices-weights", "devices", "weights on another device than x",
      "mt.feed_forward(torch.as_tensor(x), ffn.map(lambda a: torch.as_tensor(a, device='meta')))",
      "device mismatch: x is on cpu but W_1 is on meta"),
    R("mask-device", "devices", "a torch mask on another device than the inputs",
      "mt.scaled_dot_product_attention(tq, tk, tv, "
      "mask=torch.ones(3, 5, dtype=torch.bool, device='meta'))",
      "device mismatch: the mask is on meta but the scores are on cpu"),
    R("fused-mask-device", "devices", "the same, fused path",
      "fused_attention(tq, tk, tv, torch.ones(3, 5, dtype=torch.bool, device='meta'))",
      "device mismatch: the mask is on meta but the scores are on cpu"),
    R("tokens-device", "devices", "token ids on another device than the embedding",
      "mt.embed(torch.as_tensor(src, device='meta'), torch.as_tensor(model.embedding))",
      "device mismatch: tokens is on meta but the embedding is on cpu"),
    # dtypes
    R("mixed-dtypes", "dtypes", "float32 q with float64 k and v",
      "mt.scaled_dot_product_attention(q.astype(np.float32), k, v)",
      "dtype mismatch: q is float32 but k is float64"),
    R("mixed-dtypes-weights", "dtypes", "float32 x with float64 weights",
      "mt.encoder_layer(x.astype(np.float32), layer)",
      "dtype mismatch: x is float32 but W_Q is float64"),
    R("mixed-dtypes-torch", "dtypes", "float16 and float32 tensors",
      "mt.scaled_dot_product_attention(tq.half(), tk.float(), tv.float())",
      "dtype mismatch: q is torch.float16 but k is torch.float32"),
    R("decoder-mixed-dtypes", "dtypes", "a float32 target with a float64 memory",
      "mt.decoder_layer(x.astype(np.float32), x, dec)",
      "dtype mismatch: y is float32 but memory is float64"),
    R("tokens-float", "dtypes", "token ids as floats",
      "mt.embed(src * 1.0, model.embedding)",
      "tokens must be integer token ids, got dtype float64"),
    R("integer-input", "dtypes", "integer scores",
      "mt.softmax(np.arange(3))", "x must have a real floating dtype, got int64"),
    R("complex-input", "dtypes", "complex scores",
      "mt.softmax(np.ones(3, complex))", "x must have a real floating dtype, got complex128"),
    R("list-input", "dtypes", "a Python list instead of an array",
      "mt.softmax([1.0, 2.0])", "x must be an array (NumPy or torch), got list"),
    # sizes
    R("causal-zero", "sizes", "a causal mask of size 0",
      "mt.causal_mask(0)", "causal_mask needs n_q to be an integer >= 1, got 0"),
    R("causal-n-k-zero", "sizes", "no keys",
      "mt.causal_mask(3, 0)", "causal_mask needs n_k to be an integer >= 1, got 0"),
    R("causal-float", "sizes", "a non-integer size",
      "mt.causal_mask(2.5)", "causal_mask needs n_q to be an integer >= 1, got 2.5"),
    R("causal-bool", "sizes", "True as a size",
      "mt.causal_mask(True)", "causal_mask needs n_q to be an integer >= 1, got True"),
    R("padding-too-long", "sizes", "a length above n_k",
      "mt.padding_mask([2, 4], 3)", "lengths must lie in [0, n_k=3], got [2, 4]"),
    R("padding-negative", "sizes", "a negative length",
      "mt.padding_mask([1, -1], 3)", "lengths must lie in [0, n_k=3], got [1, -1]"),
    R("padding-float", "sizes", "fractional lengths",
      "mt.padding_mask([1.5, 2.0], 3)",
      "lengths must be a 1-D sequence of integers, got float64 array of shape (2,)"),
    R("padding-2d", "sizes", "lengths as a matrix",
      "mt.padding_mask([[1, 2]], 3)",
      "lengths must be a 1-D sequence of integers, got int64 array of shape (1, 2)"),
    R("padding-n-k-zero", "sizes", "no keys",
      "mt.padding_mask([0], 0)", "padding_mask needs n_k to be an integer >= 1, got 0"),
    R("padding-n-k-float", "sizes", "a non-integer n_k",
      "mt.padding_mask([1], 2.5)", "padding_mask needs n_k to be an integer >= 1, got 2.5"),
    R("positional-zero", "sizes", "no positions",
      "mt.positional_encoding(0, 4)", "n_positions must be a positive integer, got 0"),
    R("positional-float", "sizes", "a float d_model",
      "mt.positional_encoding(3, 4.0)", "d_model must be a positive integer, got 4.0"),
    R("positional-bool", "sizes", "True as a size",
      "mt.positional_encoding(True, 4)", "n_positions must be a positive integer, got True"),
    R("feed-forward-d-ff", "sizes", "a feed-forward layer of width 0",
      "mt.FeedForwardParams.random(rng, d_model=8, d_ff=0)",
      "d_model and d_ff must be positive, got 8, 0"),
    R("vocab-zero", "sizes", "a vocabulary of no tokens",
      "mt.TransformerParams.random(rng, vocab_size=0, d_model=8, n_heads=2)",
      "vocab_size must be >= 1 and n_layers >= 0, got 0, 6"),
    # tokens
    R("tokens-too-large", "tokens", "a source id beyond the vocabulary",
      "mt.transformer(src + 4, src, model)",
      "src_tokens must lie in [0, vocab_size=10), got ids from 5 to 10 (shape (2, 3))"),
    R("tokens-negative", "tokens", "a negative target id",
      "mt.transformer(src, src - 2, model)",
      "tgt_tokens must lie in [0, vocab_size=10), got ids from -1 to 4 (shape (2, 3))"),
    R("tokens-rank-0", "tokens", "one id without the sequence axis",
      "mt.embed(np.int64(3), model.embedding)",
      "tokens must have rank >= 1 with shape (..., n), got shape ()"),
    R("decode-max-len", "tokens", "max_len = 0",
      "mt.greedy_decode(src, model, 0, bos=0, eos=1)",
      "max_len must be an integer >= 1, got 0"),
    R("decode-max-len-float", "tokens", "a fractional max_len",
      "mt.greedy_decode(src, model, 2.5, bos=0, eos=1)",
      "max_len must be an integer >= 1, got 2.5"),
    R("decode-bos", "tokens", "bos outside the vocabulary",
      "mt.greedy_decode(src, model, 5, bos=10, eos=1)",
      "bos must be a token id in [0, vocab_size=10), got 10"),
    R("decode-eos", "tokens", "a negative eos",
      "mt.greedy_decode(src, model, 5, bos=0, eos=-1)",
      "eos must be a token id in [0, vocab_size=10), got -1"),
    R("no-embedding", "tokens", "token ids for params without an embedding",
      "mt.transformer(src, src, mt.TransformerParams(None, model.encoder_layers, "
      "model.decoder_layers))", "these params have no embedding"),
    # gradients
    R("backward-grad-shape", "gradients", "a gradient of another shape than the output",
      "mt.multi_head_attention_backward(x, mha, x[:, :2])",
      "grad_output must have the output's shape (2, 3, 8), got (2, 2, 8)"),
    R("cross-entropy-target", "gradients", "a target outside the vocabulary",
      "mt.cross_entropy(x, np.full((2, 3), 8))",
      "targets must lie in [0, vocab_size=8)"),
    R("cross-entropy-all-ignored", "gradients", "every target ignored",
      "mt.cross_entropy(x, np.zeros((2, 3), int), ignore_index=0)",
      "every target equals ignore_index: the mean is over no position"),
    R("cross-entropy-smoothing", "gradients", "label smoothing above 1",
      "mt.cross_entropy(x, np.zeros((2, 3), int), label_smoothing=1.5)",
      "label_smoothing must lie in [0, 1], got 1.5"),
    R("train-step-target", "gradients", "a training target outside the vocabulary",
      "mt.loss_and_grads(model, src, src, np.full((2, 3), 10))",
      "tgt_out must lie in [0, vocab_size=10)"),
    R("tiled-backward-torch", "gradients", "torch tensors to the NumPy-only tiled backward",
      "mt.tiled_attention_backward(tq, tk, tv, tq, tq[:, 0], tq)",
      "tiled_attention_backward is NumPy-only"),
    # other
    R("layer-norm-eps", "other", "a negative eps",
      "mt.layer_norm(x, gamma, beta, eps=-1e-5)", "eps must be >= 0, got -1e-05"),
    R("layer-norm-eps-nan", "other", "eps = NaN",
      "mt.layer_norm(x, gamma, beta, eps=float('nan'))", "eps must be >= 0, got nan"),
    R("tiled-block-size", "other", "a tile of 0 keys",
      "mt.tiled_attention(q, k, v, block_size=(2, 0))", "block_size must be positive"),
    R("tiled-threads", "other", "0 threads",
      "mt.tiled_attention(q, k, v, threads=0)", "threads must be >= 1, got 0"),
    # interop
    R("interop-kdim", "interop", "MultiheadAttention with kdim != embed_dim",
      "multi_head_from_torch(torch.nn.MultiheadAttention(8, 2, kdim=4, vdim=4))",
      "only MultiheadAttention with kdim == vdim == embed_dim is supported"),
    R("interop-bias-kv", "interop", "MultiheadAttention with add_bias_kv",
      "multi_head_from_torch(torch.nn.MultiheadAttention(8, 2, add_bias_kv=True))",
      "add_bias_kv and add_zero_attn are not supported"),
    R("interop-gelu", "interop", "an encoder layer with GELU",
      "encoder_layer_from_torch(torch.nn.TransformerEncoderLayer(8, 2, "
      "activation='gelu'))", "only the ReLU activation of the paper is supported"),
    R("interop-decoder-gelu", "interop", "a decoder layer with GELU",
      "decoder_layer_from_torch(torch.nn.TransformerDecoderLayer(8, 2, "
      "activation='gelu'))", "only the ReLU activation of the paper is supported"),
    R("interop-layer-kind", "interop", "a decoder layer read as an encoder layer",
      "encoder_layer_from_torch(torch.nn.TransformerDecoderLayer(8, 2))",
      "expected a torch.nn.TransformerEncoderLayer, got TransformerDecoderLayer"),
    R("interop-layer-kind-decoder", "interop", "an encoder layer read as a decoder layer",
      "decoder_layer_from_torch(torch.nn.TransformerEncoderLayer(8, 2))",
      "expected a torch.nn.TransformerDecoderLayer, got TransformerEncoderLayer"),
    R("interop-embedding", "interop", "an embedding of another width than the model",
      "transformer_from_torch(torch.nn.Transformer(8, 2, 1, 1, 16, batch_first=True), "
      "embedding=torch.nn.Embedding(10, 6))",
      "embedding must have shape (vocab_size, d_model=8), got (10, 6)"),
    R("interop-d-v", "interop", "heads with d_v != d_model / n_heads, to torch",
      "to_torch(mt.MultiHeadParams(**{**vars(mha), 'W_V': np.ones((2, 8, 3))}))",
      "torch.nn.MultiheadAttention needs d_k = d_v = d_model / n_heads"),
    # translation
    R("bpe-unknown-character", "translation", "a character the BPE never saw",
      "mt.BPE.learn(['one two'], 20).encode('one!')",
      "has characters that are not in the BPE alphabet: ['!']"),
    R("bpe-double-space", "translation", "text the BPE cannot give back exactly",
      "mt.BPE.learn(['one two'], 20).encode('one  two')",
      "BPE text must be non-empty words separated by single spaces"),
    R("bpe-vocab-too-small", "translation", "a vocabulary smaller than the characters",
      "mt.BPE.learn(['one two'], 5)",
      "vocab_size=5 is smaller than the 3 specials plus the 10 characters"),
    R("bpe-foreign-file", "translation", "a JSON object that is not a BPE",
      "mt.BPE.from_dict({'vocab': []})", "is not a BPE file"),
    R("batch-budget", "translation", "a sequence longer than the token budget",
      "mt.batching.batch_by_length([[5, 6, 7]], [[5]], 2, 0)",
      "a sequence of 3 tokens does not fit a budget of max_tokens=2"),
    R("dropout-rate", "translation", "a dropout rate of 1",
      "mt.transformer(src, src, model, p_drop=1.0, rng=rng)",
      "p_drop must be a number in [0, 1), got 1.0"),
    R("dropout-no-rng", "translation", "dropout without a random generator",
      "mt.transformer(src, src, model, p_drop=0.1)", "p_drop=0.1 needs an rng"),
    R("dropout-mask-shape", "translation",
      "a dropout mask that would broadcast over the batch",
      "mt.encoder_layer(x, layer, masks=(np.ones((1, 3, 8)), None))",
      "dropout mask 0 must have x's shape (2, 3, 8), got (1, 3, 8)"),
    R("beam-size", "translation", "a beam of size 0",
      "mt.beam_search(src, model, None, 0, 1, beam_size=0)",
      "beam_size must be an integer >= 1, got 0"),
    R("beam-alpha", "translation", "a negative length-penalty exponent",
      "mt.beam_search(src, model, None, 0, 1, alpha=-1)",
      "alpha must be a number >= 0, got -1"),
    R("average-layouts", "translation", "averaging checkpoints of different depths",
      "mt.average_params([model, mt.TransformerParams.random(rng, vocab_size=10, "
      "d_model=8, n_heads=2, n_layers=2)])",
      "average_params needs params of one layout"),
]


@dataclass(frozen=True)
class Edge:
    id: str
    what: str
    call: str               # a Python expression, evaluated after SETUP + EDGE_SETUP
    expect: object          # the value it must give (NaN compares equal to NaN)
    tests: tuple = field(default=())  # further tests that check it in depth


EDGE_SETUP = """\
def masked_row_gradient():
    # gradient through a query whose keys are all masked
    q = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([True, False, True])[:, None].expand(3, 3)
    out, w = mt.scaled_dot_product_attention(q, q, q, mask=mask)
    (out.sum() + w.sum()).backward()
    return bool(torch.isfinite(q.grad).all())

def half_precision_error(dtype):
    # max |encoder layer in dtype - float64 on the same rounded inputs|
    lo = layer.map(lambda a: torch.as_tensor(a).to(dtype))
    xl = torch.as_tensor(x).to(dtype)
    ref = mt.encoder_layer(xl.double(), lo.map(lambda a: a.double()))
    return (mt.encoder_layer(xl, lo).double() - ref).abs().max().item()
"""

E = Edge
NAN, INF = math.nan, math.inf
EDGE_CASES = [
    E("nan-propagates", "NaN in a row of scores: the row is NaN, not hidden",
      "mt.softmax(np.array([[np.nan, 0.0, 1.0], [0.0, 0.0, 0.0]]))",
      [[NAN, NAN, NAN], [1 / 3, 1 / 3, 1 / 3]],
      ("test_softmax.py::test_nan_propagates_to_its_row_only",
       "test_attention.py::test_nan_in_a_query_propagates_to_its_row_only",
       "test_layernorm.py::test_nan_propagates_to_its_row_only")),
    E("minus-inf", "a -inf score is a masked key: weight 0",
      "mt.softmax(np.array([-np.inf, 0.0, np.log(3)]))", [0, 0.25, 0.75],
      ("test_softmax.py::test_all_minus_inf_row_gives_zeros_not_nan",)),
    E("plus-inf", "a +inf score (an overflow upstream) gives NaN, as torch.softmax",
      "mt.softmax(np.array([np.inf, 0.0]))", [NAN, NAN],
      ("test_softmax.py::test_infinities_behave_like_torch_softmax",)),
    E("all-masked-softmax", "a row of -inf only gives zeros, not NaN",
      "mt.softmax(np.array([-np.inf, -np.inf]))", [0, 0],
      ("test_softmax.py::test_all_minus_inf_row_gives_zeros_not_nan",)),
    E("all-masked-attention", "a query with every key masked: zero weights, zero output",
      "mt.scaled_dot_product_attention(q, k, v, mask=np.zeros((3, 5), bool))[0]",
      np.zeros((3, 2)),
      ("test_attention.py::test_fully_masked_row_gives_zero_weights_and_zero_output",
       "test_multihead.py::test_fully_masked_sequence_gives_bias_only_and_zero_weights")),
    E("all-masked-gradient", "... and finite gradients (torch autograd)",
      "masked_row_gradient()", True,
      ("test_attention.py::test_fully_masked_row_has_finite_gradients",
       "test_encoder.py::test_fully_masked_sequence_stays_finite_with_finite_gradients")),
    E("huge-scores", "scores of ±1e30 do not overflow",
      "mt.softmax(np.array([1e30, -1e30]))", [1, 0],
      ("test_softmax.py::test_huge_scores_do_not_overflow",
       "test_attention.py::test_scores_of_1e30_do_not_overflow")),
    E("huge-scores-attention", "q·k = ±1e30 inside attention (float32 too)",
      "mt.scaled_dot_product_attention(np.array([[1e15]], np.float32), "
      "np.array([[1e15], [-1e15]], np.float32), np.array([[1.0], [2.0]], np.float32))[1]",
      [[1, 0]], ("test_attention.py::test_scores_of_1e30_do_not_overflow",)),
    E("infinite-temperature", "T = inf: uniform over the unmasked keys",
      "mt.softmax(np.array([-np.inf, 3.0, 4.0]), temperature=float('inf'))", [0, 0.5, 0.5],
      ("test_softmax.py::test_infinite_temperature_is_uniform_over_unmasked_keys",)),
    E("float16", "float16 on torch: encoder layer within 1e-2 of float64",
      "half_precision_error(torch.float16) < 1e-2", True,
      ("test_backends.py::test_half_precision_within_tolerance_of_float64",)),
    E("bfloat16", "bfloat16 on torch: encoder layer within 5e-2 of float64",
      "half_precision_error(torch.bfloat16) < 5e-2", True,
      ("test_backends.py::test_half_precision_within_tolerance_of_float64",)),
]


def namespace() -> dict:
    """The names SETUP and EDGE_SETUP define."""
    ns: dict = {}
    exec(SETUP + EDGE_SETUP, ns)
    return ns


def message(case: Refused, ns: dict) -> str:
    """The ValueError message ``case`` raises (AssertionError if it raises none)."""
    try:
        eval(case.call, ns)
    except ValueError as e:
        return str(e)
    raise AssertionError(f"{case.id}: no ValueError from {case.call}")


def _format(value) -> str:
    """A result as short text: booleans as is, numbers to 4 significant digits."""
    if hasattr(value, "detach"):
        value = value.detach().numpy()
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    a = np.asarray(value, dtype=float)
    if a.ndim == 0:
        return f"{float(a):.4g}"
    return "[" + ", ".join(_format(row) for row in a) + "]"


def _cell(text: str) -> str:
    """Text as a code span in a markdown table cell."""
    assert "`" not in text, text
    return "`" + text.replace("|", "\\|") + "`"


def render_page() -> str:
    ns = namespace()
    out = [
        "# Refused inputs and edge cases",
        "",
        "Every input the package refuses gets a `ValueError` whose message names the",
        "offending shapes or values, never a silently wrong answer or a bare NumPy/torch",
        "traceback. The tables below are written by `tests/refused_cases.py` from the",
        "messages the code really raises; each row is a test",
        "(`tests/test_errors.py::test_refused[<id>]`), and a test fails if this page and",
        "the code drift apart.",
        "",
        "Every call below runs after this setup:",
        "",
        "```python",
        SETUP.rstrip(),
        "```",
        "",
    ]
    for key, title in CATEGORIES.items():
        cases = [c for c in REFUSED if c.category == key]
        out += [f"## {title}", "", "| id | refused input | call | message |",
                "|---|---|---|---|"]
        for c in cases:
            out.append(f"| {c.id} | {c.what} | {_cell(c.call)} | {_cell(message(c, ns))} |")
        out.append("")
    out += [
        "## Edge cases that are accepted",
        "",
        "These inputs are legal and give a defined answer. Each row is",
        "`tests/test_errors.py::test_edge_case[<id>]`; the last column names the tests",
        "that check the same behaviour in depth. Two helpers are defined for the table:",
        "",
        "```python",
        EDGE_SETUP.rstrip(),
        "```",
        "",
        "| id | input | call | result | also checked by |",
        "|---|---|---|---|---|",
    ]
    for e in EDGE_CASES:
        tests = ", ".join(_cell(t) for t in e.tests)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # inf - inf in the +inf case
            value = eval(e.call, ns)
        out.append(f"| {e.id} | {e.what} | {_cell(e.call)} | {_cell(_format(value))} "
                   f"| {tests} |")
    out.append("")
    return "\n".join(out)


def matches(value, expect) -> bool:
    """``value`` equals ``expect`` (NaN equal to NaN, 1e-12 tolerance)."""
    if isinstance(expect, bool):
        return value is expect or (isinstance(value, np.bool_) and bool(value) is expect)
    if hasattr(value, "detach"):
        value = value.detach().numpy()
    value = np.asarray(value, dtype=float)
    expect = np.asarray(expect, dtype=float)
    return value.shape == expect.shape and bool(
        np.allclose(value, expect, rtol=1e-12, atol=1e-12, equal_nan=True))



if __name__ == "__main__":
    PAGE.write_text(render_page())
    print(f"wrote {PAGE}")

"""The package on a CUDA GPU equals the NumPy reference (skipped without one).

The same functions run on NumPy arrays and on torch tensors on any device; these tests
move weights and inputs to the GPU and compare with the float64 NumPy reference: the
forward in float64 (to 1e-12) and float32 (to a few float32 epsilons), the hand-derived
gradients of the whole model in float64 (to 1e-10, as on the CPU), greedy decoding
token for token, and the committed translator's outputs. ``MT_TEST_DEVICE=cpu`` runs
them on torch's CPU backend instead (to check the tests themselves without a GPU).
"""

import os

import numpy as np
import pytest
import torch

import mini_transformer as mt
from mini_transformer.number_words import load_model

DEVICE = os.environ.get("MT_TEST_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(
    DEVICE == "cuda" and not torch.cuda.is_available(), reason="needs a CUDA GPU")


def on_device(dtype):
    return lambda a: torch.as_tensor(a, device=DEVICE, dtype=dtype)


def back(t):
    return t.detach().cpu().double().numpy()


def test_encoder_layer_on_the_device_equals_numpy():
    rng = np.random.default_rng(0)
    p = mt.EncoderLayerParams.random(rng, d_model=64, n_heads=8)
    x = rng.normal(size=(2, 16, 64))
    keep = mt.padding_mask([16, 11], 16)
    ref = mt.encoder_layer(x, p, mask=keep)
    y64 = mt.encoder_layer(on_device(torch.float64)(x), p.map(on_device(torch.float64)),
                           mask=torch.as_tensor(keep, device=DEVICE))
    assert y64.device.type == DEVICE and y64.dtype == torch.float64
    assert np.abs(back(y64) - ref).max() < 1e-12
    y32 = mt.encoder_layer(on_device(torch.float32)(x), p.map(on_device(torch.float32)),
                           mask=torch.as_tensor(keep, device=DEVICE))
    assert y32.dtype == torch.float32
    # float32: a few epsilons (1.2e-7) on outputs of size ~1; TF32 is off by default
    assert np.abs(back(y32) - ref).max() < 1e-5


def test_hand_gradients_on_the_device_equal_numpy():
    rng = np.random.default_rng(1)
    p = mt.TransformerParams.random(rng, vocab_size=11, d_model=16, n_heads=4, d_ff=32,
                                    n_layers=2)
    src = rng.integers(0, 11, size=(3, 7))
    tgt_in = rng.integers(0, 11, size=(3, 5))
    tgt_out = rng.integers(0, 11, size=(3, 5))
    loss, grads = mt.loss_and_grads(p, src, tgt_in, tgt_out, label_smoothing=0.1)
    ints = lambda a: torch.as_tensor(a, device=DEVICE)  # noqa: E731
    loss_d, grads_d = mt.loss_and_grads(p.map(on_device(torch.float64)), ints(src),
                                        ints(tgt_in), ints(tgt_out), label_smoothing=0.1)
    assert abs(float(loss_d) - float(loss)) < 1e-12
    worst = max(float(np.abs(back(g_d) - g).max())
                for g_d, g in zip(_leaves(grads_d), _leaves(grads)))
    assert worst < 1e-10


def _leaves(tree):
    import dataclasses

    for f in dataclasses.fields(tree):
        v = getattr(tree, f.name)
        if dataclasses.is_dataclass(v):
            yield from _leaves(v)
        elif isinstance(v, (list, tuple)):
            for item in v:
                yield from _leaves(item)
        elif v is not None and hasattr(v, "shape"):
            yield v


def test_greedy_decoding_on_the_device_equals_numpy():
    rng = np.random.default_rng(2)
    p = mt.TransformerParams.random(rng, vocab_size=13, d_model=16, n_heads=4, d_ff=32,
                                    n_layers=2)
    src = rng.integers(2, 13, size=(4, 6))
    tokens = mt.greedy_decode(src, p, 9, bos=0, eos=1)
    tokens_d = mt.greedy_decode(torch.as_tensor(src, device=DEVICE),
                                   p.map(on_device(torch.float64)), 9, 0, 1)
    assert np.array_equal(tokens_d.cpu().numpy(), tokens)


def test_committed_translator_on_the_device_equals_numpy():
    params, bpe = load_model()
    texts = ["three hundred and forty-two", "nine hundred and ninety-nine thousand",
             "seventeen", "one hundred and one thousand, two hundred and three",
             "sixty-four thousand, five hundred and twelve"]
    ref = mt.translate(texts, params, bpe, beam_size=4)
    got = mt.translate(texts, params.map(on_device(torch.float32)), bpe, beam_size=4)
    assert got == ref

"""book/exercises/ch08.py: each checker accepts a reference solution written
here, refuses the mistakes a reader makes with their own message, and waits while
the answer is `...`."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch08  # noqa: E402

import mini_transformer as mt  # noqa: E402
from mini_transformer.torch.convert import encoder_layer_from_torch  # noqa: E402


# --- exercise 1: the big model's encoder layer ----------------------------------------

def _torch_count(d, h, d_ff):
    layer = torch.nn.TransformerEncoderLayer(d, h, d_ff, device="meta")
    return sum(p.numel() for p in layer.parameters())


def test_1_accepts_the_count_of_torch():
    layer = _torch_count(1024, 16, 4096)
    # by hand: 4·1024² + 4·1024 + 2·1024·4096 + 4096 + 1024 + 4·1024
    assert layer == 12_596_224
    assert ch08.check_1((layer, 6 * layer)).ok is True
    assert ch08.check_1([12_596_224, 75_577_344]).ok is True
    assert ch08.check_1(np.array([layer, 6 * layer])).ok is True


def test_1_names_the_mistakes():
    d, d_ff = 1024, 4096
    no_bias = 4 * d * d + 2 * d * d_ff + 2 * 2 * d          # projections, FFN, norms
    v = ch08.check_1((no_bias, 6 * no_bias))
    assert v.ok is False and v.mistake == "no-biases" and "bias" in v.message
    per_head = 16 * (4 * d * d + 4 * d) + 2 * d * d_ff + d_ff + d + 4 * d
    v = ch08.check_1((per_head, 6 * per_head))
    assert v.ok is False and v.mistake == "per-head" and "heads" in v.message
    no_norm = 4 * d * d + 4 * d + 2 * d * d_ff + d_ff + d
    v = ch08.check_1((no_norm, 6 * no_norm))
    assert v.ok is False and v.mistake == "no-layernorm" and "LayerNorm" in v.message
    layer = _torch_count(d, 16, d_ff)
    v = ch08.check_1((layer, 6 * layer + 37000 * d))       # the embedding added
    assert v.ok is False and v.mistake == "stack" and "stack" in v.message
    # W^O forgotten: attention counted as three projections (with or without its bias)
    for no_w_o in (layer - d * d - d, layer - d * d):
        v = ch08.check_1((no_w_o, 6 * no_w_o))
        assert v.ok is False and v.mistake == "no-W_O" and "W^O" in v.message
    v = ch08.check_1((6 * layer, layer))
    assert v.ok is False and v.mistake == "swapped"
    assert "12596224" not in v.message and "12,596,224" not in v.message


def test_1_a_missing_b_1_is_not_blamed_on_the_layernorms():
    # d_ff = 4 d_model: leaving out the FFN's first bias (4096 numbers) gives the same
    # count as leaving out the two LayerNorms (4 · 1024): the message names both
    d, d_ff = 1024, 4096
    no_b1 = 4 * d * d + 4 * d + 2 * d * d_ff + d + 4 * d
    v = ch08.check_1((no_b1, 6 * no_b1))
    assert v.ok is False and v.mistake == "no-layernorm"
    assert "b_1" in v.message and "LayerNorm" in v.message


def test_1_waits_for_an_answer():
    assert ch08.check_1(...).ok is None
    assert "No answer yet" in ch08.check_1(None).message


# --- exercise 4: a pre-LN stack with a final LayerNorm --------------------------------

def _layer_norm(h, gamma, beta, eps):            # by hand, not mt.layer_norm
    mu = h.mean(axis=-1, keepdims=True)
    var = ((h - mu) ** 2).mean(axis=-1, keepdims=True)
    return gamma * (h - mu) / np.sqrt(var + eps) + beta


def _params(torch_norm):
    return torch_norm.weight.detach().numpy(), torch_norm.bias.detach().numpy()


def reference(x, stack):
    # pre-LN, one layer at a time: x + MultiHead(LN1(x)), then x + FFN(LN2(x))
    for layer in stack.layers:
        p = encoder_layer_from_torch(layer)
        h = _layer_norm(x, p.norm1.gamma, p.norm1.beta, p.eps)
        x = x + mt.multi_head_attention(h, p.attn)[0]
        h = _layer_norm(x, p.norm2.gamma, p.norm2.beta, p.eps)
        x = x + mt.feed_forward(h, p.ffn)
    return _layer_norm(x, *_params(stack.norm), stack.norm.eps)


def test_4_accepts_a_reference_written_layer_by_layer():
    assert ch08.check_4(reference).ok is True


def test_4_accepts_torch_tensors():
    def as_tensor(x, stack):
        return torch.as_tensor(reference(x, stack))
    assert ch08.check_4(as_tensor).ok is True


def test_4_names_the_mistakes():
    def no_final_norm(x, stack):
        layers = [encoder_layer_from_torch(l) for l in stack.layers]
        return mt.encoder(x, layers, norm_first=True)

    def post_ln(x, stack):
        layers = [encoder_layer_from_torch(l) for l in stack.layers]
        out = mt.encoder(x, layers)                     # norm_first left at False
        return mt.layer_norm(out, *_params(stack.norm), stack.norm.eps)

    def default_eps(x, stack):
        layers = [encoder_layer_from_torch(l) for l in stack.layers]
        out = mt.encoder(x, layers, norm_first=True)
        return mt.layer_norm(out, *_params(stack.norm))

    def plain_norm(x, stack):
        layers = [encoder_layer_from_torch(l) for l in stack.layers]
        out = mt.encoder(x, layers, norm_first=True)
        d = out.shape[-1]
        return mt.layer_norm(out, np.ones(d), np.zeros(d), stack.norm.eps)

    for fn, key, word in ((no_final_norm, "no-final-norm", "final LayerNorm"),
                          (post_ln, "post-ln", "post-LN"),
                          (default_eps, "final-eps", "ε"),
                          (plain_norm, "final-norm-ones", "weight and bias")):
        v = ch08.check_4(fn)
        assert v.ok is False and v.mistake == key and word in v.message, (key, v)


def test_4_refuses_torch_own_output():
    # the stack's own forward, its layers' forwards, or torch's final LayerNorm: each
    # hands back torch's result instead of computing with the package
    def whole_stack(x, stack):
        with torch.no_grad():
            return stack(torch.as_tensor(x)).numpy()

    def layer_by_layer(x, stack):
        h = torch.as_tensor(x)
        with torch.no_grad():
            for layer in stack.layers:
                h = layer.forward(h)
            return stack.norm(h).numpy()

    def torch_final_norm(x, stack):
        layers = [encoder_layer_from_torch(l) for l in stack.layers]
        out = mt.encoder(x, layers, norm_first=True)
        with torch.no_grad():
            return stack.norm(torch.as_tensor(out)).numpy()

    def functional_norm(x, stack):
        layers = [encoder_layer_from_torch(l) for l in stack.layers]
        out = torch.as_tensor(mt.encoder(x, layers, norm_first=True))
        w, b = stack.norm.weight.detach(), stack.norm.bias.detach()
        return torch.nn.functional.layer_norm(out, out.shape[-1:], w, b,
                                              stack.norm.eps).numpy()

    for fn in (whole_stack, layer_by_layer, torch_final_norm, functional_norm):
        v = ch08.check_4(fn)
        assert v.ok is False and v.mistake == "reference-library", (fn.__name__, v)
        assert "mt.encoder" in v.message
    # the torch functions are torch's again after the check
    assert torch.nn.functional.layer_norm.__name__ == "layer_norm"
    assert ch08.check_4(reference).ok is True


def test_4_reports_an_error_and_an_unknown_mistake():
    def crashes(x, stack):
        return mt.encoder(x, stack.layers)              # torch layers, not params
    v = ch08.check_4(crashes)
    assert v.ok is False and v.mistake == "raises"

    def scaled(x, stack):
        return 2 * reference(x, stack)
    v = ch08.check_4(scaled)
    assert v.ok is False and v.mistake == "value"


def test_4_waits_for_an_answer():
    def stub(x, stack):
        raise NotImplementedError
    assert ch08.check_4(...).ok is None
    assert ch08.check_4(stub).ok is None


def test_4_leaves_torch_random_state_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    ch08.check_4(reference)
    assert torch.equal(torch.rand(3), expected)

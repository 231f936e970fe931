"""book/exercises/ch14.py: each checker accepts a solution written here independently
(the FFN's and LayerNorm's backward by hand in NumPy), names the mistake in answers written
as a reader who made it would write them, and refuses answers that let torch's autograd
compute the gradient."""

import sys
from pathlib import Path

import numpy as np
import torch

import mini_transformer as mt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch14  # noqa: E402


def ffn_backward_by_hand(x, p, g):
    """dX of FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 for the upstream gradient g."""
    pre = x @ p.W_1 + p.b_1
    return ((g @ p.W_2.T) * (pre > 0)) @ p.W_1.T


def ln_backward_by_hand(x, gamma, g, eps=1e-5):
    """dX of γ (x − μ)/√(σ² + ε) + β: (γg − mean(γg) − x̂ mean(γg x̂)) / √(σ² + ε)."""
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    xhat, gh = (x - mu) / np.sqrt(var + eps), g * gamma
    return (gh - gh.mean(-1, keepdims=True)
            - xhat * (gh * xhat).mean(-1, keepdims=True)) / np.sqrt(var + eps)


def ln_by_hand(x, gamma, beta, eps=1e-5):
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta


def ffn_by_hand(x, p):
    return np.maximum(0, x @ p.W_1 + p.b_1) @ p.W_2 + p.b_2


def autograd_answer(x, p, g):
    """The gradient, computed by torch's autograd (a refused answer)."""
    tx = torch.tensor(x, requires_grad=True)
    (tx + mt.feed_forward(tx, p.map(torch.tensor))).backward(torch.tensor(g))
    return tx.grad.numpy()


def assert_wrong(verdict, key):
    assert verdict.ok is False and verdict.mistake == key, verdict.message


# --- 1 ----------------------------------------------------------------------------------------

def test_1_right():
    assert ch14.check_1(lambda x, p, g: g + ffn_backward_by_hand(x, p, g)).ok is True
    assert ch14.check_1(
        lambda x, p, g: g + mt.feed_forward_backward(x, p, g)[0]).ok is True


def test_1_unanswered():
    assert ch14.check_1(...).ok is None


def test_1_mistakes():
    assert_wrong(ch14.check_1(ffn_backward_by_hand), "no-identity")
    assert_wrong(ch14.check_1(lambda x, p, g: g), "identity-only")
    assert_wrong(ch14.check_1(lambda x, p, g: g - ffn_backward_by_hand(x, p, g)), "minus")
    assert_wrong(ch14.check_1(
        lambda x, p, g: g + ffn_backward_by_hand(x + ffn_by_hand(x, p), p, g)), "at-output")
    v = ch14.check_1(lambda x, p, g: 2 * g)
    assert v.ok is False and "entries differ" in v.message


def test_1_refuses_torch():
    v = ch14.check_1(autograd_answer)
    assert_wrong(v, "torch")
    assert "autograd" in v.message and "mt.feed_forward_backward" in v.message
    v = ch14.check_1(lambda x, p, g: torch.tensor(g + ffn_backward_by_hand(x, p, g)))
    assert_wrong(v, "torch")
    assert "torch tensor" in v.message
    # the guard is lifted afterwards: autograd works again
    t = torch.ones(2, requires_grad=True)
    (t * t).sum().backward()
    assert torch.equal(t.grad, torch.full((2,), 2.0))


# --- 2 ----------------------------------------------------------------------------------------

def pre_ln_by_hand(x, gamma, beta, p, g):
    n = ln_by_hand(x, gamma, beta)
    return g + ln_backward_by_hand(x, gamma, ffn_backward_by_hand(n, p, g))


def test_2_right():
    assert ch14.check_2(pre_ln_by_hand).ok is True


def test_2_mistakes():
    def branch_only(x, gamma, beta, p, g):
        return pre_ln_by_hand(x, gamma, beta, p, g) - g

    def no_ln(x, gamma, beta, p, g):
        return g + ffn_backward_by_hand(ln_by_hand(x, gamma, beta), p, g)

    def ffn_at_x(x, gamma, beta, p, g):
        return g + ln_backward_by_hand(x, gamma, ffn_backward_by_hand(x, p, g))

    def post_ln(x, gamma, beta, p, g):
        g_r = ln_backward_by_hand(x + ffn_by_hand(x, p), gamma, g)
        return g_r + ffn_backward_by_hand(x, p, g_r)

    assert_wrong(ch14.check_2(branch_only), "no-identity")
    assert_wrong(ch14.check_2(no_ln), "no-ln-backward")
    assert_wrong(ch14.check_2(ffn_at_x), "ffn-at-x")
    assert_wrong(ch14.check_2(post_ln), "post-ln")


def test_2_layer_norm_backward_at_the_wrong_place_or_without_gamma_is_named():
    def ln_at_output(x, gamma, beta, p, g):
        n = ln_by_hand(x, gamma, beta)
        return g + ln_backward_by_hand(n, gamma, ffn_backward_by_hand(n, p, g))

    def no_gamma(x, gamma, beta, p, g):
        n = ln_by_hand(x, gamma, beta)
        return g + ln_backward_by_hand(x, np.ones_like(gamma), ffn_backward_by_hand(n, p, g))

    assert_wrong(ch14.check_2(ln_at_output), "ln-at-output")
    assert_wrong(ch14.check_2(no_gamma), "ln-without-gamma")


def test_2_refuses_torch():
    def autograd_pre_ln(x, gamma, beta, p, g):
        tx = torch.tensor(x, requires_grad=True)
        y = tx + mt.feed_forward(mt.layer_norm(tx, torch.tensor(gamma), torch.tensor(beta)),
                                 p.map(torch.tensor))
        return torch.autograd.grad(y, tx, torch.tensor(g))[0].numpy()

    v = ch14.check_2(autograd_pre_ln)
    assert_wrong(v, "torch")
    assert "mt.layer_norm_backward" in v.message


# --- 3 ----------------------------------------------------------------------------------------

def stack_inputs(x, layers, norm_first):
    inputs = []
    for layer in layers:
        inputs.append(x)
        x = mt.encoder_layer(x, layer, norm_first=norm_first)
    return inputs


def test_3_right():
    def stack_backward(x, layers, g, norm_first):
        for h, layer in zip(reversed(stack_inputs(x, layers, norm_first)), reversed(layers)):
            g = mt.encoder_layer_backward(h, layer, g, norm_first=norm_first)[0]
        return g

    assert ch14.check_3(stack_backward).ok is True


def test_3_mistakes():
    def at_x(x, layers, g, norm_first):
        for layer in reversed(layers):
            g = mt.encoder_layer_backward(x, layer, g, norm_first=norm_first)[0]
        return g

    def forward_order(x, layers, g, norm_first):
        for h, layer in zip(stack_inputs(x, layers, norm_first), layers):
            g = mt.encoder_layer_backward(h, layer, g, norm_first=norm_first)[0]
        return g

    def post_ln_always(x, layers, g, norm_first):
        for h, layer in zip(reversed(stack_inputs(x, layers, False)), reversed(layers)):
            g = mt.encoder_layer_backward(h, layer, g)[0]
        return g

    assert_wrong(ch14.check_3(at_x), "all-at-x")
    assert_wrong(ch14.check_3(forward_order), "forward-order")
    assert_wrong(ch14.check_3(post_ln_always), "placement")


def test_3_norm_first_forgotten_in_the_backward_is_named():
    def forgotten(x, layers, g, norm_first):
        for h, layer in zip(reversed(stack_inputs(x, layers, norm_first)), reversed(layers)):
            g = mt.encoder_layer_backward(h, layer, g)[0]
        return g

    v = ch14.check_3(forgotten)
    assert_wrong(v, "placement-backward")
    assert "encoder_layer_backward" in v.message


def test_3_refuses_torch():
    def autograd_stack(x, layers, g, norm_first):
        tx = torch.tensor(x, requires_grad=True)
        h = tx
        for layer in layers:
            h = mt.encoder_layer(h, layer.map(torch.tensor), norm_first=norm_first)
        h.backward(torch.tensor(g))
        return tx.grad.numpy()

    assert_wrong(ch14.check_3(autograd_stack), "torch")

"""The paper's optimiser: Adam (β₁ = 0.9, β₂ = 0.98, ε = 1e-9) against torch.optim.Adam, and
the learning-rate schedule of eq. (3) against values computed by hand."""

import dataclasses
import math

import numpy as np
import pytest
import torch

import mini_transformer as mt
from mini_transformer.optim import AdamState, adam_step, learning_rate
from mini_transformer.tree import tree_leaves, tree_map


def test_learning_rate_by_hand():
    # eq. (3): d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
    assert learning_rate(1, 512) == pytest.approx(512**-0.5 * 4000**-1.5, rel=1e-15)
    assert learning_rate(4000, 512) == pytest.approx(1 / math.sqrt(512 * 4000), rel=1e-15)
    assert learning_rate(16000, 512) == pytest.approx(1 / math.sqrt(512 * 16000), rel=1e-15)
    # linear warm-up: twice the step, twice the rate
    assert learning_rate(2000, 512) == pytest.approx(learning_rate(1000, 512) * 2, rel=1e-15)
    peak = max(learning_rate(s, 512) for s in range(1, 10001))
    assert peak == learning_rate(4000, 512)
    assert round(peak, 7) == 0.0006988  # base model: 6.99e-4 at step 4000


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_learning_rate_refuses_bad_steps(bad):
    with pytest.raises(ValueError, match="integer >= 1"):
        learning_rate(bad, 512)


def _container(rng):
    return mt.EncoderLayerParams.random(rng, d_model=8, n_heads=2, d_ff=16)


def test_adam_equals_torch_optim_adam(rng):
    params = _container(rng)
    leaves = tree_leaves(params)
    torch_params = [torch.tensor(a, requires_grad=True) for a in leaves]
    opt = torch.optim.Adam(torch_params, lr=1e-2, betas=(0.9, 0.98), eps=1e-9)
    state = AdamState.zeros_like(params)
    for step in range(1, 6):
        grads = tree_map(lambda a: rng.normal(size=a.shape) * 10.0 ** rng.integers(-3, 2),
                         params)
        for p, g in zip(torch_params, tree_leaves(grads)):
            p.grad = torch.tensor(g)
        opt.step()
        lr = 1e-2
        params, state = adam_step(params, grads, state, lr)
        assert state.step == step
        err = max(float(np.max(np.abs(a - p.detach().numpy())))
                  for a, p in zip(tree_leaves(params), torch_params))
        assert err < 1e-12, (step, err)


def test_adam_runs_on_torch_tensors_and_keeps_the_layout(rng):
    params = _container(rng).map(torch.as_tensor)
    grads = params.map(torch.ones_like)
    new, state = adam_step(params, grads, AdamState.zeros_like(params), lr=0.1)
    assert type(new) is type(params) and new.eps == params.eps
    # first step: m̂ = g, v̂ = g², so every weight moves by lr * 1 / (1 + 1e-9)
    moved = new.ffn.W_1 - params.ffn.W_1
    assert torch.allclose(moved, torch.full_like(moved, -0.1 / (1 + 1e-9)), atol=1e-15, rtol=0)


def test_adam_refuses_a_gradient_of_another_shape(rng):
    params = _container(rng)
    grads = tree_map(np.zeros_like, params)
    grads = dataclasses.replace(grads, norm1=mt.LayerNormParams(np.zeros(3), grads.norm1.beta))
    with pytest.raises(ValueError, match=r"gradient of shape \(3,\) for a parameter of shape \(8,\)"):
        adam_step(params, grads, AdamState.zeros_like(params), lr=0.1)

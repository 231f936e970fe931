"""The training step's loss (``cross_entropy_with_grad``: the target's log-probability
gathered, the softmax computed once; its float64 NumPy oracle tests are beside
``cross_entropy``'s in test_backward.py) and LayerNorm's backward from the forward's saved
x̂ and 1/σ, against torch.nn.functional and torch.autograd (float64, the backward
tests' tolerance)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import max_abs, t64

from mini_transformer.layernorm import layer_norm, layer_norm_backward
from mini_transformer.loss import cross_entropy_with_grad

TOL = 1e-10


def leaf(a):
    return t64(a, requires_grad=True)


def test_cross_entropy_with_grad_float32_and_torch_tensors(rng):
    logits, targets = rng.normal(size=(4, 6)), rng.integers(0, 6, size=4)
    z = leaf(logits)
    torch.nn.functional.cross_entropy(z, torch.as_tensor(targets),
                                      label_smoothing=0.1).backward()
    loss32, grad32 = cross_entropy_with_grad(logits.astype(np.float32), targets, 0.1)
    assert grad32.dtype == np.float32 and max_abs(grad32, z.grad) < 1e-6
    loss_t, grad_t = cross_entropy_with_grad(t64(logits), torch.as_tensor(targets), 0.1)
    assert isinstance(grad_t, torch.Tensor) and max_abs(grad_t, z.grad) < TOL


@pytest.mark.parametrize("targets, match", [
    (np.array([8, 1, 2]), r"targets must lie in \[0, vocab_size=7\)"),
    (np.array([1, 2]), "targets must have the shape of logits"),
    (np.array([1.0, 2.0, 3.0]), "targets must be integer token ids"),
])
def test_cross_entropy_with_grad_refuses(rng, targets, match):
    with pytest.raises(ValueError, match=match):
        cross_entropy_with_grad(rng.normal(size=(3, 7)), targets)


@pytest.mark.parametrize("shape", [(6,), (4, 6), (2, 3, 6)])
def test_layer_norm_backward_from_saved_against_autograd(rng, shape):
    x, g = rng.normal(size=shape), rng.normal(size=shape)
    gamma, beta = 1 + rng.normal(size=6) * 0.1, rng.normal(size=6)
    tx, tg, tb = leaf(x), leaf(gamma), leaf(beta)
    want = torch.nn.functional.layer_norm(tx, (6,), tg, tb, eps=1e-5)
    want.backward(t64(g))
    saved = {}
    assert max_abs(layer_norm(x, gamma, beta, saved=saved), want) < TOL
    assert set(saved) == {"x_hat", "inv_sigma"}
    for a, t in zip(layer_norm_backward(x, gamma, g, saved=saved), (tx, tg, tb),
                    strict=True):
        assert max_abs(a, t.grad) < TOL


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_gathered_loss_equals_the_dense_definition_and_torch(rng, label_smoothing):
    """The loss and gradient every public function computes (the target's log p
    gathered) equal the readable dense form −Σ_ν ỹ_ν log p_ν and (p − ỹ) / n with
    ỹ = ``smoothed_targets``, and torch's cross_entropy with autograd."""
    from mini_transformer import cross_entropy, cross_entropy_backward
    from mini_transformer.loss import smoothed_targets
    from mini_transformer.softmax import log_softmax

    logits, targets = rng.normal(size=(2, 4, 9)) * 3, rng.integers(0, 9, size=(2, 4))
    targets[1, 2] = -100
    counted = targets != -100
    q = smoothed_targets(targets, 9, label_smoothing, logits)
    log_p = log_softmax(logits)
    dense_loss = np.sum(-np.sum(q * log_p, axis=-1)[counted]) / counted.sum()
    dense_grad = np.where(counted[..., None], (np.exp(log_p) - q) / counted.sum(), 0.0)
    z = leaf(logits)
    want = torch.nn.functional.cross_entropy(
        z.reshape(-1, 9), torch.as_tensor(targets).ravel(),
        label_smoothing=label_smoothing, ignore_index=-100)
    want.backward()
    assert abs(dense_loss - want.item()) < TOL and max_abs(dense_grad, z.grad) < TOL
    loss = cross_entropy(logits, targets, label_smoothing, -100)
    grad = cross_entropy_backward(logits, targets, label_smoothing, -100)
    assert abs(loss - dense_loss) < TOL and max_abs(grad, dense_grad) < TOL
    assert abs(loss - want.item()) < TOL and max_abs(grad, z.grad) < TOL

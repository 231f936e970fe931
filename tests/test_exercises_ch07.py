"""book/exercises/ch07.py: each checker accepts a reference answer written here
by another route, and names the mistake of wrong answers written as a reader would
make them."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch07  # noqa: E402


def refused(verdict, key, word):
    assert verdict.ok is False, verdict.message
    assert verdict.mistake == key, verdict.message
    assert word in verdict.message


# --- exercise 1: parameters of the big model's FFN ------------------------------------

def test_1_reference_is_right():
    linears = (torch.nn.Linear(1024, 4096), torch.nn.Linear(4096, 1024))
    count = sum(p.numel() for lin in linears for p in lin.parameters())
    assert count == 2 * 1024 * 4096 + 4096 + 1024 == 8_393_728
    assert ch07.check_1(count).ok is True


@pytest.mark.parametrize("answer, key, word", [
    (2 * 1024 * 4096, "no-biases", "weights only"),
    (2 * 1024 * 4096 + 4096, "only-b_1", "b_2"),
    (2 * 1024 * 4096 + 1024, "only-b_2", "b_1"),
    (2 * 1024 * 4096 + 2 * 1024, "bias-sizes", "d_ff entries"),
    (1024 * 4096 + 4096, "one-layer", "two layers"),
    (2 * 512 * 2048 + 2048 + 512, "base-model", "base model"),
    (8_000_000, "value", "off"),
])
def test_1_mistakes_are_named(answer, key, word):
    verdict = ch07.check_1(answer)
    refused(verdict, key, word)
    assert "8393728" not in verdict.message.replace(",", "")


def test_1_unanswered():
    assert ch07.check_1(...).ok is None


# --- exercise 2: without the ReLU, one affine map -------------------------------------

def by_loops(W_1, b_1, W_2, b_2):
    # W[i, k] = sum_j W_1[i, j] W_2[j, k];  b[k] = sum_j b_1[j] W_2[j, k] + b_2[k]
    d, d_ff = W_1.shape
    W = np.zeros((d, d))
    b = b_2.copy()
    for j in range(d_ff):
        for k in range(d):
            b[k] += b_1[j] * W_2[j, k]
            for i in range(d):
                W[i, k] += W_1[i, j] * W_2[j, k]
    return W, b


def test_2_reference_is_right():
    assert ch07.check_2(by_loops).ok is True
    # and it is the ReLU-free FFN: torch's two Linear layers, without the ReLU between
    rng = np.random.default_rng(0)
    W_1, b_1 = rng.normal(size=(3, 7)), rng.normal(size=7)
    W_2, b_2 = rng.normal(size=(7, 3)), rng.normal(size=3)
    l1, l2 = torch.nn.Linear(3, 7).double(), torch.nn.Linear(7, 3).double()
    with torch.no_grad():
        l1.weight.copy_(torch.as_tensor(W_1.T))
        l1.bias.copy_(torch.as_tensor(b_1))
        l2.weight.copy_(torch.as_tensor(W_2.T))
        l2.bias.copy_(torch.as_tensor(b_2))
        x = rng.normal(size=(5, 3))
        two_layers = l2(l1(torch.as_tensor(x))).numpy()
    W, b = by_loops(W_1, b_1, W_2, b_2)
    assert np.max(np.abs(x @ W + b - two_layers)) < 1e-12


@pytest.mark.parametrize("fn, key, word", [
    (lambda W_1, b_1, W_2, b_2: (W_2 @ W_1, b_1 @ W_2 + b_2), "W-order", "W_2 W_1"),
    (lambda W_1, b_1, W_2, b_2: (W_1, b_1 @ W_2 + b_2), "W-first-layer", "W_1 alone"),
    (lambda W_1, b_1, W_2, b_2: ((W_1 @ W_2).T, b_1 @ W_2 + b_2), "transposed",
     "transpose"),
    (lambda W_1, b_1, W_2, b_2: (W_1 @ W_2, b_1 @ W_2), "b-no-b_2", "b_2"),
    (lambda W_1, b_1, W_2, b_2: (W_1 @ W_2, b_2), "b-no-b_1", "b_1"),
    (lambda W_1, b_1, W_2, b_2: (W_1 @ W_2, b_1 + b_2), "raises", "ValueError"),
    (lambda W_1, b_1, W_2, b_2: W_1 @ W_2, "form", "(W, b)"),
])
def test_2_mistakes_are_named(fn, key, word):
    refused(ch07.check_2(fn), key, word)


def test_2_unanswered():
    def stub(W_1, b_1, W_2, b_2):
        raise NotImplementedError

    assert ch07.check_2(stub).ok is None
    assert ch07.check_2(...).ok is None
    assert ch07.check_2(3).ok is False

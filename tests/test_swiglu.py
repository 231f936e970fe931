"""swiglu and its backward against torch (F.silu, torch.autograd) and hand values."""

import math

import numpy as np
import pytest
import torch

from helpers import TOL32, TOL64, max_abs, t64
from mini_transformer import silu, swiglu, swiglu_backward


def test_silu_by_hand():
    # SiLU(a) = a / (1 + e^-a): 0 at 0, 1 / (1 + 1/e) at 1, -1 / (1 + e) at -1
    out = silu(np.array([0.0, 1.0, -1.0, -800.0, 800.0]))
    np.testing.assert_allclose(
        out, [0.0, 1 / (1 + math.exp(-1)), -1 / (1 + math.e), -0.0, 800.0], rtol=1e-15)


def test_one_position_by_hand():
    # d_model = 1, d_ff = 2: x = 2, W_1 = [0, 1], W_3 = [1, 1], W_2 = [[1], [2]]
    # x W_1 = [0, 2], SiLU = [0, 2 σ(2)], x W_3 = [2, 2], product [0, 4 σ(2)], out 8 σ(2)
    sig2 = 1 / (1 + math.exp(-2))
    out = swiglu(np.array([2.0]), np.array([[0.0, 1.0]]), np.array([[1.0, 1.0]]),
                 np.array([[1.0], [2.0]]))
    np.testing.assert_allclose(out, [8 * sig2], rtol=1e-15)


def weights(rng, d_model=6, d_ff=10):
    return (rng.normal(size=(d_model, d_ff)), rng.normal(size=(d_model, d_ff)),
            rng.normal(size=(d_ff, d_model)))


def torch_swiglu(x, w, v, w2):
    return (torch.nn.functional.silu(x @ w) * (x @ v)) @ w2


@pytest.mark.parametrize("shape", [(6,), (4, 6), (2, 3, 6)])
def test_matches_torch(shape, rng):
    x = rng.normal(size=shape)
    w, v, w2 = weights(rng)
    for dtype, np_dtype, tol in ((torch.float64, np.float64, TOL64),
                                 (torch.float32, np.float32, 10 * TOL32)):
        expected = torch_swiglu(*(torch.tensor(a, dtype=dtype) for a in (x, w, v, w2)))
        args = [a.astype(np_dtype) for a in (x, w, v, w2)]
        out = swiglu(*args)
        assert out.dtype == np_dtype and max_abs(out, expected) < tol
        assert max_abs(swiglu(*(torch.tensor(a) for a in args)), expected) < tol


@pytest.mark.parametrize("shape", [(6,), (4, 6), (2, 3, 6)])
def test_backward_matches_autograd(shape, rng):
    x, g = rng.normal(size=shape), rng.normal(size=shape)
    w, v, w2 = weights(rng)
    leaves = [t64(a, requires_grad=True) for a in (x, w, v, w2)]
    torch_swiglu(*leaves).backward(t64(g))
    for lib in (np.asarray, t64):
        saved = {}
        swiglu(*(lib(a) for a in (x, w, v, w2)), saved=saved)
        for kept in (None, saved):
            grads = swiglu_backward(*(lib(a) for a in (x, w, v, w2)), lib(g), saved=kept)
            for mine, leaf in zip(grads, leaves):
                assert max_abs(mine, leaf.grad) < TOL64


def test_hidden_width_that_keeps_the_parameter_count():
    # three d_model × d_ff matrices against two of the ReLU FFN's d_model × 4 d_model
    d_model = 512
    d_ff = 2 * 4 * d_model // 3
    relu = 2 * d_model * 4 * d_model
    w, v, w2 = (np.zeros((d_model, d_ff)), np.zeros((d_model, d_ff)),
                np.zeros((d_ff, d_model)))
    assert d_ff == 1365
    assert abs(w.size + v.size + w2.size - relu) <= 3 * d_model


@pytest.mark.parametrize("call, match", [
    (lambda w, v, w2: swiglu(np.ones((2, 5)), w, v, w2), "x has 5 features"),
    (lambda w, v, w2: swiglu(np.ones((2, 6)), w, v[:, :3], w2), "v must have w's shape"),
    (lambda w, v, w2: swiglu(np.ones((2, 6)), w, v, w2.T), "w2 must have shape"),
    (lambda w, v, w2: swiglu(np.ones((2, 6)), w[None], v, w2), "w must be a matrix"),
    (lambda w, v, w2: swiglu(np.ones((2, 6)), w, v, torch.tensor(w2)), "mix array"),
    (lambda w, v, w2: swiglu_backward(np.ones((2, 6)), w, v, w2, np.ones((3, 6))),
     "grad_output must have the output's shape"),
])
def test_refused(call, match, rng):
    with pytest.raises(ValueError, match=match):
        call(*weights(rng))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_equals_cpu(rng):
    x, g = rng.normal(size=(2, 3, 6)), rng.normal(size=(2, 3, 6))
    w, v, w2 = weights(rng)
    cpu = [swiglu(x, w, v, w2), *swiglu_backward(x, w, v, w2, g)]
    on = [t64(a, device="cuda") for a in (x, w, v, w2, g)]
    cuda = [swiglu(*on[:4]), *swiglu_backward(*on)]
    for a, b in zip(cpu, cuda):
        assert b.device.type == "cuda" and max_abs(a, b) < TOL64

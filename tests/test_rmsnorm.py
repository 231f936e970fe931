"""rms_norm and its backward against torch.nn.RMSNorm, torch.autograd and hand values."""

import math

import numpy as np
import pytest
import torch

from helpers import TOL32, TOL64, max_abs, t64
from mini_transformer import rms_norm, rms_norm_backward


def test_three_four_by_hand():
    # x = [3, 4]: mean(x²) = (9 + 16) / 2 = 12.5, so x / √12.5 = [3, 4] / 3.5355...
    out = rms_norm(np.array([3.0, 4.0]), np.ones(2), eps=0.0)
    np.testing.assert_allclose(out, [3 / math.sqrt(12.5), 4 / math.sqrt(12.5)],
                               rtol=1e-15)
    # no mean removed: a constant row [2, 2] becomes [1, 1], not [0, 0] as in LayerNorm
    np.testing.assert_allclose(rms_norm(np.full(2, 2.0), np.ones(2), eps=0.0), [1, 1])


def test_eps_inside_the_root():
    x = np.array([1.0, 2.0, 3.0])   # mean(x²) = 14/3
    out = rms_norm(x, np.ones(3), eps=0.5)
    np.testing.assert_allclose(out, x / math.sqrt(14 / 3 + 0.5), rtol=1e-15)


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 4, 16)])
@pytest.mark.parametrize("eps", [1e-6, 1e-12, 0.1])
def test_matches_torch_rms_norm(shape, eps, rng):
    d = shape[-1]
    x = rng.normal(size=shape) * 3 + 1
    gamma = 1 + rng.normal(size=d) * 0.3
    for dtype, np_dtype, tol in ((torch.float64, np.float64, TOL64),
                                 (torch.float32, np.float32, TOL32)):
        norm = torch.nn.RMSNorm(d, eps=eps, dtype=dtype)
        with torch.no_grad():
            norm.weight.copy_(t64(gamma))
        expected = norm(torch.tensor(x, dtype=dtype))
        args = [a.astype(np_dtype) for a in (x, gamma)]
        out = rms_norm(*args, eps=eps)
        assert out.dtype == np_dtype
        assert max_abs(out, expected) < tol
        out_t = rms_norm(*(torch.tensor(a) for a in args), eps=eps)
        assert out_t.dtype == dtype and max_abs(out_t, expected) < tol


@pytest.mark.parametrize("shape", [(6,), (3, 5), (2, 4, 16)])
def test_backward_matches_autograd(shape, rng):
    d = shape[-1]
    x, g = rng.normal(size=shape), rng.normal(size=shape)
    gamma = 1 + rng.normal(size=d) * 0.3
    norm = torch.nn.RMSNorm(d, eps=1e-6, dtype=torch.float64)
    with torch.no_grad():
        norm.weight.copy_(t64(gamma))
    xt = t64(x, requires_grad=True)
    norm(xt).backward(t64(g))
    for lib in (np.asarray, t64):
        grad_x, grad_gamma = rms_norm_backward(lib(x), lib(gamma), lib(g), eps=1e-6)
        assert max_abs(grad_x, xt.grad) < TOL64
        assert max_abs(grad_gamma, norm.weight.grad) < TOL64


def test_backward_by_finite_differences(rng):
    x, gamma, g = rng.normal(size=5), rng.normal(size=5), rng.normal(size=5)
    grad_x, _ = rms_norm_backward(x, gamma, g, eps=1e-3)
    delta = 1e-6
    for i in range(5):
        e = np.zeros(5)
        e[i] = delta
        slope = (rms_norm(x + e, gamma, 1e-3) - rms_norm(x - e, gamma, 1e-3)) @ g / (2 * delta)
        assert abs(slope - grad_x[i]) < 1e-7


@pytest.mark.parametrize("call, match", [
    (lambda: rms_norm(np.ones((2, 3)), np.ones(4)), r"gamma must have shape \(3,\)"),
    (lambda: rms_norm(np.ones(3), np.ones(3), eps=-1.0), "eps must be a number >= 0"),
    (lambda: rms_norm(np.ones(3), np.ones(3), eps="1e-6"), "eps must be a number"),
    (lambda: rms_norm(np.ones((2, 0)), np.ones(0)), "empty"),
    (lambda: rms_norm(np.ones(3, dtype=int), np.ones(3)), "real floating"),
    (lambda: rms_norm(np.ones(3), torch.ones(3, dtype=torch.float64)), "mix array"),
    (lambda: rms_norm_backward(np.ones((2, 3)), np.ones(3), np.ones(3)),
     "grad_output must have x's shape"),
])
def test_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_equals_cpu(rng):
    x, g = rng.normal(size=(3, 8)), rng.normal(size=(3, 8))
    gamma = 1 + rng.normal(size=8) * 0.3
    cpu = [rms_norm(t64(x), t64(gamma)), *rms_norm_backward(t64(x), t64(gamma), t64(g))]
    cuda = [rms_norm(t64(x, device="cuda"), t64(gamma, device="cuda")),
            *rms_norm_backward(*(t64(a, device="cuda") for a in (x, gamma, g)))]
    for a, b in zip(cpu, cuda):
        assert b.device.type == "cuda" and max_abs(a, b) < TOL64

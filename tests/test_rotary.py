"""rotary_embedding against a hand-written complex-number rotation and torch.autograd."""

import math

import numpy as np
import pytest
import torch

from helpers import TOL32, TOL64, max_abs, t64
from mini_transformer import rotary_angles, rotary_embedding, rotary_embedding_backward


def by_complex_numbers(x, positions, base=10000.0):
    """Pair i of row pos as the complex number x_2i + i x_2i+1, times e^(i pos ω_i)."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    out = np.empty_like(x)
    for index in np.ndindex(*x.shape[:-1]):
        pos = np.broadcast_to(positions, x.shape[:-1])[index]
        for i in range(d // 2):
            z = complex(x[index][2 * i], x[index][2 * i + 1])
            z *= complex(math.cos(pos * base ** (-2 * i / d)),
                         math.sin(pos * base ** (-2 * i / d)))
            out[index][2 * i], out[index][2 * i + 1] = z.real, z.imag
    return out


def test_quarter_turn_by_hand():
    # d = 2, ω_0 = 1; position π/2 turns (1, 0) to (0, 1) and (0, 1) to (−1, 0)
    out = rotary_embedding(np.eye(2), [math.pi / 2, math.pi / 2])
    np.testing.assert_allclose(out, [[0, 1], [-1, 0]], atol=1e-16)
    # d = 4: ω = (1, 1/100); position 100 turns the second pair by exactly 1 radian
    x = np.array([[0.0, 0.0, 1.0, 0.0]])
    np.testing.assert_allclose(rotary_embedding(x, [100]),
                               [[0, 0, math.cos(1), math.sin(1)]], rtol=1e-14)


@pytest.mark.parametrize("shape", [(5, 8), (2, 3, 6, 4), (1, 2)])
@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_matches_complex_rotation(shape, base, rng):
    x = rng.normal(size=shape)
    positions = np.arange(shape[-2]) * 3 + 1
    expected = by_complex_numbers(x, positions, base)
    assert max_abs(rotary_embedding(x, positions, base), expected) < TOL64
    assert max_abs(rotary_embedding(t64(x), positions, base), expected) < TOL64
    assert max_abs(rotary_embedding(t64(x), torch.tensor(positions), base),
                   expected) < TOL64
    out32 = rotary_embedding(x.astype(np.float32), positions, base)
    assert out32.dtype == np.float32 and max_abs(out32, expected) < TOL32


def test_positions_per_row_broadcast(rng):
    x = rng.normal(size=(2, 3, 4))
    positions = np.array([[0, 1, 2], [7, 8, 9]])          # one row of positions per batch
    assert max_abs(rotary_embedding(x, positions), by_complex_numbers(x, positions)) < TOL64


def test_score_depends_only_on_the_distance(rng):
    q, k = rng.normal(size=16), rng.normal(size=16)
    scores = {}
    for m in range(0, 40, 3):
        for n in range(0, 40, 5):
            qm = rotary_embedding(q[None], [m])[0]
            kn = rotary_embedding(k[None], [n])[0]
            scores.setdefault(m - n, []).append(qm @ kn)
    assert all(np.ptp(s) < 1e-12 for s in scores.values())
    assert np.ptp([s[0] for s in scores.values()]) > 0.1   # but it does vary with m - n


def test_angles(rng):
    theta = rotary_angles(np.array([0, 2]), 4)
    np.testing.assert_allclose(theta, [[0, 0], [2, 0.02]], rtol=1e-15)


@pytest.mark.parametrize("shape", [(5, 8), (2, 3, 6, 4)])
def test_backward_matches_autograd(shape, rng):
    x, g = rng.normal(size=shape), rng.normal(size=shape)
    positions = np.arange(shape[-2]) + 2
    xt = t64(x, requires_grad=True)
    rotary_embedding(xt, positions).backward(t64(g))   # autograd through the package
    assert max_abs(rotary_embedding_backward(g, positions), xt.grad) < TOL64
    assert max_abs(rotary_embedding_backward(t64(g), positions), xt.grad) < TOL64
    # and through the complex-number rotation, an independent route
    z = torch.complex(t64(x[..., 0::2]), t64(x[..., 1::2])).requires_grad_(True)
    d = shape[-1]
    theta = t64(positions[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d))
    w = z * torch.polar(torch.ones_like(theta), theta)
    gz = torch.complex(t64(g[..., 0::2]), t64(g[..., 1::2]))
    (w.real * gz.real + w.imag * gz.imag).sum().backward()
    expected = torch.stack([z.grad.real, z.grad.imag], dim=-1).reshape(shape)
    assert max_abs(rotary_embedding_backward(g, positions), expected) < TOL64


@pytest.mark.parametrize("call, match", [
    (lambda: rotary_embedding(np.ones((3, 5)), np.arange(3)), "even, non-zero length"),
    (lambda: rotary_embedding(np.ones(4), [0]), "rank >= 2"),
    (lambda: rotary_embedding(np.ones((3, 4)), np.arange(4)), "do not broadcast"),
    (lambda: rotary_embedding(np.ones((3, 4)), np.arange(3), base=0.0), "base must be"),
    (lambda: rotary_embedding(np.ones((3, 4)), np.ones(3, dtype=bool)),
     "integer or real"),
    (lambda: rotary_embedding(np.ones((3, 4)), [0, 1, np.nan]), "finite"),
    (lambda: rotary_embedding(np.ones((3, 4)), torch.arange(3)), "torch positions"),
    (lambda: rotary_embedding(np.ones((3, 4), dtype=int), np.arange(3)), "real floating"),
    (lambda: rotary_angles([0, 1], 3), "even integer"),
])
def test_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_equals_cpu(rng):
    x, positions = rng.normal(size=(2, 5, 8)), np.arange(5) * 11
    for pos in (positions, torch.as_tensor(positions, device="cuda")):
        out = rotary_embedding(t64(x, device="cuda"), pos)
        back = rotary_embedding_backward(t64(x, device="cuda"), pos)
        assert out.device.type == back.device.type == "cuda"
        assert max_abs(out, by_complex_numbers(x, positions)) < TOL64
        assert max_abs(back, rotary_embedding_backward(x, positions)) < TOL64

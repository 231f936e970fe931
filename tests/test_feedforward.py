"""feed_forward: max(0, x W_1 + b_1) W_2 + b_2, by hand and against torch.nn."""

import numpy as np
import pytest
import torch

from helpers import TOL32, TOL64, max_abs, t64
from mini_transformer import FeedForwardParams, feed_forward


def hand_params():
    # d_model = 2, d_ff = 2: W_1 = I, b_1 = 0, W_2 = [[2, 3], [4, 5]], b_2 = [1/2, 1/2]
    return FeedForwardParams(W_1=np.eye(2), b_1=np.zeros(2),
                             W_2=np.array([[2.0, 3.0], [4.0, 5.0]]), b_2=np.full(2, 0.5))


def test_two_tokens_by_hand():
    # token 1: x = [1, -2]  -> ReLU([1, -2]) = [1, 0] -> [1, 0] W_2 = [2, 3]  -> [2.5, 3.5]
    # token 2: x = [-1, 3]  -> ReLU([-1, 3]) = [0, 3] -> [0, 3] W_2 = [12, 15] -> [12.5, 15.5]
    out = feed_forward(np.array([[1.0, -2.0], [-1.0, 3.0]]), hand_params())
    np.testing.assert_array_equal(out, [[2.5, 3.5], [12.5, 15.5]])


def test_relu_cuts_at_zero_including_b_1():
    # b_1 = [-1, 1]: x = [0.5, 0.5] -> ReLU([-0.5, 1.5]) = [0, 1.5] -> [6, 7.5] + 0.5
    p = hand_params()
    p = FeedForwardParams(W_1=p.W_1, b_1=np.array([-1.0, 1.0]), W_2=p.W_2, b_2=p.b_2)
    np.testing.assert_array_equal(feed_forward(np.array([[0.5, 0.5]]), p), [[6.5, 8.0]])


def test_position_wise(rng):
    # each position alone gives the same row: no mixing between positions
    p = FeedForwardParams.random(rng, d_model=6, d_ff=10)
    x = rng.normal(size=(2, 5, 6))
    out = feed_forward(x, p)
    for b in range(2):
        for i in range(5):
            np.testing.assert_allclose(out[b, i], feed_forward(x[b, i:i + 1], p)[0],
                                       rtol=1e-14)
    perm = rng.permutation(5)
    np.testing.assert_allclose(feed_forward(x[:, perm], p), out[:, perm], rtol=1e-14)


def test_random_shapes_and_default_d_ff(rng):
    p = FeedForwardParams.random(rng, d_model=8)
    assert p.d_ff == 32 and p.d_model == 8  # d_ff = 4 d_model, as 2048 = 4 * 512
    assert p.W_1.shape == (8, 32) and p.W_2.shape == (32, 8)
    assert p.b_1.shape == (32,) and p.b_2.shape == (8,)


@pytest.mark.parametrize("d_model,d_ff,shape", [(4, 16, (3,)), (8, 5, (2, 5)),
                                                 (6, 24, (2, 3, 4))])
def test_matches_torch_linear_relu_linear(d_model, d_ff, shape, rng):
    p = FeedForwardParams.random(rng, d_model=d_model, d_ff=d_ff)
    x = rng.normal(size=(*shape, d_model))
    for dtype, tol in ((torch.float64, TOL64), (torch.float32, TOL32)):
        net = torch.nn.Sequential(torch.nn.Linear(d_model, d_ff), torch.nn.ReLU(),
                                  torch.nn.Linear(d_ff, d_model)).to(dtype)
        with torch.no_grad():  # torch stores W as (out, in) and computes x Wᵀ
            net[0].weight.copy_(t64(p.W_1.T))
            net[0].bias.copy_(t64(p.b_1))
            net[2].weight.copy_(t64(p.W_2.T))
            net[2].bias.copy_(t64(p.b_2))
        expected = net(torch.tensor(x, dtype=dtype))
        np_dtype = np.float64 if dtype == torch.float64 else np.float32
        out = feed_forward(x.astype(np_dtype), p.map(lambda a: a.astype(np_dtype)))
        assert out.dtype == np_dtype
        assert max_abs(out, expected) < tol
        pt = p.map(lambda a: torch.tensor(a, dtype=dtype))
        assert max_abs(feed_forward(torch.tensor(x, dtype=dtype), pt), expected) < tol

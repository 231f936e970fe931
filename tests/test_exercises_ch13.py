"""book/exercises/ch13.py: each checker accepts a solution written here independently
(torch.autograd, hand arithmetic) and names the mistake in answers written as a reader
who made it would write them."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch13  # noqa: E402
from helpers import refused  # noqa: E402



# --- 1. dC = ones on "Chai piyo" ------------------------------------------------------

# Q = X W_Q, K = X W_K, V = X W_V for the two tokens, worked out by hand
Q = np.array([[2.0, 0.0], [0.0, 2.0]])
K = np.array([[0.0, 2.0], [2.0, 0.0]])
V = np.array([[2.0, 0.0], [0.0, 2.0]])


def autograd_of_sum():
    q, k, v = (torch.tensor(a, dtype=torch.float64, requires_grad=True)
               for a in (Q, K, V))
    (torch.softmax(q @ k.T / math.sqrt(2), dim=-1) @ v).sum().backward()
    return q.grad.numpy(), k.grad.numpy(), v.grad.numpy()


def test_1_right():
    dQ, dK, _ = autograd_of_sum()
    assert ch13.check_1(dQ, dK).ok is True
    assert ch13.check_1(np.zeros((2, 2)), np.zeros((2, 2))).ok is True   # by hand


def test_1_mistakes():
    a = 1 / (1 + math.exp(4 / math.sqrt(2)))   # A_00: self score 0, other 4/√2
    A = np.array([[a, 1 - a], [1 - a, a]])
    dA = np.full((2, 2), 2.0)            # each row of V sums to 2
    dS = A * dA                          # no "- D": the softmax's row term forgotten
    assert refused(ch13.check_1(dS @ K / math.sqrt(2), dS.T @ Q / math.sqrt(2)),
                   "no-D", "row term")
    _, _, dV = autograd_of_sum()
    assert refused(ch13.check_1(dV, np.zeros((2, 2))), "dV", "values")
    assert refused(ch13.check_1(np.zeros((2, 2)), dA), "dA", "softmax")


def test_1_no_D_with_the_rounded_weights_is_named():
    # the reader computes by hand with A as the chapter prints it, 0.0558 and 0.9442
    A = np.array([[0.0558, 0.9442], [0.9442, 0.0558]])
    dS = A * np.full((2, 2), 2.0)
    assert refused(ch13.check_1(dS @ K / math.sqrt(2), dS.T @ Q / math.sqrt(2)),
                   "no-D", "row term")
    # and the right answer with the rounded weights is exactly 0, accepted
    D = (A * 2.0).sum(axis=1, keepdims=True)
    dS = A * (2.0 - D)
    assert ch13.check_1(dS @ K / math.sqrt(2), dS.T @ Q / math.sqrt(2)).ok is True


def test_1_no_D_and_no_scale_is_named():
    # the row term forgotten and the 1/√d_k too: dQ = (A ∘ dA) K
    A = np.array([[0.0558, 0.9442], [0.9442, 0.0558]])     # as the chapter prints it
    dS = A * np.full((2, 2), 2.0)
    assert refused(ch13.check_1(dS @ K, dS.T @ Q), "no-D-no-scale", "√d_k")


def test_1_unanswered():
    assert ch13.check_1(..., ...).ok is None


# --- 2. the logit gap at the smoothed minimum -----------------------------------------

# q_correct / q_other = (0.9 + 0.1/n) / (0.1/n) = 9n + 1
GAP_37000, GAP_11 = math.log(9 * 37000 + 1), math.log(100)


def test_2_right():
    assert ch13.check_2(GAP_37000, GAP_11).ok is True
    assert ch13.check_2(12.72, 4.61).ok is True          # as the solution rounds them


@pytest.mark.parametrize("answer, key, word", [
    ((math.log2(333001), math.log2(100)), "log2", "bits"),
    ((math.log10(333001), math.log10(100)), "log10", "log10"),
    ((333001, 100), "ratio", "logarithm"),
    ((GAP_37000, math.log(99)), "no-eps-on-target", "ε/n_vocab"),   # q_t = 0.9
    ((GAP_37000, math.log(0.9 / (0.1 / 10))), "eps-over-n-minus-1", "n_vocab − 1"),
    ((GAP_11, GAP_37000), "swapped", "11"),
])
def test_2_mistakes(answer, key, word):
    assert refused(ch13.check_2(*answer), key, word)


def test_2_unanswered():
    assert ch13.check_2(..., ...).ok is None
    assert ch13.check_2(GAP_37000, ...).ok is None


# --- 3. the best finite-difference step -----------------------------------------------

def fd_table(one_sided=False):
    """|difference − reference| for δ = 1e-1 ... 1e-10 on the chapter's model, where the
    reference is a central difference at δ = 1e-5 (its error, ~1e-11, is far below the
    truncation errors compared at δ ≥ 1e-3): no hand-written backward involved."""
    import dataclasses
    import mini_transformer as mt
    model, src, tgt_in, tgt_out, src_mask = ch13.ex3_setup()

    def loss_at(delta):
        layer = model.encoder_layers[0]
        W = np.array(layer.attn.W_Q, copy=True)
        W[0, 1, 2] += delta
        changed = dataclasses.replace(model, encoder_layers=(
            dataclasses.replace(layer, attn=dataclasses.replace(layer.attn, W_Q=W)),
            *model.encoder_layers[1:]))
        return float(mt.cross_entropy(mt.transformer(src, tgt_in, changed, src_mask),
                                      tgt_out, 0.1, 10))

    reference = (loss_at(1e-5) - loss_at(-1e-5)) / 2e-5
    base = loss_at(0.0)
    table = {}
    for k in range(1, 11):
        d = 10.0 ** -k
        diff = (loss_at(d) - base) / d if one_sided else (loss_at(d) - loss_at(-d)) / (2 * d)
        table[d] = abs(diff - reference)
    return table


def test_3_right():
    errors = fd_table()
    best = min(errors, key=errors.get)
    assert 1e-6 <= best <= 1e-3 and errors[1e-1] > 1e-6
    assert ch13.check_3(best, errors).ok is True
    assert ch13.check_3(best, {f: e for f, e in zip([1e-1, 1e-2, 1e-3, 1e-4, 1e-5,
                                                     1e-6, 1e-7, 1e-8, 1e-9, 1e-10],
                                                    errors.values())}).ok is True


def test_3_a_guessed_delta_is_not_enough():
    # a δ in the right range, without the computation, is no longer accepted
    verdict = ch13.check_3(1e-5)
    assert refused(verdict, "no-errors", "fd_errors")
    invented = {10.0 ** -k: 10.0 ** -(k + 3) for k in range(1, 11)}   # made-up errors
    invented[1e-5] = 1e-12
    assert refused(ch13.check_3(1e-5, invented), "errors", "1e-01")


def test_3_mistakes():
    errors = fd_table()
    best = min(errors, key=errors.get)
    assert refused(ch13.check_3(1e-1, errors), "not-the-smallest", "smallest")
    assert refused(ch13.check_3(best, fd_table(one_sided=True)), "one-sided", "one-sided")
    signed = {d: -e for d, e in errors.items()}
    assert refused(ch13.check_3(best, signed), "signed", "absolute")
    assert refused(ch13.check_3(best, {1e-1: errors[1e-1]}), "errors-format", "1e-02")
    assert refused(ch13.check_3(-1e-5, errors), "not-positive", "positive")


def test_3_unanswered():
    assert ch13.check_3(...).ok is None
    assert ch13.check_3(..., ...).ok is None
    assert ch13.check_3(..., fd_table()).ok is None


# --- 4. LayerNorm with ε on a row of small variance -----------------------------------

def data():
    r = np.random.default_rng(3)
    return 1e-3 * r.normal(size=8), r.normal(size=8)


def autograd_dx(eps):
    x_np, g_np = data()
    x = torch.tensor(x_np, requires_grad=True)
    F.layer_norm(x, (8,), eps=eps).backward(torch.tensor(g_np))
    return x.grad.numpy()


def cosine(dx):
    x, _ = data()
    u = x - x.mean()
    return float(dx @ u / (np.linalg.norm(dx) * np.linalg.norm(u)))


def test_4_right():
    dx_eps, dx_0 = autograd_dx(1e-5), autograd_dx(0.0)
    ratio = np.linalg.norm(dx_0) / np.linalg.norm(dx_eps)
    assert ch13.check_4(cosine(dx_eps), ratio).ok is True
    assert ch13.check_4(-cosine(dx_eps), ratio).ok is True    # the sign is not asked


def test_4_mistakes():
    dx_eps, dx_0 = autograd_dx(1e-5), autograd_dx(0.0)
    ratio = np.linalg.norm(dx_0) / np.linalg.norm(dx_eps)
    x, _ = data()
    assert refused(ch13.check_4(cosine(dx_0), ratio), "eps-zero", "ε = 0")
    assert refused(ch13.check_4(math.degrees(math.acos(abs(cosine(dx_eps)))), ratio),
                   "degrees", "degrees")
    assert refused(ch13.check_4(cosine(dx_eps), 1 / ratio), "inverted", "upside down")
    # the solution once printed the ratio rounded to "2 times": 2 is now told why it is
    # refused, and the solution prints two decimals
    assert round(ratio) == 2
    assert refused(ch13.check_4(cosine(dx_eps), 2), "whole-number", "two decimals")
    assert ch13.check_4(cosine(dx_eps), round(ratio, 2)).ok is True
    sigma_ratio = math.sqrt(np.var(x) + 1e-5) / math.sqrt(np.var(x))
    assert refused(ch13.check_4(cosine(dx_eps), sigma_ratio), "sigma-ratio", "σ")


def test_4_unanswered():
    assert ch13.check_4(..., ...).ok is None

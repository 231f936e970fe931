"""book/exercises/ch05.py: each checker accepts a reference answer written here
by another route, and names the mistake of wrong answers written as a reader would
make them."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import mini_transformer as mt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch05  # noqa: E402


def refused(verdict, key, word, answer=None):
    assert verdict.ok is False, verdict.message
    assert verdict.mistake == key, verdict.message
    assert word in verdict.message
    if answer is not None:
        assert answer not in verdict.message.replace(",", "")


# --- exercise 1: parameters of the big model's sub-layer ------------------------------
# By hand: 16 heads of d_k = 64 give 3 * 16 * 1024 * 64 = 3 * 1024^2 weights for W^Q,
# W^K, W^V, and W^O adds 1024^2: 4 * 1024^2 = 4,194,304; the biases add 4 * 1024 =
# 4,096.

def test_1_reference_is_right():
    torch.manual_seed(0)
    total = sum(p.numel() for p in torch.nn.MultiheadAttention(1024, 16).parameters())
    assert total == 4_198_400
    assert ch05.check_1((4 * 1024**2, total)).ok is True
    assert ch05.check_1([4_194_304, 4_198_400]).ok is True


@pytest.mark.parametrize("answer, key, word", [
    (4_198_400, "one-number", "two numbers"),
    ((4_198_400, 4_194_304), "swapped", "swapped"),
    ((3 * 1024**2, 3 * 1024**2 + 3 * 1024), "no-W_O", "W^O"),
    ((16 * 4 * 1024**2, 16 * 4 * 1024**2 + 16 * 3 * 1024 + 1024), "full-width-heads",
     "d_model / h"),
    ((4 * 1024 * 64, 4 * 1024 * 64 + 4 * 64), "one-head", "one head"),
    ((4_194_304, 4_194_304), "no-biases", "biases"),
    ((4_194_304, 4_194_304 + 3 * 64 + 1024), "biases-once", "own biases"),
])
def test_1_mistakes_are_named(answer, key, word):
    refused(ch05.check_1(answer), key, word, answer="4198400")


def test_1_unanswered():
    assert ch05.check_1(...).ok is None


# --- exercise 2: W^O follows the heads ------------------------------------------------

def by_blocks(W_O, perm):
    d_v = W_O.shape[0] // len(perm)
    return np.vstack([W_O[i * d_v:(i + 1) * d_v] for i in perm])


def test_2_reference_is_right_and_keeps_the_output():
    assert ch05.check_2(by_blocks).ok is True
    # the property the exercise asks for, on a layer of the chapter's sizes
    rng = np.random.default_rng(0)
    p = mt.MultiHeadParams.random(rng, d_model=8, n_heads=4)
    X = rng.normal(size=(6, 8))
    perm = np.array([2, 0, 3, 1])
    q = mt.MultiHeadParams(W_Q=p.W_Q[perm], W_K=p.W_K[perm], W_V=p.W_V[perm],
                           W_O=by_blocks(p.W_O, perm), b_Q=p.b_Q[perm], b_K=p.b_K[perm],
                           b_V=p.b_V[perm], b_O=p.b_O)
    out_p, out_q = mt.multi_head_attention(X, p)[0], mt.multi_head_attention(X, q)[0]
    assert np.max(np.abs(out_p - out_q)) < 1e-12


def inverse_blocks(W_O, perm):
    return by_blocks(W_O, np.argsort(perm))


def interleaved(W_O, perm):
    # rows read as interleaved, row r for head r mod h: row a h + k <- row a h + perm[k]
    h = len(perm)
    d_v = W_O.shape[0] // h
    return W_O[[a * h + perm[k] for a in range(d_v) for k in range(h)]]


@pytest.mark.parametrize("fn, key, word", [
    (lambda W_O, perm: W_O.copy(), "unchanged", "unchanged"),
    (inverse_blocks, "inverse", "inverse"),
    (lambda W_O, perm: W_O[perm], "single-rows", "block"),
    (interleaved, "interleaved", "interleaved"),
])
def test_2_mistakes_are_named(fn, key, word):
    refused(ch05.check_2(fn), key, word)


def test_2_unanswered():
    def stub(W_O, perm):
        raise NotImplementedError

    assert ch05.check_2(stub).ok is None
    assert ch05.check_2(...).ok is None


# --- exercise 3: the weights a causal mask zeroes -------------------------------------

def above_diagonal():
    # by hand: query i (row) may not see key j (column) after it, j > i
    return np.array([[j > i for j in range(6)] for i in range(6)])


def test_3_reference_is_right():
    assert ch05.check_3(above_diagonal()).ok is True
    # torch's attn_mask of the same meaning, True = masked out, as a tensor
    assert ch05.check_3(torch.as_tensor(above_diagonal())).ok is True


@pytest.mark.parametrize("answer, key, word", [
    (~above_diagonal(), "may-attend", "polarity"),
    (np.array([[j >= i for j in range(6)] for i in range(6)]), "diagonal", "itself"),
    (above_diagonal().T, "lower", "rows are queries"),
    (np.where(above_diagonal(), -np.inf, 0.0), "additive", "-inf"),
    (np.stack([above_diagonal()] * 4), "per-head", "every head"),
])
def test_3_mistakes_are_named(answer, key, word):
    refused(ch05.check_3(answer), key, word)


def test_3_unanswered():
    assert ch05.check_3(...).ok is None


# --- exercise 4: bytes of the attention weights ---------------------------------------
# By hand: 8 * 4096^2 = 2^3 * 2^24 = 2^27 weights of 4 bytes: 2^29 = 536,870,912 bytes.

def test_4_reference_is_right():
    assert ch05.check_4(2**29).ok is True
    assert ch05.check_4(float(2**29)).ok is True


@pytest.mark.parametrize("answer, key, word", [
    (2**30, "float64", "float64"),
    (2**32, "bits", "bits"),
    (2**27, "count", "number of weights"),
    (2**26, "one-head", "one head"),
    (512, "MiB", "MiB"),
    (0.5, "GiB", "GiB"),
    (0.536870912, "GB", "GB"),
    (2**29 * 64, "times-d_k", "d_k"),
])
def test_4_mistakes_are_named(answer, key, word):
    refused(ch05.check_4(answer), key, word, answer="536870912")


def test_4_unanswered():
    assert ch05.check_4(...).ok is None


# --- exercise 5: d_k != d_v -----------------------------------------------------------
# By hand: W_V is h x d_model x d_v = (2, 8, 5); the heads concatenate h d_v = 10
# values, so W_O is (10, 8); the output is (n, d_model) = (6, 8), the weights (h, n, n)
# = (2, 6, 6).
RIGHT5 = [(2, 8, 5), (10, 8), (6, 8), (2, 6, 6)]


def test_5_reference_is_right():
    assert ch05.check_5(RIGHT5).ok is True
    assert ch05.check_5(tuple(np.array(s) for s in RIGHT5)).ok is True


def with_part(k, shape):
    answer = list(RIGHT5)
    answer[k] = shape
    return answer


@pytest.mark.parametrize("answer, key, word", [
    (with_part(0, (2, 8, 3)), "W_V-d_k", "d_v"),
    (with_part(0, (2, 5, 8)), "W_V-transposed", "swapped"),
    (with_part(0, (8, 10)), "W_V-no-head-axis", "head axis"),
    (with_part(1, (6, 8)), "W_O-d_k", "h d_v rows"),
    (with_part(1, (8, 8)), "W_O-square", "only when"),
    (with_part(1, (8, 10)), "W_O-transposed", "swapped"),
    (with_part(2, (6, 10)), "output-no-W_O", "before W_O"),
    (with_part(3, (6, 6)), "weights-one-head", "per head"),
    (with_part(3, (2, 6, 3)), "weights-d_k", "d_k"),
    (with_part(2, (7, 8)), "shape", "the output"),
    ([(2, 8, 5), (10, 8)], "form", "four shapes"),
    ("(2, 8, 5)", "form", "tuple"),
])
def test_5_mistakes_are_named(answer, key, word):
    refused(ch05.check_5(answer), key, word)


def test_5_unanswered():
    assert ch05.check_5(...).ok is None

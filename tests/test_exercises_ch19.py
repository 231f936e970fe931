"""book/exercises/ch19.py: each checker accepts a reference answer written here by
another route, names the mistake of wrong answers written as a reader would make them,
and refuses torch's output in place of the package's."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch19  # noqa: E402
from helpers import refused  # noqa: E402

import mini_transformer as mt  # noqa: E402


# --- exercise 1: LLaMA's SwiGLU width ------------------------------------------------

def test_1_reference_is_right():
    # LLaMA 7B's published hidden width, by its code's rule: int(2 · 16384 / 3) = 10922,
    # rounded up to a multiple of 256
    width = 10922 + (256 - 10922 % 256)
    assert width == 11008 and width % 256 == 0
    assert ch19.check_1(width).ok is True


@pytest.mark.parametrize("answer, key, word", [
    (16384, "relu-width", "4 d_model"),
    (10922, "not-rounded", "rounds it up"),
    (2 * 4 * 4096 / 3, "not-rounded", "rounds it up"),
    (10752, "rounded-down", "rounded down"),
    (2816, "two-thirds-of-d", "2/3 of d_model"),
    (11000, "not-a-multiple", "multiples of 256"),
    (11264, "value", "off"),
])
def test_1_mistakes_are_named(answer, key, word):
    verdict = ch19.check_1(answer)
    refused(verdict, key, word)
    assert "11008" not in verdict.message.replace(",", "")


def test_1_unanswered():
    assert ch19.check_1(...).ok is None


# --- exercise 2: the cache per token -------------------------------------------------

def test_2_reference_is_right():
    # measured: the float16 K and V arrays of one token, 8 heads of 128, in 32 layers
    layers = [(torch.zeros(8, 1, 128, dtype=torch.float16),
               torch.zeros(8, 1, 128, dtype=torch.float16)) for _ in range(32)]
    n_bytes = sum(a.element_size() * a.numel() for kv in layers for a in kv)
    assert n_bytes == 131072
    assert ch19.check_2(n_bytes).ok is True


@pytest.mark.parametrize("answer, key, word", [
    (65536, "one-of-k-v", "half"),
    (524288, "query-heads", "h = 32"),
    (4096, "one-layer", "one layer"),
    (262144, "float32", "float32"),
    (2048, "numbers", "numbers"),
    (100000, "value", "off"),
])
def test_2_mistakes_are_named(answer, key, word):
    refused(ch19.check_2(answer), key, word)


# --- exercise 3: grouped-query attention by copies -----------------------------------

def by_loops(q, k, v):
    h, h_kv = q.shape[0], k.shape[0]
    out = np.zeros((h, q.shape[1], v.shape[2]))
    for i in range(h):
        j = i * h_kv // h
        s = q[i] @ k[j].T / math.sqrt(q.shape[2])
        a = np.exp(s - s.max(axis=1, keepdims=True))
        out[i] = a / a.sum(axis=1, keepdims=True) @ v[j]
    return out


def test_3_reference_is_right():
    assert ch19.check_3(by_loops).ok is True
    # the loop is torch's enable_gqa attention
    for q, k, v in ch19._gqa_cases():
        expected = F.scaled_dot_product_attention(
            *(torch.as_tensor(a) for a in (q, k, v)), enable_gqa=True).numpy()
        assert np.abs(by_loops(q, k, v) - expected).max() < 1e-12

    def by_copies(q, k, v):
        r = q.shape[0] // k.shape[0]
        return mt.scaled_dot_product_attention(q, np.repeat(k, r, 0), np.repeat(v, r, 0))

    assert ch19.check_3(by_copies).ok is True     # (output, weights) is welcome


def torch_sdpa(q, k, v):
    return F.scaled_dot_product_attention(*(torch.as_tensor(a) for a in (q, k, v)),
                                          enable_gqa=True)


@pytest.mark.parametrize("fn, key, word", [
    (lambda q, k, v: torch_sdpa(q, k, v).numpy(), "torch", "F.scaled_dot_product"),
    (torch_sdpa, "torch", "mini_transformer"),
    (lambda q, k, v: torch.as_tensor(by_loops(q, k, v)), "torch", "output"),
    (lambda q, k, v: mt.scaled_dot_product_attention(
        q, np.tile(k, (q.shape[0] // k.shape[0], 1, 1)),
        np.tile(v, (q.shape[0] // k.shape[0], 1, 1)))[0], "tiled", "np.tile"),
    (lambda q, k, v: by_loops(q * math.sqrt(q.shape[2]), k, v), "no-scale", "√d_k"),
    (lambda q, k, v: mt.scaled_dot_product_attention(q, k, v), "raises", "ValueError"),
])
def test_3_mistakes_are_named(fn, key, word):
    refused(ch19.check_3(fn), key, word)


def test_3_refuses_the_package_function_it_rebuilds():
    # the package's own answer, by either name, is not a reader's computation; the
    # check leaves the package as it found it
    from mini_transformer.grouped_query import grouped_query_attention

    module = sys.modules["mini_transformer.grouped_query"]
    original = module._check
    for fn in (lambda q, k, v: mt.grouped_query_attention(q, k, v)[0],
               lambda q, k, v: grouped_query_attention(q, k, v)):
        refused(ch19.check_3(fn), "package-gqa", "grouped_query_attention")
    assert module._check is original
    q, k, v = ch19._gqa_cases()[0]
    assert mt.grouped_query_attention(q, k, v)[0].shape == q.shape


def test_3_unanswered_and_torch_restored():
    def stub(q, k, v):
        raise NotImplementedError

    assert ch19.check_3(stub).ok is None and ch19.check_3(...).ok is None
    assert ch19.check_3(3).ok is False
    original = F.scaled_dot_product_attention
    ch19.check_3(lambda q, k, v: torch_sdpa(q, k, v).numpy())
    assert F.scaled_dot_product_attention is original


# --- exercise 4: undo the rotation ---------------------------------------------------

def by_complex(y, positions):
    d = y.shape[-1]
    omega = 10000.0 ** (-np.arange(0, d, 2) / d)
    z = (y[..., 0::2] + 1j * y[..., 1::2]) * np.exp(
        -1j * np.asarray(positions)[:, None] * omega)
    out = np.empty_like(y)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def test_4_reference_is_right():
    assert ch19.check_4(by_complex).ok is True
    assert ch19.check_4(lambda y, p: mt.rotary_embedding(y, -np.asarray(p))).ok is True


@pytest.mark.parametrize("fn, key, word", [
    (lambda y, p: y, "unchanged", "unchanged"),
    (lambda y, p: mt.rotary_embedding(y, p), "same-way", "doubles"),
    (lambda y, p: torch.as_tensor(by_complex(y, p)), "torch", "output"),
    (lambda y, p: by_complex(y, np.asarray(p) + 1), "value", "differ"),
])
def test_4_mistakes_are_named(fn, key, word):
    refused(ch19.check_4(fn), key, word)

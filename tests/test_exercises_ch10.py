"""book/exercises/ch10.py: each checker accepts a reference solution written
here, refuses the mistakes a reader makes with their own message, and waits while
the answer is `...`."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch10  # noqa: E402


# --- exercise 1: the big model's parameters, tied and untied --------------------------

def _torch_tied(d=1024, h=16, d_ff=4096, n_vocab=37000):
    """torch.nn.Transformer and one embedding, less its two final LayerNorms."""
    net = torch.nn.Transformer(d, h, 6, 6, d_ff, batch_first=True, device="meta")
    emb = torch.nn.Embedding(n_vocab, d, device="meta")
    final_norms = sum(p.numel() for p in net.encoder.norm.parameters()) + sum(
        p.numel() for p in net.decoder.norm.parameters())
    return sum(p.numel() for p in [*net.parameters(), *emb.parameters()]) - final_norms


def test_1_accepts_the_count_of_torch():
    tied = _torch_tied()
    assert tied == 214_245_376                     # the page's count
    untied = tied + 2 * 37000 * 1024
    assert ch10.check_1((tied, untied)).ok is True


def test_1_names_the_mistakes():
    tied, E = _torch_tied(), 37000 * 1024
    v = ch10.check_1((tied, tied + E))
    assert v.ok is False and v.mistake == "untied-one" and "three" in v.message
    net = torch.nn.Transformer(1024, 16, 6, 6, 4096, batch_first=True, device="meta")
    with_norms = sum(p.numel() for p in net.parameters()) + E
    v = ch10.check_1((with_norms, with_norms + 2 * E))
    assert v.ok is False and v.mistake == "final-norms" and "LayerNorm" in v.message
    v = ch10.check_1((tied - E, tied + 2 * E))     # tied: the embedding left out
    assert v.ok is False and v.mistake == "no-embedding"
    v = ch10.check_1((tied + 2 * E, tied))
    assert v.ok is False and v.mistake == "swapped"


def test_1_waits_for_an_answer():
    assert ch10.check_1(...).ok is None


# --- exercise 2: where the cached step's scores cost as much as the rest --------------

def _crossing(d, d_ff, n_src=32):
    # the first step t where 4 (t + 1) d reaches 12 d² + 4 n_src d + 4 d d_ff, by search
    rest = 12 * d * d + 4 * n_src * d + 4 * d * d_ff
    t = 0
    while 4 * (t + 1) * d < rest:
        t += 1
    assert 4 * (t + 1) * d == rest
    return t


def test_2_accepts_a_search():
    steps = (_crossing(512, 2048), _crossing(1024, 4096))
    assert steps == (3615, 7199)
    assert ch10.check_2(steps).ok is True


def test_2_names_the_mistakes():
    v = ch10.check_2((3616, 7200))                 # t + 1
    assert v.ok is False and v.mistake == "t-plus-one" and "t + 1" in v.message
    v = ch10.check_2((_crossing(512, 2048, n_src=0), _crossing(1024, 4096, n_src=0)))
    assert v.ok is False and v.mistake == "no-n-src" and "n_src" in v.message
    v = ch10.check_2((3 * 512 + 32 - 1, 3 * 1024 + 32 - 1))   # the FFN forgotten
    assert v.ok is False and v.mistake == "no-ffn" and "FFN" in v.message


def test_2_waits_for_an_answer():
    assert ch10.check_2(...).ok is None


# --- exercise 3: the cache and the parameters in GiB ----------------------------------

def test_3_accepts_hand_numbers():
    # 2 (K, V) · 2 (self, cross) · 6 layers · 256 positions · 1024 · 64 sentences
    # · 2 bytes
    cache = 2 * 2 * 6 * 256 * 1024 * 64 * 2
    assert cache == 3 * 2**28                       # = 0.75 GiB
    params = 2 * _torch_tied()
    assert ch10.check_3((cache / 2**30, params / 2**30)).ok is True
    assert ch10.check_3((0.75, 0.399)).ok is True   # as printed, to three places


def test_3_names_the_mistakes():
    params = 2 * _torch_tied() / 2**30
    v = ch10.check_3((0.375, params))              # only the self-attention's cache
    assert v.ok is False and v.mistake == "half-cache" and "cross" in v.message
    v = ch10.check_3((3 * 2**28 / 1e9, 2 * _torch_tied() / 1e9))
    assert v.ok is False and v.mistake == "gb" and "GiB" in v.message
    v = ch10.check_3((1.5, 2 * params))            # 4 bytes per number
    assert v.ok is False and v.mistake == "float32" and "2 bytes" in v.message
    v = ch10.check_3((params, 0.75))
    assert v.ok is False and v.mistake == "swapped"
    v = ch10.check_3((0.75, params + 2 * 2 * 37000 * 1024 / 2**30))
    assert v.ok is False and v.mistake == "untied"


def test_3_waits_for_an_answer():
    assert ch10.check_3(...).ok is None

"""book/exercises/ch11.py: each checker accepts a reference solution written
here, refuses the mistakes a reader makes with their own message, and waits while
the answer is `...`."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch11  # noqa: E402


def _meta(*shape):
    return torch.empty(*shape, device="meta")


def _core_and_rest(layer, *inputs, attentions):
    """Multiply-adds of a torch layer: the attention cores (bmm's) and all the rest."""
    with FlopCounterMode(display=False) as counter:
        layer(*inputs)
    by = counter.get_flop_counts()
    core = sum(v for name in attentions for op, v in by[name].items()
               if "bmm" in str(op))
    return core // 2, (sum(by["Global"].values()) - core) // 2


# --- exercise 1: the big encoder layer's crossover ------------------------------------

def _encoder_split(n, d=1024, h=16, d_ff=4096):
    layer = torch.nn.TransformerEncoderLayer(d, h, d_ff, dropout=0.0, batch_first=True,
                                             device="meta")
    return _core_and_rest(layer, _meta(1, n, d),
                          attentions=["TransformerEncoderLayer.self_attn"])


def test_1_accepts_the_counted_crossover():
    core, rest = _encoder_split(6144)
    assert core == rest                            # the FLOP counter's crossover
    core, rest = _encoder_split(6143)
    assert core < rest
    assert ch11.check_1(6144).ok is True
    assert ch11.check_1(6144.0).ok is True


def test_1_names_the_mistakes():
    v = ch11.check_1(2 * 512 + 2048)               # the base model's n*
    assert v.ok is False and v.mistake == "base" and "base" in v.message
    v = ch11.check_1(4 * 1024 + 2 * 4096)   # n² d = 4 n d² + 2 n d d_ff: QKᵀ only
    assert v.ok is False and v.mistake == "one-product" and "AV" in v.message
    v = ch11.check_1(4096)                          # 2 n² d = 2 n d d_ff
    assert v.ok is False and v.mistake == "no-projections"
    assert "6144" not in v.message


def test_1_waits_for_an_answer():
    assert ch11.check_1(...).ok is None


# --- exercise 2: a base decoder layer's crossover -------------------------------------

def _decoder_split(n, d=512, h=8, d_ff=2048):
    layer = torch.nn.TransformerDecoderLayer(d, h, d_ff, dropout=0.0, batch_first=True,
                                             device="meta")
    return _core_and_rest(layer, _meta(1, n, d), _meta(1, n, d),
                          attentions=["TransformerDecoderLayer.self_attn",
                                      "TransformerDecoderLayer.multihead_attn"])


def test_2_accepts_the_counted_crossover():
    core, rest = _decoder_split(2048)
    assert core == rest
    core, rest = _decoder_split(2047)
    assert core < rest
    assert ch11.check_2(2048).ok is True


def test_2_names_the_mistakes():
    v = ch11.check_2(2 * 512 + 2048)               # the encoder's formula
    assert v.ok is False and v.mistake == "encoder" and "two" in v.message
    v = ch11.check_2(4 * 512 + 2048)               # 2 n² d = 8 n d² + 2 n d d_ff
    assert v.ok is False and v.mistake == "one-core" and "cross" in v.message
    v = ch11.check_2(512 + 2048 // 2)              # 4 n² d = 4 n d² + 2 n d d_ff
    assert v.ok is False and v.mistake == "one-attention-projections"


def test_2_waits_for_an_answer():
    assert ch11.check_2(...).ok is None


# --- exercise 3: the window that connects 40 positions in six layers ------------------

def _connected_by_search(r, n=40, layers=6):
    """Breadth-first: from each input j, the outputs reached after `layers` windows."""
    for j in range(n):
        reached = {j}
        for _ in range(layers):
            reached = {i for i in range(n) for k in reached if k <= i < k + r}
        if reached != set(range(j, n)):
            return False
    return True


def test_3_accepts_the_searched_window():
    r = math.ceil(39 / 6) + 1                      # 6 (r - 1) >= n - 1 = 39, by hand
    assert _connected_by_search(r) and not _connected_by_search(r - 1)
    assert ch11.check_3(r).ok is True
    assert ch11.check_3(np.int64(r)).ok is True


def test_3_names_the_mistakes():
    v = ch11.check_3(math.ceil(39 / 6))            # forgot that r keys reach r - 1 back
    assert v.ok is False and v.mistake == "one-short" and "r − 1" in v.message
    v = ch11.check_3(39 / 6 + 1)                   # not rounded
    assert v.ok is False and v.mistake == "not-whole" and "whole" in v.message
    v = ch11.check_3(40 // 6 + 1 + 3)              # connects, but larger than needed
    assert v.ok is False and v.mistake == "not-smallest"


def test_3_waits_for_an_answer():
    assert ch11.check_3(...).ok is None


# --- exercise 4: centred dilated convolutions, counted from the Jacobian --------------

def _jacobian_counts(padding_both_sides=True):
    torch.manual_seed(0)
    d, n = 4, 16
    convs = [torch.nn.Conv1d(d, d, 3, dilation=3**l, dtype=torch.float64,
                             padding=3**l if padding_both_sides else 0)
             for l in range(5)]

    def stack(x):
        outs, h = [], x
        for conv in convs:
            inp = h.T[None]
            if not padding_both_sides:                 # causal: pad on the left only
                inp = torch.nn.functional.pad(inp, (2 * conv.dilation[0], 0))
            h = torch.tanh(conv(inp))[0].T
            outs.append(h)
        return torch.stack(outs)

    x = torch.randn(n, d, dtype=torch.float64)
    R = (torch.func.jacfwd(stack)(x) != 0).any(dim=(2, 4))
    return [int(R[l].sum()) for l in range(5)]


def test_4_accepts_the_jacobian_counts():
    counts = _jacobian_counts()
    assert counts == [46, 122, 226, 226, 226]      # the page's solution
    assert ch11.check_4(counts).ok is True
    assert ch11.check_4(np.array(counts)).ok is True


def test_4_names_the_mistakes():
    v = ch11.check_4(_jacobian_counts(padding_both_sides=False))
    assert v.ok is False and v.mistake == "causal" and "both sides" in v.message
    # offsets in balanced ternary, as if the sequence had no ends: |i - j| <= 1, 4, 13..
    no_edges = [sum(1 for i in range(16) for j in range(16)
                    if abs(i - j) <= (3**L - 1) // 2) for L in range(1, 6)]
    v = ch11.check_4(no_edges)
    assert v.ok is False and v.mistake == "no-edges" and "padding" in v.message
    one_layer = [16 + 2 * max(16 - 3**l, 0) for l in range(5)]   # each layer alone
    v = ch11.check_4(one_layer)
    assert v.ok is False and v.mistake == "one-layer"
    v = ch11.check_4([(c + 16) // 2 for c in [46, 122, 226, 226, 226]])   # j <= i only
    assert v.ok is False and v.mistake == "lower-only"


def test_4_waits_for_an_answer():
    assert ch11.check_4(...).ok is None

"""book/exercises/ch09.py: each checker accepts a reference solution written
here, refuses the mistakes a reader makes with their own message, and waits while
the answer is `...`."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from exercises import ch09  # noqa: E402

import mini_transformer as mt  # noqa: E402
from mini_transformer import tasks  # noqa: E402
from mini_transformer.torch.convert import to_torch


# --- exercise 1: the big model's decoder layer ----------------------------------------

def _torch_count(module):
    return sum(p.numel() for p in module.parameters())


def test_1_accepts_the_count_of_torch():
    layer = _torch_count(
        torch.nn.TransformerDecoderLayer(1024, 16, 4096, device="meta"))
    # by hand: 2 (4·1024² + 4·1024) + 2·1024·4096 + 4096 + 1024 + 6·1024
    assert layer == 16_796_672
    assert ch09.check_1((layer, 6 * layer)).ok is True
    assert ch09.check_1([16_796_672, 100_780_032]).ok is True


def test_1_names_the_mistakes():
    enc = _torch_count(torch.nn.TransformerEncoderLayer(1024, 16, 4096, device="meta"))
    v = ch09.check_1((enc, 6 * enc))
    assert v.ok is False and v.mistake == "encoder-layer" and "cross" in v.message
    d, d_ff = 1024, 4096
    two_norms = 2 * (4 * d * d + 4 * d) + 2 * d * d_ff + d_ff + d + 2 * 2 * d
    v = ch09.check_1((two_norms, 6 * two_norms))
    assert v.ok is False and v.mistake == "two-norms" and "three" in v.message
    one_attention = 4 * d * d + 4 * d + 2 * d * d_ff + d_ff + d + 3 * 2 * d
    v = ch09.check_1((one_attention, 6 * one_attention))
    assert v.ok is False and v.mistake == "one-attention"
    weights = 2 * 4 * d * d + 2 * d * d_ff
    v = ch09.check_1((weights, 6 * weights))
    assert v.ok is False and v.mistake == "no-biases" and "bias" in v.message
    v = ch09.check_1((16_796_672, 16_796_672 * 6 + 2 * 1024))   # a final norm added
    assert v.ok is False and v.mistake == "stack"


def test_1_waits_for_an_answer():
    assert ch09.check_1(...).ok is None


# --- exercises 3 and 4: the page's data, rebuilt here as the page builds it -----------

def _page():
    rng = np.random.default_rng(0)
    src, tgt_in, tgt_out = tasks.reverse_task(rng, batch=1, length=5, vocab_size=10)
    model = mt.TransformerParams.random(rng, vocab_size=11, d_model=16, n_heads=2,
                                        n_layers=2)
    return src, tgt_in, tgt_out, model


def _torch_decoder_rows(tgt, model, src, changed_at):
    """Which output rows move, computed with torch.nn modules built from the weights."""
    E = model.embedding
    enc = [to_torch(l).eval() for l in model.encoder_layers]
    dec = [to_torch(l).eval() for l in model.decoder_layers]
    n = tgt.shape[1]
    causal = torch.nn.Transformer.generate_square_subsequent_mask(
        n, dtype=torch.float64)
    with torch.no_grad():
        mem = torch.as_tensor(mt.embed(src, E))
        for layer in enc:
            mem = layer(mem)

        def run(tokens):
            y = torch.as_tensor(mt.embed(tokens, E))
            for layer in dec:
                y = layer(y, mem, tgt_mask=causal)
            return y

        other = tgt.copy()
        other[0, changed_at] = (tgt[0, changed_at] + 1) % 10 or 2
        moved = (run(other) - run(tgt)).abs().amax(dim=-1)[0] > 0
    return [t for t in range(n) if moved[t]]


def test_3_accepts_the_rows_torch_moves():
    src, tgt_in, tgt_out, model = _page()
    rows = _torch_decoder_rows(tgt_out, model, src, 2)   # torch's layers
    assert rows == [2, 3, 4, 5]                        # the diagonal and below: by hand
    assert ch09.check_3(rows).ok is True
    assert ch09.check_3(np.array(rows)).ok is True
    assert ch09.check_3(np.arange(6) >= 2).ok is True  # a bool mask over the rows


def test_3_names_the_mistakes():
    _, tgt_in, tgt_out, _ = _page()
    # kept the shift: tgt_out[2] is tgt_in[3]; rows 3.. move
    assert tgt_in[0, 3] == tgt_out[0, 2]
    v = ch09.check_3([3, 4, 5])
    assert v.ok is False and v.mistake == "kept-shift" and "shift" in v.message
    v = ch09.check_3(list(range(6)))                  # no mask: every row
    assert v.ok is False and v.mistake == "no-mask" and "mask" in v.message
    v = ch09.check_3([3, 4, 5, 6])                    # counted from 1
    assert v.ok is False and v.mistake == "one-based"
    assert "[2, 3, 4, 5]" not in v.message


def test_3_waits_for_an_answer():
    assert ch09.check_3(...).ok is None


def _row0(head_axis_fn):
    _, tgt_in, _, model = _page()
    last = tgt_in.copy()
    last[0, -1] = 2
    E = model.embedding
    return [np.abs(head_axis_fn(mt.embed(last, E), a)[0]
                   - head_axis_fn(mt.embed(tgt_in, E), a)[0]).max()
            for a in ("row", "col")]


def _loops_head0(Y, over, scale=True):
    """Head 0 of the first decoder layer by loops: M added, softmax by row or column."""
    _, tgt_in, _, model = _page()
    p = model.decoder_layers[0].self_attn
    n = Y.shape[1]
    q = Y[0] @ p.W_Q[0] + p.b_Q[0]
    k = Y[0] @ p.W_K[0] + p.b_K[0]
    v = Y[0] @ p.W_V[0] + p.b_V[0]
    s = np.array([[q[i] @ k[j] / (math.sqrt(p.d_k) if scale else 1.0)
                   + (0.0 if j <= i else -math.inf) for j in range(n)]
                  for i in range(n)])
    e = np.exp(s - s.max())
    A = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            total = e[i].sum() if over == "row" else e[:, j].sum()
            A[i, j] = e[i, j] / total
    return A @ v


def test_4_accepts_a_loop_reference():
    changes = _row0(_loops_head0)
    assert changes[0] == 0.0 and changes[1] > 0.001   # rows: no leak; columns: a leak
    assert ch09.check_4(changes).ok is True
    assert ch09.check_4(tuple(changes)).ok is True


def test_4_names_the_mistakes():
    changes = _row0(_loops_head0)
    v = ch09.check_4(changes[::-1])
    assert v.ok is False and v.mistake == "swapped" and "swapped" in v.message
    no_scale = _row0(lambda Y, over: _loops_head0(Y, over, scale=False))
    v = ch09.check_4(no_scale)
    assert v.ok is False and v.mistake == "no-scale" and "√d_k" in v.message

    def unmasked(Y, over):                             # the softmax without M
        _, _, _, model = _page()
        p = model.decoder_layers[0].self_attn
        q, k, v_ = (Y[0] @ W[0] + b[0] for W, b in
                    ((p.W_Q, p.b_Q), (p.W_K, p.b_K), (p.W_V, p.b_V)))
        axis = -1 if over == "row" else 0
        return mt.softmax(q @ k.T / math.sqrt(p.d_k), axis=axis) @ v_

    v = ch09.check_4(_row0(unmasked))
    assert v.ok is False and v.mistake == "no-mask" and "mask" in v.message


def test_4_waits_for_an_answer():
    assert ch09.check_4(...).ok is None

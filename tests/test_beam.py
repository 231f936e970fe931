"""Beam search (§6.1) against independent oracles: greedy decoding (beam 1, α = 0),
exhaustive search over every output of a tiny vocabulary and length under the same
score, and the teacher-forced log-probability from ``transformer`` (no cache)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
import torch

import mini_transformer as mt
from mini_transformer.decoding import beam_search, length_penalty

BOS, EOS = 1, 2


def model(seed, vocab_size=6):
    rng = np.random.default_rng(seed)
    p = mt.TransformerParams.random(rng, vocab_size=vocab_size, d_model=8, n_heads=2,
                                    n_layers=1)
    src = rng.integers(3, vocab_size, size=(6, 4))
    return p, src


def log_prob(src, y, p):
    """log P(y | src) teacher-forced through ``transformer``: Σ_t log p(y_t | y_<t)."""
    logits = mt.transformer(src[None], np.array([[BOS, *y[:-1]]]), p)[0]  # (|y|, V)
    logp = logits - mt.log_sum_exp(logits, axis=-1)[:, None]
    return float(sum(logp[t, token] for t, token in enumerate(y)))


def generated(row):
    """The generated tokens of a returned row: after BOS, up to and with EOS."""
    row = [int(t) for t in row[1:]]
    return row[: row.index(EOS) + 1] if EOS in row else row


def test_length_penalty_by_hand():
    assert length_penalty(1, 0.6) == 1.0                # (5 + 1) / 6 = 1
    assert abs(length_penalty(7, 0.6) - 2 ** 0.6) < 1e-15  # (5 + 7) / 6 = 2
    assert length_penalty(30, 0.0) == 1.0


@pytest.mark.parametrize("seed, max_len", [(0, 7), (1, 12), (2, 3)])
def test_beam_1_with_alpha_0_is_greedy(seed, max_len):
    """With one hypothesis and no length penalty, the search keeps greedy's path, and
    finishes when greedy emits EOS: a live hypothesis's log P can only fall below
    the finished one's. (With α > 0 a longer hypothesis may score higher than
    greedy's, so beam 1 may go on: the next test.)"""
    p, src = model(seed)
    greedy = mt.greedy_decode(src, p, max_len, BOS, EOS)
    tokens, scores = beam_search(src, p, max_len, BOS, EOS, beam_size=1, alpha=0.0)
    np.testing.assert_array_equal(tokens, greedy)
    for s, row, x in zip(scores, tokens, src):
        assert abs(s - log_prob(x, generated(row), p)) < 1e-10


def test_beam_1_with_alpha_scores_at_least_greedy():
    p, src = model(3)
    greedy = mt.greedy_decode(src, p, 9, BOS, EOS)
    _, scores = beam_search(src, p, 9, BOS, EOS, beam_size=1, alpha=0.6)
    for s, row, x in zip(scores, greedy, src):
        y = generated(row)
        assert s >= log_prob(x, y, p) / length_penalty(len(y), 0.6) - 1e-12


def test_large_beam_equals_exhaustive_search():
    """Vocabulary 4, at most 3 generated tokens: every output is an EOS-terminated
    sequence of 1 to 3 tokens, or 3 tokens without EOS (out of room), 13 + 27 = 40
    of them. A beam of 64 keeps them all; its answer must be the best of all 40.
    EOS's embedding row is scaled up so that EOS wins at α = 0 and loses at α = 2."""
    p, src = model(4, vocab_size=4)
    E = p.embedding.copy()
    E[EOS] *= 3
    p = dataclasses.replace(p, embedding=E)
    others = [t for t in range(4) if t != EOS]
    outputs = [(*prefix, EOS) for n in range(3)
               for prefix in itertools.product(others, repeat=n)]
    outputs += list(itertools.product(others, repeat=3))
    assert len(outputs) == 40
    winners = set()
    for alpha in (0.0, 0.6, 2.0):
        tokens, scores = beam_search(src, p, 4, BOS, EOS, beam_size=64, alpha=alpha)
        for x, row, s in zip(src, tokens, scores):
            score = {y: log_prob(x, list(y), p) / length_penalty(len(y), alpha)
                     for y in outputs}
            best = max(score, key=score.get)
            assert tuple(generated(row)) == best
            assert abs(s - score[best]) < 1e-10
            winners.add(best)
    assert {len(y) for y in winners} == {1, 3} and (EOS,) in winners


def test_scores_are_teacher_forced_log_probability_over_lp():
    p, src = model(5)
    tokens, scores = beam_search(src, p, 10, BOS, EOS, beam_size=4, alpha=0.6)
    assert tokens.shape[0] == 6 and tokens[:, 0].tolist() == [BOS] * 6
    for x, row, s in zip(src, tokens, scores):
        y = generated(row)
        assert abs(s - log_prob(x, y, p) / length_penalty(len(y), 0.6)) < 1e-10


def test_padded_batch_equals_each_source_alone():
    p, src = model(6)
    lengths = [4, 2, 3, 4, 1, 2]
    padded = np.where(np.arange(4) < np.array(lengths)[:, None], src, 0)
    tokens, scores = beam_search(padded, p, 8, BOS, EOS,
                                 src_mask=mt.padding_mask(lengths, 4))
    for x, n, row, s in zip(src, lengths, tokens, scores):
        alone, score = beam_search(x[:n], p, 8, BOS, EOS)
        assert generated(row) == generated(alone) and abs(s - score) < 1e-12


def test_default_max_len_is_n_src_plus_50():
    p, src = model(7)
    a = beam_search(src, p, None, BOS, EOS)
    b = beam_search(src, p, 4 + 50, BOS, EOS)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[0].shape[1] <= 54


def test_torch_tensors_give_numpy_answer():
    p, src = model(8)
    tokens, scores = beam_search(src, p, 9, BOS, EOS)
    t_tokens, t_scores = beam_search(torch.as_tensor(src), p.map(torch.as_tensor),
                                     9, BOS, EOS)
    np.testing.assert_array_equal(t_tokens.numpy(), tokens)
    assert np.max(np.abs(t_scores.numpy() - scores)) < 1e-12


@pytest.mark.parametrize("kw, match", [
    (dict(beam_size=0), "beam_size must be an integer >= 1"),
    (dict(alpha=-0.5), "alpha must be a number >= 0"),
    (dict(max_len=0), "max_len must be an integer >= 1"),
])
def test_refused(kw, match):
    p, src = model(0)
    kw = dict(max_len=None) | kw
    with pytest.raises(ValueError, match=match):
        beam_search(src, p, bos=BOS, eos=EOS, **kw)


def test_top_k_is_the_stable_descending_sort_prefix():
    """``top_indices`` (argpartition, then a sort of the k kept) against the full
    stable descending argsort, with ties inside the kept entries and -inf rows."""
    from mini_transformer.decoding import top_indices

    rng = np.random.default_rng(3)
    a = np.round(rng.normal(size=(50, 40)), 1)        # many ties, in index order
    a[:5, 10:] = -np.inf
    for k in (1, 8, 40):
        want = np.argsort(-a, axis=-1, kind="stable")[:, :k]
        got = top_indices(a, k)
        # the same values in the same order; where values tie, lower index first
        assert np.array_equal(np.take_along_axis(a, got, -1),
                              np.take_along_axis(a, want, -1))
        kth = np.take_along_axis(a, want[:, -1:], -1)
        strict = np.take_along_axis(a, want, -1) > kth   # not tied with the k-th
        assert np.array_equal(np.where(strict, got, -1), np.where(strict, want, -1))
    t = torch.as_tensor(a)
    assert np.array_equal(top_indices(t, 8).numpy(),
                          np.argsort(-a, axis=-1, kind="stable")[:, :8])

"""``sampling_distribution`` and ``draw``: greedy, temperature, top-k and top-p.
Oracles: probabilities computed by hand with ``math.exp``, ``torch.softmax``,
``torch.topk``, a plain-Python nucleus written from Holtzman et al.'s definition
(sort, add up until the mass reaches p), and properties (sums to one, support size,
ties by id, frequencies of draws)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import mini_transformer as mt
from mini_transformer.sampling import draw

from helpers import TOL64, max_abs

LOGITS = [2.0, 1.0, 1.0, 0.0, -1.0]


def by_hand(logits, keep=None, tau=1.0):
    """exp(o/τ) of the kept ids, divided by their sum."""
    keep = range(len(logits)) if keep is None else keep
    e = [math.exp(o / tau) if i in keep else 0.0 for i, o in enumerate(logits)]
    return [x / sum(e) for x in e]


def nucleus(p, top_p):
    """Holtzman et al.'s top-p in plain Python: the most probable tokens (smaller id
    first among equals), added until their mass reaches top_p, renormalised."""
    order = sorted(range(len(p)), key=lambda i: (-p[i], i))
    kept, mass = [], 0.0
    for i in order:
        kept.append(i)
        mass += p[i]
        if mass >= top_p:
            break
    z = sum(p[i] for i in kept)
    return [p[i] / z if i in kept else 0.0 for i in range(len(p))]


def test_hand_computed_cases():
    o = np.array(LOGITS)
    assert max_abs(mt.sampling_distribution(o), by_hand(LOGITS)) < TOL64
    assert max_abs(mt.sampling_distribution(o, 0.5), by_hand(LOGITS, tau=0.5)) < TOL64
    # top-k = 2: ids 0 and 1 (1 and 2 tie; the smaller id ranks first)
    assert max_abs(mt.sampling_distribution(o, top_k=2), by_hand(LOGITS, {0, 1})) \
        < TOL64
    # p(0) = e² / Z ≈ 0.52 reaches 0.5 alone; 0.8 needs ids 0, 1, 2 (0.90)
    assert max_abs(mt.sampling_distribution(o, top_p=0.5), [1, 0, 0, 0, 0]) < TOL64
    assert max_abs(mt.sampling_distribution(o, top_p=0.8), by_hand(LOGITS, {0, 1, 2})) \
        < TOL64
    assert max_abs(mt.sampling_distribution(o, 0), [1, 0, 0, 0, 0]) == 0


def test_greedy_breaks_ties_by_id():
    o = np.array([0.0, 3.0, 1.0, 3.0])
    assert mt.sampling_distribution(o, 0).tolist() == [0, 1, 0, 0]


def test_temperature_is_the_softmax_of_scaled_logits():
    rng = np.random.default_rng(0)
    o = rng.normal(size=(3, 4, 50)) * 3
    for tau in (0.3, 1.0, 2.5):
        ref = torch.softmax(torch.tensor(o) / tau, dim=-1)
        assert max_abs(mt.sampling_distribution(o, tau), ref) < TOL64


@pytest.mark.parametrize("k", [1, 3, 17, 50, 80])
def test_top_k_matches_torch_topk(k):
    rng = np.random.default_rng(k)
    o = rng.normal(size=(6, 50))
    p = torch.softmax(torch.tensor(o) / 0.7, dim=-1)
    idx = torch.topk(p, min(k, 50), dim=-1).indices
    kept = torch.zeros_like(p).scatter(-1, idx, p.gather(-1, idx))
    ref = kept / kept.sum(-1, keepdim=True)
    got = mt.sampling_distribution(o, 0.7, top_k=k)
    assert max_abs(got, ref) < TOL64
    assert ((got > 0).sum(-1) == min(k, 50)).all()


@pytest.mark.parametrize("top_p", [0.05, 0.3, 0.9, 0.999, 1.0])
def test_top_p_matches_the_sorting_reference(top_p):
    rng = np.random.default_rng(1)
    o = rng.normal(size=(8, 40)) * 2
    got = mt.sampling_distribution(o, top_p=top_p)
    p = mt.softmax(o)
    for row, p_row in zip(got, p):
        assert max_abs(row, nucleus(list(p_row), top_p)) < TOL64
        # the smallest set: without its least probable kept token, the mass is < p
        kept = np.sort(p_row[row > 0])
        assert kept.sum() >= min(top_p, 1) - 1e-12 and kept[1:].sum() < top_p


def test_top_p_ties_break_by_id():
    o = np.log(np.array([0.2, 0.4, 0.2, 0.2]))
    # 0.4 (id 1), then the tied 0.2s in id order: id 0 reaches 0.6
    assert max_abs(mt.sampling_distribution(o, top_p=0.6), [1 / 3, 2 / 3, 0, 0]) \
        < TOL64


def test_top_k_then_top_p_and_masked_logits():
    o = np.array([1.0, -np.inf, 0.5, 0.2, 2.0])
    got = mt.sampling_distribution(o, top_k=3, top_p=0.7)
    after_k = by_hand([1.0, -50, 0.5, 0.2, 2.0], {0, 2, 4})
    assert max_abs(got, nucleus(after_k, 0.7)) < 1e-12
    assert got[1] == 0


def test_torch_tensors_give_the_numpy_result():
    rng = np.random.default_rng(2)
    o = rng.normal(size=(4, 30))
    for kw in ({}, {"temperature": 0}, {"top_k": 5}, {"top_p": 0.6},
               {"temperature": 1.5, "top_k": 10, "top_p": 0.8}):
        got = mt.sampling_distribution(torch.tensor(o), **kw)
        assert torch.is_tensor(got)
        assert max_abs(got, mt.sampling_distribution(o, **kw)) < TOL64


@pytest.mark.parametrize("kw, words", [
    ({"temperature": -1}, "temperature must be >= 0"),
    ({"temperature": "hot"}, "temperature must be a real number"),
    ({"temperature": float("nan")}, "temperature must be >= 0"),
    ({"top_k": 0}, "top_k must be an integer >= 1"),
    ({"top_k": 2.5}, "top_k must be an integer >= 1"),
    ({"top_k": True}, "top_k must be an integer >= 1"),
    ({"top_p": 0}, "top_p must be in (0, 1]"),
    ({"top_p": 1.5}, "top_p must be in (0, 1]"),
    ({"top_p": "all"}, "top_p must be a number"),
])
def test_bad_settings_are_refused(kw, words):
    with pytest.raises(ValueError) as e:
        mt.sampling_distribution(np.zeros(4), **kw)
    assert words in str(e.value)


@pytest.mark.parametrize("logits, words", [
    (np.array([0.0, np.nan]), "NaN"),
    (np.array([-np.inf, -np.inf]), "every logit of a row is -inf"),
    (np.array([0.0, np.inf]), "+inf"),
    (np.zeros(0), "logits"),
    (np.array([1, 2]), "floating"),
])
def test_bad_logits_are_refused(logits, words):
    with pytest.raises(ValueError) as e:
        mt.sampling_distribution(logits)
    assert words in str(e.value)


def test_draws_follow_the_distribution_and_never_a_zero():
    p = mt.sampling_distribution(np.array(LOGITS), top_k=3)
    rng = np.random.default_rng(0)
    ids = draw(np.tile(p, (20000, 1)), rng)
    freq = np.bincount(ids, minlength=5) / len(ids)
    assert freq[3] == freq[4] == 0
    assert np.abs(freq - p).max() < 0.015        # ≈ 4 standard errors at n = 20000

"""Checks at the door: a public function checks its arguments when a user calls it,
and the functions it calls inside run unchecked (their inputs were checked at the
door); the checks are complete at the door (``test_errors.py`` has every refusal).
"""

from __future__ import annotations

import numpy as np
import pytest

import mini_transformer as mt
from mini_transformer import _checks


@pytest.fixture
def namespace_calls(monkeypatch):
    """The ``names`` of every ``_checks.namespace`` call, in order."""
    calls, real = [], _checks.namespace

    def spy(*arrays, names=None):
        calls.append(names)
        return real(*arrays, names=names)

    monkeypatch.setattr(_checks, "namespace", spy)
    return calls


def test_a_public_call_is_checked_once(namespace_calls):
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mt.scaled_dot_product_attention(q, k, v)
    assert namespace_calls == [("q", "k", "v", "grad_output")]  # not softmax's again


def test_the_layers_inside_run_unchecked(namespace_calls):
    rng = np.random.default_rng(0)
    layer = mt.EncoderLayerParams.random(rng, d_model=8, n_heads=2)
    x = rng.normal(size=(2, 3, 8))
    mt.encoder_layer(x, layer)
    checked = [names[0] for names in namespace_calls]
    # the door: the attention's, the feed-forward's and the two LayerNorms' checks on
    # x, once each; nothing inside: no q, k, v, no softmax, no LayerNorm's own
    assert checked == ["x", "x", "x", "x"]


def test_layer_norm_checks_at_its_own_door(namespace_calls):
    """Called by a user, LayerNorm and its backward check their arguments (once)."""
    x = np.ones((2, 4))
    mt.layer_norm(x, np.ones(4), np.zeros(4))
    mt.layer_norm_backward(x, np.ones(4), x)
    assert [names[:2] for names in namespace_calls] == [("x", "gamma"), ("x", "gamma")]
    with pytest.raises(ValueError, match="gamma must have shape"):
        mt.layer_norm(x, np.ones(3), np.zeros(4))


def test_the_training_step_checks_at_its_door(namespace_calls):
    rng = np.random.default_rng(0)
    model = mt.TransformerParams.random(rng, vocab_size=10, d_model=8, n_heads=2,
                                        n_layers=1)
    src, tgt = rng.integers(0, 10, (2, 4)), rng.integers(0, 10, (2, 5))
    mt.loss_and_grads(model, src, tgt[:, :-1], tgt[:, 1:])
    doors = [n for n in namespace_calls if n and n[0] in ("embedding", "src", "q", "y")]
    assert len(doors) == 1 and doors[0][0] == "embedding"  # the params, once


def test_a_refusal_after_a_refusal_still_checks():
    """A refused call leaves no state behind: the next call is checked again."""
    rng = np.random.default_rng(0)
    q = rng.normal(size=(3, 4))
    for _ in range(2):
        with pytest.raises(ValueError, match="q and k must share"):
            mt.scaled_dot_product_attention(q, q[:, :3], q)

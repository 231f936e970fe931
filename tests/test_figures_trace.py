"""book/figures.py's ``trace``: the arrays drawn on Figure 1's arrows come from one
run of the model, so its last array is the model's output distribution, for post-LN
and pre-LN weights, with and without the final LayerNorms."""

import dataclasses
import pathlib
import sys

import numpy as np
import pytest

import mini_transformer as mt

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "book"))
import figures  # noqa: E402


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("final_norms", [False, True])
def test_trace_ends_with_the_models_softmax(rng, norm_first, final_norms):
    p = mt.TransformerParams.random(rng, vocab_size=11, d_model=8, n_heads=2, d_ff=16,
                                    n_layers=2)
    p = dataclasses.replace(p, norm_first=norm_first)
    if final_norms:
        p = dataclasses.replace(
            p, encoder_norm=mt.LayerNormParams(1 + rng.normal(0, 0.3, 8),
                                               rng.normal(0, 0.3, 8)),
            decoder_norm=mt.LayerNormParams(1 + rng.normal(0, 0.3, 8),
                                            rng.normal(0, 0.3, 8)))
    src, tgt = rng.integers(0, 11, (2, 5)), rng.integers(0, 11, (2, 4))
    src_mask = mt.padding_mask([5, 3], 5)              # (2, 1, 5): a key mask
    arrays = figures.trace(p, src, tgt, src_mask)
    name, last = list(arrays.items())[-1]
    want = mt.softmax(mt.transformer(src, tgt, p, src_mask), axis=-1)
    assert name == "P" and np.max(np.abs(last - want)) < 1e-14
    assert ("encoder norm" in arrays) == final_norms
    # each layer's drawn output is that layer run alone on the previous array
    x = arrays["X"]
    for i, layer in enumerate(p.encoder_layers):
        x = mt.encoder_layer(x, layer, src_mask, norm_first=norm_first)
        assert np.max(np.abs(arrays[f"encoder layer {i + 1}"] - x)) < 1e-14


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_trace_combines_a_target_mask_as_the_model(rng, kind):
    """A target mask (bool or float) joins the causal mask as in ``mt.transformer``."""
    p = mt.TransformerParams.random(rng, vocab_size=11, d_model=8, n_heads=2, d_ff=16,
                                    n_layers=1)
    src, tgt = rng.integers(0, 11, (2, 5)), rng.integers(0, 11, (2, 4))
    tgt_mask = mt.padding_mask([4, 2], 4)              # (2, 1, 4)
    if kind == "float":
        tgt_mask = np.where(tgt_mask, rng.normal(0, 1, (2, 4, 4)), -np.inf)
    last = list(figures.trace(p, src, tgt, tgt_mask=tgt_mask).values())[-1]
    want = mt.softmax(mt.transformer(src, tgt, p, tgt_mask=tgt_mask), axis=-1)
    assert np.max(np.abs(last - want)) < 1e-14

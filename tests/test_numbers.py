"""The translation chapter's training command runs and writes files that load."""

from __future__ import annotations

import numpy as np

import mini_transformer as mt
from mini_transformer import numbers


def test_train_command_runs(tmp_path):
    lines = []
    params, bpe, record = numbers.train(
        steps=2, eval_every=1, n_eval=4, n_pool=300, n_final=3, max_tokens=400,
        d_model=16, n_heads=2, n_layers=1, n_bpe=200, out_dir=tmp_path,
        log=lines.append)
    assert [row["step"] for row in record["log"]] == [1, 2]
    assert any(line.startswith("step     2  loss") for line in lines)
    again = mt.TransformerParams.load(tmp_path / numbers.MODEL)
    assert np.array_equal(again.embedding, params.embedding)
    assert mt.BPE.load(tmp_path / numbers.BPE_FILE).vocab == bpe.vocab

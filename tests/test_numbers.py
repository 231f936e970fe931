"""The translation chapter's trained model, as committed in book/data: it loads
with ``TransformerParams.load`` / ``BPE.load`` and translates held-out numbers
(n % 97 == 0, never trained on) through ``mt.translate``; the two commands run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import mini_transformer as mt
from mini_transformer import numbers
from mini_transformer.tasks import number_words, split_numbers

DATA = Path(__file__).resolve().parents[1] / "book" / "data"


def test_committed_model_translates_held_out_numbers():
    params = mt.TransformerParams.load(DATA / numbers.MODEL)
    bpe = mt.BPE.load(DATA / numbers.BPE_FILE)
    _, held = split_numbers()
    sample = np.concatenate([held[:12], held[12::250]])   # every length, 54 numbers
    assert {len(str(n)) for n in sample} == {1, 2, 3, 4, 5, 6}
    pairs = number_words(sample)
    hyps = mt.translate([s for s, _ in pairs], params, bpe, beam_size=4, alpha=0.6)
    wrong = [(h, t) for h, (_, t) in zip(hyps, pairs) if h != t]
    # The committed model: 97.05% of all held-out numbers with beam 4 (its log); the
    # goal of 99% is not met yet (failures: word-final "hundert" and "vier" where the
    # BPE splits them into rare pieces, e.g. "hund er t</w>", "vi ert ausend").
    assert len(wrong) <= 4, wrong  # 3 here, among them zero: "zero" is held out
    assert mt.translate("three hundred and forty-two", params, bpe) == \
        ["dreihundertzweiundvierzig"]


def test_committed_files_and_log():
    size = sum((DATA / f).stat().st_size for f in (numbers.MODEL, numbers.BPE_FILE))
    assert size <= 5 * 2**20
    record = json.loads((DATA / numbers.LOG).read_text())
    assert record["held_out_exact_match"]["beam4"] >= 0.97  # the goal, 0.99: not met
    steps = [row["step"] for row in record["log"]]
    assert steps == sorted(steps) and steps[-1] == record["settings"]["steps"]
    assert set(record["log"][0]) == {"step", "loss", "lr", "held_out_exact_match",
                                     "seconds"}


def test_translate_command(capsys):
    assert numbers.main(["translate", "three hundred and forty-two", "seven"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "three hundred and forty-two -> dreihundertzweiundvierzig",
        "seven -> sieben"]


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

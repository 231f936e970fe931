"""The translation chapter's trained model, shipped with the package: it loads
with ``load_model`` and translates held-out numbers (development and test, never
trained on) through ``mt.translate``; the two commands of
``python -m mini_transformer.number_words`` run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import mini_transformer as mt
from mini_transformer import number_words as experiment
from mini_transformer.number_words import Settings
from mini_transformer.number_words.cli import main
from mini_transformer.number_words.data import number_words, split_numbers

DATA = Path(__file__).resolve().parents[1] / "book" / "data"


def test_committed_model_translates_held_out_numbers():
    params, bpe = experiment.load_model()
    _, held = split_numbers()
    # the first 9 of every length, and every 250th
    sample = np.unique(np.concatenate([held[:12], held[12::250], *(
        held[(held >= 10 ** (k - 1)) & (held < 10 ** k)][:9] for k in range(1, 7))]))
    assert {len(str(n)) for n in sample} == {1, 2, 3, 4, 5, 6}  # zero is trained on
    pairs = number_words(sample)
    hyps = mt.translate([s for s, _ in pairs], params, bpe, beam_size=4, alpha=0.6)
    wrong = [(h, t) for h, (_, t) in zip(hyps, pairs) if h != t]
    assert len(wrong) <= 1, wrong
    assert mt.translate("three hundred and forty-two", params, bpe) == \
        ["dreihundertzweiundvierzig"]


def test_committed_files_and_log():
    record = json.loads((DATA / experiment.LOG).read_text())
    files = [experiment.MODEL_DIR / experiment.MODEL,
             experiment.MODEL_DIR / experiment.BPE_FILE, DATA / experiment.LAST,
             DATA / experiment.LOG,
             DATA / experiment.EARLY.format(step=500)]       # the chapter's
    assert sum(f.stat().st_size for f in files) <= 5 * 10**6
    assert record["dev_exact_match"]["beam4"] >= 0.99
    assert record["dev_exact_match"]["greedy"] >= 0.99
    assert len(record["losses"]) == record["settings"]["steps"]
    steps = [row["step"] for row in record["log"]]
    assert steps == sorted(steps) and steps[-1] == record["settings"]["steps"]
    assert set(record["log"][0]) == {"step", "loss", "lr", "dev_exact_match",
                                     "seconds"}


def test_translate_command(capsys):
    assert main(["translate", "three hundred and forty-two", "seven"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "three hundred and forty-two -> dreihundertzweiundvierzig",
        "seven -> sieben"]


def test_train_command_runs(tmp_path):
    lines = []
    small = dict(eval_every=1, n_eval=4, n_chunk=300, max_tokens=400, d_model=16,
                 n_heads=2, n_layers=1, n_bpe=1000, vocab_size=200)
    statuses = []
    params, bpe, record = experiment.train(
        Settings(steps=2, n_final=3, average_every=1, average_last=2, keep_steps=(1,),
                 **small), out_dir=tmp_path, log=lines.append,
        progress=statuses.append)
    assert [s[:12] for s in statuses[:2]] == ["step     1/2", "step     2/2"]
    assert statuses[1].startswith(f"step     2/2  loss {record['losses'][-1]:.4f}")
    assert statuses[1].endswith("0 s left")
    assert [s.split(",")[0] for s in statuses[2:]] == [
        "final evaluation 1/3 (greedy): 3 of 3 numbers",
        "final evaluation 2/3 (beam4): 3 of 3 numbers",
        "final evaluation 3/3 (last_greedy): 3 of 3 numbers"]
    assert [row["step"] for row in record["log"]] == [1, 2]
    assert record["machine"]["cpus"] >= 1 and record["machine"]["numpy"] == np.__version__
    assert any(line.startswith("step     2  loss") for line in lines)
    again = mt.TransformerParams.load(tmp_path / experiment.MODEL)
    assert np.array_equal(again.embedding, params.embedding)
    assert mt.BPE.load(tmp_path / experiment.BPE_FILE).vocab == bpe.vocab
    # a one-step run repeats the first step; the model written is the average of
    # the weights after steps 1 and 2, and the weights after step 1 are kept
    one, _, record1 = experiment.train(Settings(steps=1, n_final=0, average_last=0,
                                             **small), out_dir=None, log=lines.append)
    assert record1["losses"] == record["losses"][:1]
    step1 = mt.TransformerParams.load(tmp_path / experiment.EARLY.format(step=1))
    assert np.array_equal(step1.embedding, one.embedding)
    last = mt.TransformerParams.load(tmp_path / experiment.LAST)
    assert not np.allclose(last.embedding, one.embedding)
    np.testing.assert_allclose(params.embedding, (one.embedding + last.embedding) / 2,
                               rtol=1e-6, atol=1e-7)


def test_train_on_torch_repeats_the_numpy_run():
    """``--device``: the same functions on torch tensors. Without dropout (whose masks
    come from different generators) the two runs see the same data from the same
    weights, so their float64 losses agree to rounding."""
    small = dict(steps=3, eval_every=3, n_eval=2, n_chunk=200, max_tokens=300,
                 d_model=16, n_heads=2, n_layers=1, n_bpe=1000, vocab_size=200,
                 p_drop=0.0, dtype="float64", n_final=0, average_last=0)
    quiet = dict(out_dir=None, log=lambda s: None)
    _, _, on_numpy = experiment.train(Settings(**small), **quiet)
    params, _, on_torch = experiment.train(Settings(device="cpu", **small), **quiet)
    np.testing.assert_allclose(on_torch["losses"], on_numpy["losses"], rtol=1e-9)
    assert on_torch["settings"]["device"] == "cpu"
    assert isinstance(params.embedding, np.ndarray)


def test_load_model_finds_the_shipped_model_and_refuses_a_foreign_bpe(tmp_path):
    """load_model(): the package's own files; a folder or an .npz path loads the
    same; a BPE of another size is refused on load, naming both sizes; a missing
    BPE is named."""
    params, bpe = experiment.load_model()
    assert experiment.MODEL_DIR.parent == Path(experiment.__file__).parent
    assert params.vocab_size == len(bpe) == 307
    shutil.copy(experiment.MODEL_DIR / experiment.MODEL, tmp_path)
    with pytest.raises(FileNotFoundError, match=f"{experiment.BPE_FILE}: no such BPE"):
        experiment.load_model(tmp_path)
    small = mt.BPE.learn(["one two", "eins zwei"], vocab_size=20)
    small.save(tmp_path / experiment.BPE_FILE)
    with pytest.raises(ValueError, match=f"the BPE has {len(small)} tokens, the "
                                         f"model's vocabulary {len(bpe)}"):
        experiment.load_model(tmp_path)
    shutil.copy(experiment.MODEL_DIR / experiment.BPE_FILE, tmp_path)
    for path in (tmp_path, tmp_path / experiment.MODEL, str(tmp_path)):
        again, bpe2 = experiment.load_model(path)
        assert np.array_equal(again.embedding, params.embedding)
        assert bpe2.merges == bpe.merges
    with pytest.raises(FileNotFoundError, match="no such model file"):
        experiment.load_model(tmp_path / "elsewhere")

"""The command line ``pydoc-lm`` (mini_transformer.pydoc_lm.cli) and its corpus, as
a user meets them: usage errors found before any work (exit 2, naming the option),
a missing model (exit 1), a tiny training run written to a folder and sampled
from, the same seed giving the same text, no model overwritten without --force.
Oracles: the files on disk, ``mt.generate`` on the loaded weights, the corpus's
documented split rule re-applied to the shipped files."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mini_transformer as mt
from mini_transformer.pydoc_lm import LOG, MODEL, cli, data, load_model

TINY = ["--steps", "3", "--eval-every", "3", "--d-model", "8", "--n-heads", "2",
        "--n-layers", "1", "--context", "8", "--batch", "2"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("lm")
    assert cli.main(["train", "--out-dir", str(out), "--force", *TINY]) == 0
    return out


def test_training_writes_the_weights_and_the_log(tiny):
    log = json.loads((tiny / LOG).read_text())
    assert log["settings"]["d_model"] == 8 and log["steps"] == [3]
    params = load_model(tiny)
    assert params.d_model == 8 and len(params.decoder_layers) == 1


def test_sample_prints_the_prompt_and_what_generate_draws(tiny, capsys):
    assert cli.main(["sample", "The if", "--length", "12", "--seed", "3",
                     "--temperature", "0.9", "--top-k", "20",
                     "--model", str(tiny)]) == 0
    out = capsys.readouterr().out
    tokens, _ = mt.generate(load_model(tiny), data.encode("\n\nThe if"), 12,
                            temperature=0.9, top_k=20, rng=np.random.default_rng(3),
                            context=8)
    assert out == data.decode(tokens[2:]) + "\n" and out.startswith("The if")


def test_training_refuses_to_overwrite_a_model(tiny, capsys):
    assert cli.main(["train", "--out-dir", str(tiny), *TINY]) == 2
    assert "--force" in capsys.readouterr().err


@pytest.mark.parametrize("argv, words", [
    (["sample", "--temperature", "-1"], "--temperature"),
    (["sample", "--top-p", "0"], "--top-p"),
    (["sample", "--top-p", "1.5"], "--top-p"),
    (["sample", "--top-k", "0"], "--top-k"),
    (["sample", "--length", "x"], "--length"),
    (["train", "--d-model", "10", "--n-heads", "4"], "--d-model"),
    (["train", "--steps", "0"], "--steps"),
    (["train", "--lr", "2"], "--lr"),
    (["score", "--split", "validation"], "--split"),
])
def test_usage_errors_exit_2_naming_the_option(argv, words, capsys, tmp_path,
                                               monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        status = cli.main(argv)
        raise SystemExit(status)
    err = capsys.readouterr().err
    assert e.value.code == 2 and words in err and len(err.splitlines()) == 1
    assert not (tmp_path / cli.OUT_DIR).exists()        # no work was done


def test_a_missing_model_exits_1(tmp_path, capsys):
    assert cli.main(["sample", "--model", str(tmp_path / "none.npz")]) == 1
    assert "no such model file" in capsys.readouterr().err


def test_the_shipped_split_follows_its_rule():
    from pydoc_data.topics import topics

    info = json.loads((data.CORPUS_DIR / "split.json").read_text())
    if set(topics) == {n for names in info["topics"].values() for n in names}:
        assert data.split_topics(topics, info["seed"]) == info["topics"]
    shipped = {s: data.load_text(s) for s in data.SPLITS}
    assert all(t.startswith(data.SEPARATOR) for t in shipped.values())
    for s in data.SPLITS:
        assert "".join(data.SEPARATOR + t for t in data.pages(s).values()) == shipped[s]
    names = [set(v) for v in info["topics"].values()]
    assert not (names[0] & names[1] or names[0] & names[2] or names[1] & names[2])
    total = sum(len(t) for t in shipped.values())
    assert len(shipped["test"]) >= 0.1 * total and len(shipped["dev"]) >= 0.1 * total
    assert (data.CORPUS_DIR / "LICENSE.txt").read_text().count("PYTHON SOFTWARE "
                                                                "FOUNDATION") >= 1


def test_bytes_round_trip():
    text = data.load_text("test")
    assert data.decode(data.encode(text)) == text


# --- the count-based baselines ---------------------------------------------------------

TRAIN = "\n\nthe cat sat on the mat; the hat is flat.\n"


def test_add_k_bpc_equals_counting_in_plain_python():
    from collections import Counter

    from mini_transformer.pydoc_lm import baselines

    text = "\n\nthe rat ate.\n"
    for n, k in ((1, 0.5), (2, 0.1), (3, 0.01)):
        b = TRAIN.encode()
        grams = Counter(b[i:i + n] for i in range(len(b) - n + 1))
        hists = Counter(b[i:i + n - 1] for i in range(len(b) - n + 1))
        t = text.encode()
        bits = 0.0
        for j in range(2, len(t)):
            h = t[j - n + 1:j]
            total = hists[h] if n > 1 else len(b)
            bits -= np.log2((grams[h + t[j:j + 1]] + k) / (total + 256 * k))
        assert abs(baselines.add_k_bpc(TRAIN, text, n, k) - bits / (len(text) - 2)) \
            < 1e-12


def test_kneser_ney_is_a_distribution_for_every_history():
    from mini_transformer.pydoc_lm import baselines

    train = data.encode(TRAIN)
    for a, b in ("th", "at", "zq", "xt", "\n\n"):    # seen, seen, unseen, new a, start
        history = (ord(a) * 256 + ord(b)) * 256
        p = baselines.kneser_ney_probs(train, history + np.arange(256), 0.7)
        assert abs(p.sum() - 1) < 1e-12 and (p > 0).all()
    # a seen trigram keeps most of its count: C(t h e) = 3 of C(t h) = 3
    p_the = baselines.kneser_ney_probs(train, np.array([(116 * 256 + 104) * 256 + 101]),
                                       0.7)
    assert p_the[0] > (3 - 0.7) / 3


def test_the_log_is_written_at_every_evaluation(tmp_path):
    from mini_transformer.pydoc_lm import Settings, train

    seen = []

    def watch(line):      # the log on disk when each step's line is printed
        if line.startswith("step"):
            seen.append(json.loads((tmp_path / LOG).read_text())["steps"])

    train(Settings(steps=4, eval_every=2, d_model=8, n_heads=2, n_layers=1, context=8,
                   batch=2), tmp_path, log=watch)
    assert seen == [[2], [2, 4]]

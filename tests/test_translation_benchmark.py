"""benchmarks/translation.py runs (tiny settings) and writes what it promises."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_translation_benchmark_quick(tmp_path):
    import translation

    out = tmp_path / "translation.json"
    translation.main(["--quick", "--out", str(out)])
    result = json.loads(out.read_text())
    steps = result["step_seconds"]
    assert steps["numpy_hand"] > 0 and steps["torch_nn_transformer"] > 0
    assert result["time_to_99"] == {}
    assert result["decoding"]["n"] == 20
    assert result["decoding"]["beam4"]["seconds"] > 0


def test_characters_against_subwords_runs():
    import numpy as np
    import translation

    import mini_transformer as mt
    from mini_transformer.number_words import training_numbers
    from mini_transformer.number_words.data import number_words

    pool = number_words(training_numbers(np.random.default_rng(0), 200))
    bpe = mt.BPE.learn([t for p in pool for t in p], 80)
    evaluation = number_words([97, 194, 9_700])
    out = translation.chars_vs_subwords(bpe, pool, evaluation, seconds=0.2)
    assert set(out) == {"subwords", "characters"}
    for name, r in out.items():
        marks = (0.05, 0.1, 0.15, 0.2)
        assert all(row["seconds"] >= s for row, s in zip(r["after"], marks))
        assert all(0 <= row["exact_match"] <= 1 for row in r["after"])
    # the same numbers, more tokens as characters (an oracle: the characters counted)
    n_chars = np.mean([len(t.replace(" ", "")) for _, t in pool])
    # rounded to 2 decimals by the script (a mean such as 40.455 may round either way)
    assert abs(out["characters"]["mean_target_tokens"] - n_chars) <= 0.005 + 1e-9
    assert out["subwords"]["mean_target_tokens"] < out["characters"]["mean_target_tokens"]

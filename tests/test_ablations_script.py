"""benchmarks/ablations.py runs on its tiny setting and writes what chapter 15 reads."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_ablations_quick(tmp_path):
    import ablations

    out = tmp_path / "ablations.json"
    ablations.main(["--quick", "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["meta"]["quick"] is True and result["meta"]["total_s"] > 0
    assert set(result["experiments"]) == {"scale_dk64", "scale_dk8", "layernorm", "smoothing"}
    for name, exp in result["experiments"].items():
        cfg = exp["config"]
        expected = {(s, seed) for s in cfg["settings"] for seed in cfg["seeds"]}
        assert {(r["setting"], r["seed"]) for r in exp["runs"]} == expected, name
        for r in exp["runs"]:
            assert len(r["loss"]) == len(r["lr"]) == cfg["steps"] and not r["diverged"]
            assert all(math.isfinite(x) and x > 0 for x in r["loss"])
            assert r["eval_steps"][-1] == cfg["steps"] and len(r["evals"]) == len(r["eval_steps"])
            for e in [r["initial"], *r["evals"]]:
                assert 0 <= e["accuracy"] <= 1
                assert 0 < e["confidence"] <= 1 and 1 <= e["perplexity"] < 1e3
                assert math.isclose(e["perplexity"], math.exp(e["nll"]), rel_tol=1e-6)
                assert 0 < e["max_weight_enc0"] <= 1
    # Something real about the numbers: without the scale, the softmax of a random model is
    # sharper; a run "without warm-up" starts at the schedule's peak, the warm-up run below it;
    # the first loss of a run is near ln V (a random model guesses).
    dk64 = result["experiments"]["scale_dk64"]
    runs = {(r["setting"], r["seed"]): r for r in dk64["runs"]}
    for seed in dk64["config"]["seeds"]:
        assert (runs["unscaled", seed]["initial"]["max_weight_enc0"]
                > runs["scaled", seed]["initial"]["max_weight_enc0"])
    # the two scale experiments differ in the number of heads only
    m64, m8 = (result["experiments"][n]["config"] for n in ("scale_dk64", "scale_dk8"))
    assert m64["model"] | {"n_heads": m8["model"]["n_heads"]} == m8["model"]
    assert m8["model"]["n_heads"] > m64["model"]["n_heads"] == 1
    assert {k: v for k, v in m64.items() if k != "model"} == {
        k: v for k, v in m8.items() if k != "model"}
    ln = {r["setting"]: r for r in result["experiments"]["layernorm"]["runs"]}
    cfg = result["experiments"]["layernorm"]["config"]
    peak = ablations.learning_rate(cfg["warmup"], cfg["model"]["d_model"], cfg["warmup"])
    assert math.isclose(ln["post-LN, no warm-up"]["lr"][0], peak)
    assert ln["post-LN, warm-up"]["lr"][0] < peak / 2
    for exp in result["experiments"].values():
        for r in exp["runs"]:
            assert abs(r["loss"][0] - math.log(ablations.VOCAB)) < 1.5


def test_unscaled_attention_cancels_the_scale():
    import ablations
    import numpy as np

    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(2, 5, 16)) for _ in range(3))
    out, weights = ablations.unscaled_attention(q, k, v)
    expected = np.exp(q @ k.transpose(0, 2, 1))
    expected /= expected.sum(-1, keepdims=True)
    assert np.allclose(weights, expected, rtol=1e-12, atol=1e-15)
    assert np.allclose(out, expected @ v, rtol=1e-12)


def test_translation_ablation_quick(tmp_path):
    """--translation: three runs of chapter 17's translator, each changing one setting."""
    import ablations

    out = tmp_path / "ablations_translation.json"
    ablations.main(["--translation", "--quick", "--out", str(out)])
    result = json.loads(out.read_text())
    cfg = ablations.TRANSLATION_QUICK
    runs = {r["setting"]: r for r in result["runs"]}
    assert {name: (r["p_drop"], r["label_smoothing"]) for name, r in runs.items()} == {
        "recipe": (0.1, 0.1), "no dropout": (0.0, 0.1), "no label smoothing": (0.1, 0.0)}
    for r in runs.values():
        assert len(r["loss"]) == cfg["steps"] and 0 <= r["exact_match"] <= 1
        assert len(r["wrong"]) == round((1 - r["exact_match"]) * cfg["n_eval"])
        # a random model's first loss is near ln V, and its held-out loss too
        assert abs(r["loss"][0] - math.log(result["bpe_size"])) < 1.5
        assert abs(r["held_out_loss"] - math.log(result["bpe_size"])) < 1.5
    # the same first batch, weights and masks: dropout off changes the first loss, and
    # smoothing off changes it too (the smoothed loss is not the plain one)
    assert runs["no dropout"]["loss"][0] != runs["recipe"]["loss"][0]
    assert runs["no label smoothing"]["loss"][0] != runs["recipe"]["loss"][0]
    draws = result["draws"]
    assert draws["steps"] == cfg["draw_steps"] > cfg["steps"]
    assert cfg["steps"] <= draws["pairs_first_steps"] < draws["pairs"]
    assert draws["distinct"] <= draws["pairs"]


def test_held_out_loss_is_the_mean_nll_of_each_pair_alone():
    """The padded batch's loss equals torch's cross-entropy summed over each pair run
    alone, without padding, divided by the number of predicted tokens."""
    import ablations
    import numpy as np
    import torch
    import torch.nn.functional as F

    import mini_transformer as mt
    from mini_transformer.number_words.data import encode_pairs
    from mini_transformer.number_words.data import number_words

    pairs = number_words([3, 42, 1234, 700_015])
    bpe = mt.BPE.learn([t for p in pairs for t in p], vocab_size=60)
    params = mt.TransformerParams.random(np.random.default_rng(0), vocab_size=len(bpe),
                                         d_model=16, n_heads=2, n_layers=1)
    total, count = 0.0, 0
    for src, tgt in zip(*encode_pairs(pairs, bpe)):
        logits = mt.transformer(np.array([src]), np.array([tgt[:-1]]), params)[0]
        total += float(F.cross_entropy(torch.tensor(logits), torch.tensor(tgt[1:]),
                                       reduction="sum"))
        count += len(tgt) - 1
    assert math.isclose(ablations.held_out_loss(params, pairs, bpe), total / count,
                        rel_tol=1e-9)


def test_only_keeps_the_other_experiments(tmp_path):
    """--only reruns some experiments and keeps the others from the existing file."""
    import ablations

    out = tmp_path / "ablations.json"
    ablations.main(["--quick", "--only", "smoothing", "--out", str(out)])
    first = json.loads(out.read_text())
    ablations.main(["--quick", "--only", "layernorm", "--out", str(out)])
    merged = json.loads(out.read_text())
    assert set(merged["experiments"]) == {"smoothing", "layernorm"}
    assert merged["experiments"]["smoothing"] == first["experiments"]["smoothing"]
    assert merged["meta"]["only"] == ["layernorm"]
    assert merged["meta"]["previous_meta"] == first["meta"]

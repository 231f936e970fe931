"""The benchmark scripts run (tiny settings) and write what the chapters read."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_backward_benchmark_quick(tmp_path):
    import backward

    out = tmp_path / "backward.json"
    backward.main(["--quick", "--out", str(out)])
    result = json.loads(out.read_text())
    kinds = {(r["what"], r["dtype"]) for r in result["rows"]}
    assert kinds == {(w, d) for w in ("attention", "encoder_layer")
                     for d in ("float32", "float64")}
    for row in result["rows"]:
        assert row["hand_s"] > 0 and row["autograd_s"] > 0
        assert row["hand_over_autograd"] == pytest.approx(row["hand_s"] / row["autograd_s"])
    for row in result["tiled"]:   # (the memory bound itself: test_backward.py, at T = 16384)
        assert row["tiled_backward_peak_mib"] > 0 and row["tiled_forward_s"] > 0
        assert row["backward_over_forward"] == pytest.approx(
            row["tiled_backward_s"] / row["tiled_forward_s"])
    assert [t["name"] for t in result["targets"]] == ["encoder_layer_float32_hand_over_autograd"]


def test_training_benchmark_quick(tmp_path):
    import training

    out = tmp_path / "training.json"
    training.main(["--quick", "--out", str(out)])
    result = json.loads(out.read_text())
    assert {r["impl"] for r in result["rows"]} == {"numpy_hand", "package_autograd", "torch_nn"}
    assert all(r["step_s"] > 0 for r in result["rows"])
    (target,) = result["targets"]
    assert target["name"] == "numpy_hand_over_torch_nn_notebook" and target["bound"] == 1.0


def test_training_benchmark_pads_and_measures_memory():
    import training

    rng = np.random.default_rng(0)
    src, tgt = training.batch_of(rng, "translation")
    lengths = np.sum(src != training.PAD, axis=1)
    assert src.shape == (300, 10) and lengths.min() >= 5 and lengths.min() < 10
    # padding only at the end of a sequence
    assert all((row[n:] == training.PAD).all() and (row[:n] != training.PAD).all()
               for row, n in zip(src, lengths))
    assert training.peak_step_bytes("notebook") > 64 * 8 * 32 * 4   # > one activation


def test_profile_step_names_the_step_and_its_products(capsys):
    import profile_step

    profile_step.main(["--size", "notebook", "--steps", "1", "--top", "40"])
    out = capsys.readouterr().out
    assert "loss_and_grads" in out and "adam_step" in out and "rows_matmul" in out


def test_training_versions_times_two_copies_of_the_package(tmp_path):
    import training_versions

    root = Path(__file__).resolve().parents[1]          # holds mini_transformer/
    out = tmp_path / "versions.json"
    training_versions.main([str(root), str(root), "--sizes", "notebook", "--reps", "1",
                            "--out", str(out)])
    (row,) = json.loads(out.read_text())["rows"]
    assert row["before_s"] > 0 and row["after_s"] > 0 and row["torch_nn_s"] > 0
    assert row["after_over_before"] == pytest.approx(row["after_s"] / row["before_s"])

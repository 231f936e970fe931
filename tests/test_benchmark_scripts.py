"""The benchmark scripts run (tiny settings) and write what the chapters read."""

from __future__ import annotations

import json
import sys
from pathlib import Path

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

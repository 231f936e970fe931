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

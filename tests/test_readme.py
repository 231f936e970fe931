"""The README's Python example runs, and does what its comments say."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_and_numpy_matches_torch():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) == 1, "the README has one Python example"
    scope: dict = {}
    exec(compile(blocks[0], str(README), "exec"), scope)  # noqa: S102 (our own README)
    y, y_t = scope["y"], scope["y_t"]
    assert y.shape == (2, 5, 16) and tuple(y_t.shape) == (2, 5, 16)
    assert np.abs(y - y_t.numpy()).max() < 1e-5  # float64 NumPy vs float32 torch
    # Post-LN output with gamma ~ 1, beta ~ 0: every position roughly standardised.
    assert np.abs(y.mean(axis=-1)).max() < 0.2

"""The README's Python examples run as written, and do what their comments say."""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_example_runs_and_numpy_matches_torch():
    block, = [b for b in _blocks() if "mt.encoder_layer" in b]
    scope: dict = {}
    exec(compile(block, str(README), "exec"), scope)  # noqa: S102 (our own README)
    y, y_t = scope["y"], scope["y_t"]
    assert y.shape == (2, 5, 16) and tuple(y_t.shape) == (2, 5, 16)
    assert np.abs(y - y_t.numpy()).max() < 1e-5  # float64 NumPy vs float32 torch
    # Post-LN output with gamma ~ 1, beta ~ 0: every position roughly standardised.
    assert np.abs(y.mean(axis=-1)).max() < 0.2


def test_the_translate_example_prints_what_its_comment_says():
    """The number-words example, run as written: what it prints is the list in its
    comment, and its assertion holds."""
    from mini_transformer.number_words import NotANumber, number_words

    block, = [b for b in _blocks() if "number_words import" in b]
    printed = io.StringIO()
    scope: dict = {}
    with contextlib.redirect_stdout(printed):
        exec(compile(block, str(README), "exec"), scope)  # noqa: S102
    comment = re.search(r"print\(.*?\)\s*# (\[.*?\])", block).group(1)
    assert printed.getvalue().strip() == comment
    german = ast.literal_eval(comment)
    # the oracle: num2words' German of 42, 101 and 1984
    assert german == [de for _, de in number_words([42, 101, 1984])]
    assert isinstance(scope["german"][3], NotANumber)
    assert scope["german"][3].kind == "word"

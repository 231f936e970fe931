"""Every figure of every notebook says what it shows, from the numbers its cells computed.

``_ext/figure_alt.py`` sets each figure's alt text from its cell's ``alt`` metadata, a
format string over the notebook's glued values. These tests check, on the notebooks as
stored: every code cell that shows an image has an alt text for each image; every key it
names was glued; the formatted text is plain words and numbers, not a file name; and the
formatter shows a value exactly as the prose does (myst-nb's glue formatter is the oracle).
"""

import json
import sys
from pathlib import Path

import pytest
from myst_nb.core.variables import format_plain_text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import figure_alt  # noqa: E402

NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))


def load(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    "nb", [pytest.param(p, marks=pytest.mark.xfail(
        p.stem in figure_alt.PENDING, strict=True,
        reason="alt text not written yet (figure_alt.PENDING)")) for p in NOTEBOOKS],
    ids=lambda p: p.stem)
def test_every_image_has_an_alt_text(nb):
    missing = figure_alt.missing(load(nb))
    assert missing == [], f"{nb.name}: cells {missing} show an image without 'alt'"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_alt_texts_format_from_stored_values(nb):
    data = load(nb)
    alts = figure_alt.notebook_alts(data)        # raises on an unknown key, a bad format
    for index, texts in alts.items():
        assert len(texts) == figure_alt.image_count(data["cells"][index])
        for text in texts:
            assert len(text.split()) >= 8, f"cell {index}: too short: {text!r}"
            assert len(text) <= 700, f"cell {index}: {len(text)} characters"
            # plain text: no TeX, no markup, no unformatted field left
            for bad in ("$", "\\", "{", "}", "<", ">", "_images"):
                assert bad not in text, f"cell {index}: {bad!r} in {text!r}"


def test_pending_lists_only_notebooks_with_figures_left():
    names = {p.stem for p in NOTEBOOKS}
    assert figure_alt.PENDING <= names


VALUES = {"h": "2.4137", "n": "10310", "name": "'NVIDIA H200'", "p": "0.99592628"}


@pytest.mark.parametrize("template, expected", [
    ("falls from {h:.2f} nats", "falls from 2.41 nats"),
    ("{n:,d} steps on the {name}", "10,310 steps on the NVIDIA H200"),
    ("{p:.1%} of the weight", "99.6% of the weight"),
    ("braces {{kept}} as text, {n}", "braces {kept} as text, 10310"),
])
def test_format_alt(template, expected):
    assert figure_alt.format_alt(template, VALUES) == expected


@pytest.mark.parametrize("key, fmt", [("h", ".2f"), ("n", ",d"), ("p", ".1%"),
                                      ("name", None), ("h", ".3g")])
def test_format_alt_shows_a_value_as_the_glue_role_does(key, fmt):
    field = "{" + key + (":" + fmt if fmt else "") + "}"
    expected = format_plain_text(VALUES[key], fmt or "")
    assert figure_alt.format_alt(field, VALUES) == expected


@pytest.mark.parametrize("template, message", [
    ("rises to {missing:.2f}", "did not glue"),
    ("rises to {h!r}", "only {key}"),
    ("rises to {h[0]}", "only {key}"),
    ("rises to {h:.2d}", "alt field"),
    ("unclosed {h", "bad alt template"),
    ("../_images/23fd766e0cc94e1121af7b0442ebe74afbbd0d75fad9b764dc782d43991c115e.png",
     "file name"),
    ("see figure.png", "file name"),
])
def test_format_alt_refuses(template, message):
    with pytest.raises(figure_alt.AltError, match=message.replace("{", r"\{")):
        figure_alt.format_alt(template, VALUES)


def _image_cell(alt=None, images=1):
    out = {"output_type": "display_data", "metadata": {},
           "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}}
    cell = {"cell_type": "code", "metadata": {}, "source": "", "outputs": [out] * images}
    if alt is not None:
        cell["metadata"]["alt"] = alt
    return cell


def test_alt_count_must_match_the_images():
    nb = {"cells": [_image_cell(["one alt text for a figure with two images"], 2)]}
    with pytest.raises(figure_alt.AltError, match="cell 0: 1 alt texts for 2 images"):
        figure_alt.notebook_alts(nb)
    nb = {"cells": [_image_cell(), _image_cell("a plot of the weights", 1)]}
    assert figure_alt.missing(nb) == [0]
    assert figure_alt.notebook_alts(nb) == {1: ["a plot of the weights"]}

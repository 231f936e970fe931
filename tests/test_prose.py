"""The numbers and listings written into the chapters' prose equal what the code computed.

nbval checks that each stored glued value is what the notebook computes today; these tests
check that the prose shows exactly those stored values (formatted as the marker says) and
exactly the package's current source, so neither can drift.
"""

import json
import sys
from pathlib import Path

import pytest
from myst_nb.core.variables import format_plain_text

BOOK = Path(__file__).resolve().parents[1] / "book"
sys.path.insert(0, str(BOOK))
import prose  # noqa: E402

NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_prose_shows_the_stored_values_and_the_package_source(nb):
    assert prose.check(nb) == []


def test_every_notebook_prose_is_plain_markdown():
    """No MyST glue role or literalinclude is left: they show as raw text in JupyterLab."""
    left = [
        f"{nb.name}: {word}"
        for nb in NOTEBOOKS
        for cell in json.loads(nb.read_text())["cells"]
        if cell["cell_type"] == "markdown"
        for word in ("{glue:", "{literalinclude}")
        if word in "".join(cell["source"])
    ]
    assert left == []


@pytest.mark.parametrize(
    "stored, fmt",
    [("0.60946004", ".4f"), ("12.123939", ".1f"), ("10310", ",d"), ("0.99592628", ".2%"),
     ("3.2e-05", ".2g"), ("1e-13", None), ("'2.13.0'", None), ("True", None),
     ("1234567.0", ",.0f"), ("-0.5", "+.2f")],
)
def test_format_value_matches_the_glue_role(stored, fmt):
    """The book's glue role (myst-nb's formatter) is the oracle for how a value is shown."""
    assert prose.format_value(stored, fmt) == format_plain_text(stored, fmt or "")


def _notebook(tmp_path, markdown, values):
    outputs = [
        {"output_type": "display_data", "metadata": {"scrapbook": {"name": k}},
         "data": {prose.RECORD: v}}
        for k, v in values.items()
    ]
    nb = {"cells": [
        {"cell_type": "code", "metadata": {}, "source": [], "outputs": outputs},
        {"cell_type": "markdown", "metadata": {}, "source": [markdown]},
    ]}
    path = tmp_path / "probe.ipynb"
    path.write_text(json.dumps(nb))
    (tmp_path / "mod.py").write_text(
        "import x\n\n\n@decorate\ndef f(a):\n    return a  # one\n\n\n"
        "class C:\n    z = 1\n\n    def g(self):\n        return 2\n"
    )
    return path


def test_a_changed_value_is_caught_and_synced(tmp_path):
    path = _notebook(tmp_path, "weight 0.6094<!--glue:w:.4f--> and 7<!--glue:n:d-->.",
                     {"w": "0.60946004", "n": "7"})
    assert prose.check(path) == [
        "probe.ipynb, cell 1: w: the prose shows '0.6094', the value is '0.6095'"]
    assert prose.check(path, write=True) == []
    cell = json.loads(path.read_text())["cells"][1]
    assert "".join(cell["source"]) == "weight 0.6095<!--glue:w:.4f--> and 7<!--glue:n:d-->."


def test_a_number_is_matched_whole(tmp_path):
    """The stored 1 is not shown by "21": the whole number before the marker must match."""
    path = _notebook(tmp_path, "of 21<!--glue:n:d--> and 3.5<!--glue:x:.1f-->.",
                     {"n": "1", "x": "13.5"})
    assert prose.check(path) == [
        "probe.ipynb, cell 1: n: the prose shows '21', the value is '1'",
        "probe.ipynb, cell 1: x: the prose shows '3.5', the value is '13.5'"]
    assert prose.check(path, write=True) == []


def test_a_missing_value_is_caught(tmp_path):
    path = _notebook(tmp_path, "n = 3<!--glue:gone:d-->", {})
    assert prose.check(path) == [
        "probe.ipynb, cell 1: gone: no stored value (is its glue cell run?)"]


def test_a_listing_follows_the_package(tmp_path):
    stale = "<!--source mod.py f-->\n```python\ndef f(a):\n    return a\n```\nafter"
    path = _notebook(tmp_path, stale, {})
    assert prose.check(path) == [
        "probe.ipynb, cell 1: listing f (mod.py) differs from the package"]
    assert prose.check(path, write=True) == []
    text = "".join(json.loads(path.read_text())["cells"][1]["source"])
    assert text == (
        "<!--source mod.py f-->\n```python\n@decorate\ndef f(a):\n"
        "    return a  # one\n```\nafter")


def test_listing_of_a_method_and_end_before(tmp_path):
    _notebook(tmp_path, "", {})
    assert prose.listing(tmp_path, "mod.py", "C.g") == "def g(self):\n    return 2\n"
    assert prose.listing(tmp_path, "mod.py", "C", end="def g") == "class C:\n    z = 1\n"
    with pytest.raises(LookupError, match="h not found"):
        prose.listing(tmp_path, "mod.py", "h")

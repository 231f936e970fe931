"""Citations are Markdown links whose text is the entry's author and year, as the book shows.

A chapter writes ``[Vaswani et al., 2017](../references.bib#vaswani2017attention)`` (it
reads so in JupyterLab); ``_ext/citations.py`` makes it a ``{cite}`` role in the book. The
text is checked here against references.bib, formatted as sphinxcontrib-bibtex's
author-year style does: one author "Name", two "A and B", more "A et al.", then the year.
"""

import json
import re
import sys
from pathlib import Path

import pytest
from pybtex.database import parse_file
from pybtex.richtext import Text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
from citations import LINK  # noqa: E402

BIB = parse_file(ROOT / "references.bib").entries
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
CITATION = re.compile(r"\[([^\]\n]+)\]\(\.\./references\.bib#([^)]*)\)")


def author_year(key: str) -> str:
    entry = BIB[key]
    people = entry.persons.get("author") or entry.persons.get("editor")
    names = [Text.from_latex(" ".join(p.last_names)).render_as("text") for p in people]
    who = (names[0] if len(names) == 1 else
           f"{names[0]} and {names[1]}" if len(names) == 2 else f"{names[0]} et al.")
    return f"{who}, {entry.fields['year']}"


def _markdown(nb):
    cells = json.loads(nb.read_text())["cells"]
    return "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def test_author_year_as_the_book_showed_it():
    assert author_year("vaswani2017attention") == "Vaswani et al., 2017"
    assert author_year("milakov2018online") == "Milakov and Gimelshein, 2018"
    assert author_year("popovic2015chrf") == "Popović, 2015"
    assert author_year("seed_section04") == "Section 04 tutorial, 2025"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_citation_links_name_their_entries(nb):
    text = _markdown(nb)
    assert "{cite" not in text, "cite as a link: [Name et al., 2017](../references.bib#key)"
    for shown, keys in CITATION.findall(text):
        keys = keys.split(",")
        assert all(k in BIB for k in keys), f"unknown key in {keys}"
        assert shown == "; ".join(author_year(k) for k in keys)
    assert len(LINK.findall(text)) == len(CITATION.findall(text))


def test_the_extension_turns_links_into_cite_roles():
    sys.path.insert(0, str(ROOT / "_ext"))
    import citations

    source = ["see [A et al., 2017](../references.bib#a2017,b2018) and [x](other.md#a)"]
    citations._to_cite_role(None, "doc", source)
    assert source == ["see {cite}`a2017,b2018` and [x](other.md#a)"]

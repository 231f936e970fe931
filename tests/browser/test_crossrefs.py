"""Figure references written as text ("[Fig. 3.1](#fig-ch3-sweep)") name the number the built
book gives that figure (a check of the built HTML after ``jupyter-book build``).

The chapters write a figure reference as a Markdown link with its text, so that it reads the
same in JupyterLab as in the book; this test fails when a figure is added or moved and the
text no longer matches the figure's caption number.
"""

import html
import re

import pytest

pytestmark = pytest.mark.browser
LINK = re.compile(r'<a class="reference internal" href="#(fig-[\w-]+)">(.*?)</a>', re.S)


def _caption_numbers(page: str) -> dict[str, str]:
    """Figure id -> its caption number ("Fig. 3.1"), as the page's figure captions show."""
    numbers = {}
    for m in re.finditer(r'<figure[^>]*id="(fig-[\w-]+)".*?</figure>', page, re.S):
        cap = re.search(r'<span class="caption-number">(.*?)\s*</span>', m[0], re.S)
        if cap:
            numbers[m[1]] = html.unescape(re.sub("<[^>]+>", "", cap[1])).strip()
    return numbers


def test_figure_references_name_the_figure_number(book_html):
    problems, checked = [], 0
    for path in sorted((book_html / "book").glob("*.html")):
        page = path.read_text()
        numbers = _caption_numbers(page)
        for fig, text in LINK.findall(page):
            text = html.unescape(re.sub("<[^>]+>", "", text)).strip()
            checked += 1
            if numbers.get(fig) != text:
                problems.append(f"{path.name}: link '{text}' to {fig}, "
                                f"whose caption says {numbers.get(fig)!r}")
    assert checked >= 30, f"only {checked} figure references found"
    assert problems == []

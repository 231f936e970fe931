"""The built book, opened page by page in headless Chromium (a CI step after the book build).

Run: ``pytest -m browser tests/browser`` after ``jupyter-book build``. Chromium, the
environment (``BOOK_HTML``, ``CHROMIUM``) and the page-opening harness: ``conftest.py``.

For every page in ``_toc.yml``:
- the math is typeset: MathJax 3 ran, every math element holds an ``mjx-container`` (CHTML),
  no TeX error, and no raw TeX (``\\frac``, ``$$``, ...) is left in the visible text;
- every image loads (``naturalWidth > 0``);
- no request leaves the machine: every request is recorded, and only ``file:``, ``data:``,
  ``blob:`` and ``about:`` URLs are allowed (anything else is also aborted), and none fails;
- every internal link resolves: each relative ``href`` names an existing file, and its
  ``#anchor`` exists in that file;
- no uncaught JavaScript error;
- the page fits a laptop: at 1280x900, with every folded block opened, no code block or output
  (``pre``) scrolls sideways, no display equation is wider than its column, no table is wider
  than the article, and no typeset formula's assistive MathML holds a backslash (TeX that
  MathJax did not understand, e.g. ``vocab\\_size``); at a phone's 390 px the page itself does
  not scroll sideways (a code block may).
A full-page screenshot of one chapter is kept in ``_build/screenshots/`` (a CI artifact).
"""

from __future__ import annotations

import re
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from book_toc import toc_entries

pytestmark = pytest.mark.browser

SCREENSHOT_PAGE = "book/04_attention"
# LaTeX left as text: a command with an argument, display-math dollars, or math delimiters.
RAW_TEX = re.compile(r"\\(?:frac|sqrt|mathrm|mathbf|operatorname|text|begin|end|left|right)\b|\$\$|\\\(|\\\[")


PAGES = toc_entries()
CONTAINERS: dict[str, int] = {}  # page -> number of mjx-container elements


class _Anchors(HTMLParser):
    def __init__(self):
        super().__init__()
        self.anchors: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if value and (key == "id" or (key == "name" and tag == "a")):
                self.anchors.add(value)


@lru_cache(maxsize=None)
def _anchors_in(path: Path) -> frozenset[str]:
    parser = _Anchors()
    parser.feed(path.read_text(errors="replace"))
    return frozenset(parser.anchors)


# Runs in the page once it has loaded: waits for MathJax and the images, then reports.
INSPECT = """
async () => {
  const out = {mathjax: null, math: 0, untypeset: [], texErrors: [], images: [], links: [], ids: []};
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
    out.mathjax = MathJax.version;
    for (const item of MathJax.startup.document.math) {
      const mml = MathJax.startup.toMML(item.root);
      if (/<merror|mathcolor="red"/.test(mml)) out.texErrors.push(item.math.slice(0, 120));
    }
  }
  const math = [...document.querySelectorAll('.math')];
  out.math = math.length;
  out.untypeset = math.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 120));
  out.containers = document.querySelectorAll('mjx-container').length;
  await document.fonts.ready;
  const imgs = [...document.images];
  for (const img of imgs) { img.loading = 'eager'; }
  await Promise.all(imgs.map(img => img.complete ? null :
    new Promise(done => { img.addEventListener('load', done); img.addEventListener('error', done); })));
  out.images = imgs.map(img => ({src: img.getAttribute('src'), ok: img.complete && img.naturalWidth > 0}));
  out.links = [...document.querySelectorAll('a[href]')].map(a => ({raw: a.getAttribute('href'), url: a.href}));
  out.ids = [...document.querySelectorAll('[id]')].map(e => e.id);
  const body = document.body.cloneNode(true);
  body.querySelectorAll('pre, code, script, style, mjx-container, .highlight').forEach(e => e.remove());
  out.text = body.textContent;
  return out;
}
"""


# Runs after INSPECT: opens every folded block, then measures what does not fit.
LAYOUT = """
() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  document.querySelectorAll('.toggle-hidden, .toggle-details__container').forEach(e => {
    e.classList.remove('toggle-hidden'); e.style.display = ''; });
  const article = document.querySelector('article.bd-article') || document.querySelector('article');
  const box = article.getBoundingClientRect();
  const cs = getComputedStyle(article);
  const right = box.right - parseFloat(cs.paddingRight) + 1;
  const shown = e => e.offsetParent !== null && e.getClientRects().length > 0;
  const where = e => {
    const h = [...document.querySelectorAll('h1, h2, h3')].filter(
      x => x.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING).pop();
    return h ? h.textContent.replace('#', '').trim().slice(0, 60) : 'top';
  };
  const out = [];
  for (const pre of [...article.querySelectorAll('pre')].filter(shown)) {
    if (pre.scrollWidth > pre.clientWidth + 1) {
      const line = pre.textContent.split('\\n').reduce((a, b) => b.length > a.length ? b : a, '');
      out.push(`code block scrolls sideways by ${pre.scrollWidth - pre.clientWidth} px ` +
               `(under "${where(pre)}"): ${line.slice(0, 100)}`);
    }
  }
  for (const eq of [...article.querySelectorAll('mjx-container[display="true"]')].filter(shown)) {
    const inner = eq.firstElementChild ? eq.firstElementChild.getBoundingClientRect() : null;
    const r = eq.getBoundingClientRect();
    if (eq.scrollWidth > eq.clientWidth + 1 || r.right > right || (inner && inner.right > right)) {
      out.push(`display equation wider than the column (under "${where(eq)}"): ` +
               (eq.querySelector('mjx-assistive-mml') || eq).textContent.slice(0, 80));
    }
  }
  for (const t of [...article.querySelectorAll('table')].filter(shown)) {
    const r = t.getBoundingClientRect();
    const parent = t.parentElement;
    if (r.right > right || parent.scrollWidth > parent.clientWidth + 1) {
      out.push(`table wider than the article by ${Math.round(r.right - right)} px ` +
               `(under "${where(t)}"): ${t.textContent.trim().slice(0, 60)}`);
    }
  }
  for (const m of document.querySelectorAll('mjx-assistive-mml')) {
    if (m.textContent.includes('\\\\')) {
      out.push(`a formula shows a literal backslash: ${m.textContent.slice(0, 80)}`);
    }
  }
  return out;
}
"""


def _check_link(html: Path, page_file: Path, raw: str, url: str,
                page_ids: set[str]) -> str | None:
    parts = urlsplit(url)
    if parts.scheme in ("http", "https", "mailto", "javascript", "tel"):
        return None  # external links are not requested by the page; only listed
    if parts.scheme != "file":
        return f"link {raw!r}: unexpected scheme {parts.scheme!r}"
    target = Path(unquote(parts.path))
    if target.is_dir():
        target = target / "index.html"
    if not target.exists():
        return f"link {raw!r}: {target} does not exist"
    if not target.resolve().is_relative_to(html):
        return f"link {raw!r} leaves the built site: {target}"
    anchor = unquote(parts.fragment)
    if anchor and target.suffix == ".html":
        ids = page_ids | _anchors_in(target) if target.resolve() == page_file.resolve() else _anchors_in(target)
        if anchor not in ids:
            return f"link {raw!r}: no anchor #{anchor} in {target.relative_to(html)}"
    return None


@pytest.mark.parametrize("page", PAGES)
def test_page_in_browser(book_html, open_page, page):
    with open_page(page) as visit:
        report = visit.tab.evaluate(INSPECT)
        visit.settle()
        layout = visit.tab.evaluate(LAYOUT)
        if page == SCREENSHOT_PAGE or (SCREENSHOT_PAGE not in PAGES and page == PAGES[1 % len(PAGES)]):
            shot = book_html.parent / "screenshots" / f"{Path(page).name}.png"
            shot.parent.mkdir(parents=True, exist_ok=True)
            visit.tab.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000, f"screenshot {shot} is suspiciously small"

    CONTAINERS[page] = report["containers"]
    problems: list[str] = []
    # Math.
    if report["math"]:
        if not (report["mathjax"] or "").startswith("3."):
            problems.append(f"MathJax 3 did not run (version {report['mathjax']!r}); math stays raw TeX")
        if report["containers"] == 0:
            problems.append("no mjx-container: MathJax (CHTML) typeset nothing")
    problems += [f"math not typeset: {m!r}" for m in report["untypeset"]]
    problems += [f"TeX error or undefined macro: {m!r}" for m in report["texErrors"]]
    text = " ".join(report["text"].split())
    for m in RAW_TEX.finditer(text):
        problems.append(f"raw TeX in the visible text: ...{text[max(0, m.start() - 40):m.end() + 40]}...")
    # Images.
    problems += [f"image does not load: {img['src']}" for img in report["images"] if not img["ok"]]
    # Requests, JavaScript errors.
    problems += visit.problems()
    # Links.
    ids = set(report["ids"])
    for link in report["links"]:
        problem = _check_link(book_html, visit.page_file, link["raw"], link["url"], ids)
        if problem:
            problems.append(problem)
    # Layout at 1280 px.
    problems += layout
    assert not problems, f"{page}.html:\n" + "\n".join(dict.fromkeys(problems))


@pytest.mark.parametrize("page", PAGES)
def test_page_fits_a_phone(open_page, page):
    """At 390 px the page itself never scrolls sideways (a code block inside it may)."""
    with open_page(page, width=390, height=844) as visit:
        tab = visit.tab
        tab.evaluate("async () => { if (window.MathJax && MathJax.startup) await MathJax.startup.promise; }")
        width = tab.evaluate("document.documentElement.scrollWidth")
        wide = tab.evaluate("""() => [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > 391 && !e.closest('pre, .highlight, mjx-container, .pst-scrollable-table-container, table'))
            .slice(0, 5).map(e => e.tagName + '.' + e.className)""")
    assert width <= 390, f"{page}.html is {width} px wide at a 390 px viewport; widest: {wide}"


def test_some_page_has_typeset_math():
    """Guard against a vacuous pass: the book has math, so MathJax must have typeset some."""
    if len(CONTAINERS) < len(PAGES):
        pytest.skip("needs every page test to run first (in this process)")
    assert sum(CONTAINERS.values()) > 0, f"no page has typeset math: {CONTAINERS}"

"""How long each chapter is on a laptop screen: at most 20 screens (a browser test, and a script).

A chapter page of the built book is opened in headless Chromium at a 1280x900 window, every
folded block is closed (``{dropdown}`` blocks and the hide-input / hide-output / hide-cell
toggles are ``<details>`` elements; sphinx-togglebutton's ``.toggle`` blocks are hidden), MathJax
and the fonts finish, and the page's height is divided by the window's: the number of screens a
reader scrolls through. Every numbered chapter and chapter 0 (the orientation) must stay at or
under ``MAX_SCREENS``; the appendices and the front matter are only reported.

As a test (after ``jupyter-book build``): ``pytest -m browser tests/browser/test_chapter_length.py``
(``BOOK_HTML`` = the built site, default ``_build/html``; ``CHROMIUM`` = the browser binary).

As a script, for every page of ``_toc.yml``::

    python tests/browser/test_chapter_length.py _build/html [PAGE ...]

prints one line per page: its screens, its height in px, and a mark where a checked page is over
the limit (PAGE filters by substring, e.g. ``06_`` or ``positional``). The exit status is 1 when
a checked page is over.
"""

from __future__ import annotations

import re
import sys
from functools import partial
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: book_toc, as a script
from book_toc import toc_entries  # noqa: E402

pytestmark = pytest.mark.browser

WIDTH, SCREEN = 1280, 900
MAX_SCREENS = 20
PAGES = toc_entries()
# Chapter 0 and the numbered chapters: book/00_..., book/01_..., ...
CHECKED = [p for p in PAGES if re.match(r"book/\d\d_", p)]

# Waits for MathJax, the fonts and the images, closes every folded block, and returns the
# height of the page in px (the document's full scroll height).
MEASURE = """
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  await document.fonts.ready;
  const imgs = [...document.images];
  for (const img of imgs) { img.loading = 'eager'; }
  await Promise.all(imgs.map(img => img.complete ? null : new Promise(done => {
    img.addEventListener('load', done); img.addEventListener('error', done); })));
  document.querySelectorAll('details').forEach(d => { d.open = false; });
  document.querySelectorAll('.toggle-details__container').forEach(e => {
    e.style.display = 'none'; });
  document.querySelectorAll('.toggle').forEach(e => { e.classList.add('toggle-hidden'); });
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  return {height: document.documentElement.scrollHeight,
          details: document.querySelectorAll('details').length};
}
"""


def measure(open_page, page: str) -> dict:
    """``{'height': px, 'screens': height / 900, 'details': folded blocks}`` of one page;
    open_page: the harness's (``conftest.py``), a browser bound."""
    # A busy machine: Playwright's 30 s is not always enough.
    with open_page(page, width=WIDTH, height=SCREEN, timeout_ms=120_000) as visit:
        out = visit.tab.evaluate(MEASURE)
    out["screens"] = out["height"] / SCREEN
    return out


def test_chapters_are_checked():
    """Guard against a vacuous pass: chapter 0 and the numbered chapters are all found."""
    assert len(CHECKED) >= 16 and CHECKED[0].startswith("book/00_"), CHECKED


@pytest.mark.parametrize("page", CHECKED)
def test_chapter_is_at_most_20_screens(open_page, page):
    out = measure(open_page, page)
    assert out["height"] > 3 * SCREEN, f"{page}: {out['height']} px: the page did not render"
    assert out["screens"] <= MAX_SCREENS, (
        f"{page}: {out['screens']:.1f} screens of {SCREEN} px at {WIDTH} px with every folded "
        f"block closed (at most {MAX_SCREENS}): fold verification, source audits and long "
        "printouts into a {dropdown} or a hide-input / hide-output cell")


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))   # this folder's conftest
    from conftest import HTML, chromium, visit

    html = Path(argv[0] if argv else HTML).resolve()
    wanted = argv[1:]
    pages = [p for p in PAGES if not wanted or any(w in p for w in wanted)]
    over = 0
    with chromium() as b:
        for page in pages:
            out = measure(partial(visit, b, html=html), page)
            flag = ""
            if page in CHECKED and out["screens"] > MAX_SCREENS:
                flag, over = f"  OVER {MAX_SCREENS}", over + 1
            elif page not in CHECKED:
                flag = "  (not checked)"
            print(f"{out['screens']:6.1f} screens {out['height']:7d} px  "
                  f"{out['details']:3d} folds  {page}{flag}", flush=True)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Every built page under an accessibility audit: axe-core's WCAG 2 A and AA rules.

Run: ``pytest -m browser tests/browser/test_accessibility.py`` after the book build (the
fixtures, ``BOOK_HTML`` and ``CHROMIUM``: ``conftest.py``).

For every page in ``_toc.yml``, opened from ``file://`` in headless Chromium with every
non-local request aborted: once MathJax has typeset the page and the interactive figures
have mounted, the vendored axe-core (``vendor/axe-core``, a pinned npm release, injected
into the page by the test: the built book never loads it) runs the rules tagged WCAG 2.0,
2.1 and 2.2 at levels A and AA. Any violation fails the page, printed rule by rule with
the elements it found (axe's experimental rules are off, as by default). The markup
fixes that make the pages pass are in ``_ext/figure_alt.py``. Separately, every
``<img>`` must carry an
alt text that says something: not missing, not empty, not a file name, a path or a hash
(axe accepts any non-empty alt, so a figure whose alt is ``../_images/23fd…png`` passes
axe). Pages whose notebook is in ``_ext/figure_alt.py``'s ``PENDING`` are expected to
fail that check (strict xfail) until their figures get alt text.

``test_vendored_axe_is_the_pinned_release`` (not a browser test: it runs with the unit
tests) checks the vendored file against the sha256 recorded below and in the vendor
folder's README.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import pytest
from book_toc import toc_entries

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_ext"))
import figure_alt  # noqa: E402  (its PENDING: the notebooks without alt text yet)

VENDOR = Path(__file__).resolve().parent / "vendor" / "axe-core"
AXE_JS = VENDOR / "axe.min.js"
AXE_VERSION = "4.14.1"
# sha256 of axe.min.js from `npm pack axe-core@4.14.1` (npm integrity
# sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==)
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
TIMEOUT_MS = 180_000     # a long chapter, audited on two busy cores, takes over a minute
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
PAGES = toc_entries()

# An alt text that names a file rather than what the picture shows.
# (A slash inside a sentence, "K/2 eps", is not one; a path without spaces is.)
FILE_NAME = re.compile(r"\.(?:png|jpe?g|gif|svg|webp|pdf)\b|_images/|^[0-9a-f]{16,}$"
                       r"|^\S*[/\\]\S*$|^\S+\.\w{2,4}$", re.I)

AUDIT = """
async ([tags]) => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  await document.fonts.ready;
  const unmounted = [...document.querySelectorAll('.mtx')]
    .filter(e => e.getAttribute('data-mounted') !== '1').map(e => e.id);
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags},
                                          resultTypes: ['violations']});
  const report = v => ({
      id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.map(n => ({target: n.target.join(' '),
                                html: n.html.slice(0, 160),
                                why: n.failureSummary.replace(/\\s+/g, ' ').slice(0, 240)}))
  });
  return {
    version: axe.version, unmounted: unmounted,
    ran: axe.getRules(tags).filter(r => !r.tags.includes('experimental')).map(r => r.ruleId),
    violations: result.violations.map(report),
    images: [...document.images].map(img => ({src: img.getAttribute('src'),
                                              alt: img.getAttribute('alt')})),
  };
}
"""


def test_vendored_axe_is_the_pinned_release():
    text = AXE_JS.read_bytes()
    assert hashlib.sha256(text).hexdigest() == AXE_SHA256, (
        f"{AXE_JS} is not axe-core {AXE_VERSION} as recorded: re-vendor it "
        f"(vendor/axe-core/README.md) and update AXE_SHA256")
    assert text.startswith(f"/*! axe v{AXE_VERSION}".encode())
    readme = (VENDOR / "README.md").read_text()
    assert AXE_SHA256 in readme and f"axe-core@{AXE_VERSION}" in readme
    assert "Mozilla Public License" in (VENDOR / "LICENSE").read_text()


def bad_alt(alt: str | None) -> str | None:
    """Why ``alt`` says nothing about the picture, or None if it may."""
    if alt is None:
        return "no alt attribute"
    if not alt.strip():
        return "empty alt"
    if FILE_NAME.search(alt.strip()):
        return f"alt looks like a file name: {alt[:80]!r}"
    if len(alt.split()) < 4:
        return f"alt too short to describe a figure: {alt!r}"
    return None


@pytest.mark.parametrize("alt, why", [
    ("../_images/23fd766e0cc94e1121af7b0442ebe74afbbd0d75fad9b764dc782d43991c115e.png",
     "file name"),
    ("23fd766e0cc94e1121af7b0442ebe74afbbd0d75fad9b764dc782d43991c115e", "file name"),
    ("figure.png", "file name"), ("", "empty"), ("  ", "empty"), (None, "no alt"),
    ("plot", "too short"),
    ("../figures/plot", "file name"), ("C:\\book\\fig1", "file name"),
    ("Entropy of the weights against d_k: falls from 2.41 to 0.09 nats", None),
    ("Added one term at a time, all below the worst case of K/2 eps", None),
])
def test_bad_alt_recognises_file_names(alt, why):
    got = bad_alt(alt)
    assert (got is None) if why is None else (why in got)


REPORTS: dict[str, dict] = {}


def audit(open_page, page: str) -> dict:
    """axe's report on the built page (once per page), with what the page did that it
    must not (``problems``: requests leaving the machine, JavaScript errors...)."""
    if page in REPORTS:
        return REPORTS[page]
    with open_page(page, timeout_ms=TIMEOUT_MS) as visit:
        visit.settle(limit_s=TIMEOUT_MS / 1000)
        visit.tab.add_script_tag(content=AXE_JS.read_text())     # inline: no request
        report = visit.tab.evaluate(AUDIT, [WCAG_TAGS])
    # axe reads the stylesheets again by XMLHttpRequest, which file:// refuses: those
    # failures are axe's, not the page's.
    report["problems"] = visit.problems(failed=False)
    REPORTS[page] = report
    return report


def _listed(violations) -> list[str]:
    out = []
    for v in violations:
        out.append(f"[{v['impact']}] {v['id']}: {v['help']} ({len(v['nodes'])} elements)")
        out += [f"    {n['target']}: {n['html']}\n      {n['why']}" for n in v["nodes"][:8]]
    return out


@pytest.mark.browser
@pytest.mark.parametrize("page", PAGES)
def test_page_passes_axe(open_page, page):
    report = audit(open_page, page)
    assert report["version"] == AXE_VERSION
    # not a vacuous pass: the WCAG rules that matter here did run
    assert len(report["ran"]) >= 50 and {"color-contrast", "image-alt", "aria-roles",
                                          "list", "label"} <= set(report["ran"])
    assert not report["unmounted"], f"interactive figures did not mount: {report}"
    print(f"{page}: {len(report['violations'])} axe rules violated")
    problems = _listed(report["violations"])
    problems += report["problems"]
    assert not problems, f"{page}.html:\n" + "\n".join(problems)


@pytest.mark.browser
@pytest.mark.parametrize("page", [
    pytest.param(p, marks=pytest.mark.xfail(
        Path(p).name in figure_alt.PENDING, strict=True,
        reason="alt text not written yet (figure_alt.PENDING)")) for p in PAGES])
def test_every_image_says_what_it_shows(open_page, page):
    report = audit(open_page, page)
    problems = [f"image {img['src']}: {why}" for img in report["images"]
                if (why := bad_alt(img["alt"]))]
    assert not problems, f"{page}.html:\n" + "\n".join(problems)

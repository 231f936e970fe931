"""Alt text for the notebooks' figures, written from the numbers the cells computed.

A code cell whose output is an image says what the image shows in its metadata::

    "alt": "Entropy of the weights against d_k: falls from {ch3_ent_hi:.2f} to ..."

(a list of such strings, one per image, where a cell shows several). The text is a Python
format string whose fields are values the notebook stored with ``bookutils.glue``; this
extension formats it with the notebook's stored values, exactly as the prose's numbers are
formatted (``book/prose.py``'s ``format_value``), and sets the ``alt`` of the cell's image
nodes. nbval checks the stored values against what the cells compute, so an alt text can
no more drift from the outputs than the prose can. An unknown key, a bad template, a
template whose text looks like a file name, or an image without an alt text (on a page not
listed in ``PENDING``) is a Sphinx warning, which fails the strict build.

The same extension makes two changes to every page's HTML that the accessibility audit
asks for (``tests/browser/test_accessibility.py``), since the markup is the writers':

- docutils writes each bibliography entry as ``<div role="doc-biblioentry">`` inside a
  ``<div role="list">``: ``doc-biblioentry`` is deprecated (WAI-ARIA DPUB 1.1) and is no
  list item, so the list has no items. The entries become ``role="listitem"``.
- myst-nb labels each folded cell's toggle "Toggle hidden content" while it shows "Show
  code cell source"; the label goes, so the name is the visible text (WCAG 2.5.3).
- the theme's search buttons (visible text "Search Ctrl+K", label "Search") lose the
  label for the same reason, and the colour-mode button's icons lose their titles
  (decoration the label "Color mode" does not contain): a pass over the written pages.

Registered in ``_config.yml`` (``sphinx.local_extensions``).
"""

from __future__ import annotations

import json
import re
import string
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book"))
import prose  # noqa: E402  (book/prose.py: the formatter of the prose's numbers)

KEY = "alt"
# Notebooks whose figures do not have their alt text yet (checked: listing a notebook
# whose figures all have one is an error too).
PENDING = frozenset()
# Text that names a file instead of saying what a picture shows.
FILE_NAME = re.compile(r"\.(?:png|jpe?g|gif|svg|webp|pdf)\b|_images/|[0-9a-f]{16,}", re.I)
IMAGE_MIME = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")


class AltError(ValueError):
    pass


def format_alt(template: str, values: dict[str, str]) -> str:
    """``template`` with each ``{key:fmt}`` replaced by the stored value ``key`` shown with
    ``fmt`` (as ``prose.format_value`` shows it in the prose)."""
    out = []
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise AltError(f"bad alt template {template!r}: {exc}") from None
    for literal, field, spec, conversion in parts:
        out.append(literal)
        if field is None:
            continue
        if conversion or not re.fullmatch(r"[A-Za-z0-9_.-]+", field):
            raise AltError(f"alt field {{{field}}}: only {{key}} or {{key:fmt}} allowed")
        if field not in values:
            raise AltError(f"alt text names {field!r}, which the notebook did not glue")
        try:
            out.append(prose.format_value(values[field], spec or None))
        except (ValueError, TypeError) as exc:
            raise AltError(f"alt field {{{field}:{spec}}}: {exc}") from None
    text = " ".join("".join(out).split())
    if FILE_NAME.search(text):
        raise AltError(f"alt text looks like a file name: {text!r}")
    return text


def image_count(cell: dict) -> int:
    return sum(any(m in out.get("data", {}) for m in IMAGE_MIME)
               for out in cell.get("outputs", []))


def templates(cell: dict) -> list[str] | None:
    """The cell's alt templates, one per image output, or None if it has none."""
    alt = cell.get("metadata", {}).get(KEY)
    if alt is None:
        return None
    alts = [alt] if isinstance(alt, str) else list(alt)
    if not all(isinstance(a, str) and a.strip() for a in alts):
        raise AltError(f"metadata {KEY!r} must be a non-empty string or a list of them")
    if len(alts) != image_count(cell):
        raise AltError(f"{len(alts)} alt texts for {image_count(cell)} images")
    return alts


def notebook_alts(nb: dict) -> dict[int, list[str]]:
    """{cell index: the formatted alt text of each of its images}, for every figure cell
    that has alt text; raises AltError naming the cell for any bad one."""
    values = prose.stored_values(nb)
    out = {}
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        try:
            alts = templates(cell)
            if alts is not None:
                out[index] = [format_alt(a, values) for a in alts]
        except AltError as exc:
            raise AltError(f"cell {index}: {exc}") from None
    return out


def missing(nb: dict) -> list[int]:
    """The code cells that show an image but have no alt text."""
    return [i for i, c in enumerate(nb["cells"])
            if c["cell_type"] == "code" and image_count(c) and KEY not in c["metadata"]]


def _set_alts(app, doctree) -> None:
    from docutils import nodes
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    env = app.env
    path = Path(env.doc2path(env.docname))
    if path.suffix != ".ipynb":
        return
    nb = json.loads(path.read_text())
    try:
        alts = notebook_alts(nb)
    except AltError as exc:
        logger.warning(f"figure alt text: {exc}", location=env.docname)
        return
    if path.stem not in PENDING:
        for index in missing(nb):
            logger.warning(f"figure alt text: cell {index} shows an image but has no "
                           f"{KEY!r} in its metadata", location=env.docname)
    for node in doctree.findall(nodes.container):
        if node.get("nb_element") != "cell_code" or node.get("cell_index") not in alts:
            continue
        images = list(node.findall(nodes.image))
        texts = alts[node["cell_index"]]
        if len(images) != len(texts):
            logger.warning(f"figure alt text: cell {node['cell_index']} renders "
                           f"{len(images)} images for {len(texts)} alt texts",
                           location=node)
            continue
        for image, text in zip(images, texts):
            image["alt"] = text


def _fix_markup(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if body:
        for old, new in BODY_FIXES:
            body = body.replace(old, new)
        context["body"] = body


# (old, new) in a page's body, written by docutils and myst-nb.
BODY_FIXES = [
    # a bibliography entry is a list item of the citation list (doc-biblioentry is
    # deprecated and is no list item, so the list had no items)
    ('role="doc-biblioentry"', 'role="listitem"'),
    # a folded cell's toggle: its name is its visible text ("Show code cell source"),
    # not a different label (WCAG 2.5.3, label in name)
    ('<summary aria-label="Toggle hidden content">', "<summary>"),
]
# (pattern, replacement) in the theme's header and sidebar, on every written page:
THEME_FIXES = [
    # the search buttons that show the word "Search" and Ctrl+K: named by that text
    (re.compile(r'(<button class="btn search-button-field[^>]*?) aria-label="Search"'),
     r"\1"),
    # the colour-mode button's icons: their titles (Light, Dark, System Settings) read as
    # text that its label, "Color mode", does not contain; they are decoration
    (re.compile(r'(<i class="theme-switch [^>]*?) title="[^"]*"></i>'),
     r'\1 aria-hidden="true"></i>'),
]


def _fix_theme(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text()
        fixed = text
        for pattern, replacement in THEME_FIXES:
            fixed = pattern.sub(replacement, fixed)
        if fixed != text:
            page.write_text(fixed)


def setup(app):
    app.connect("doctree-read", _set_alts)
    app.connect("html-page-context", _fix_markup)
    app.connect("build-finished", _fix_theme)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}

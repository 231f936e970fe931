"""The browser tests' one harness: finding Chromium, launching it, and opening a page of the
built book from ``file://`` with every request recorded and every non-local one aborted.

Environment: ``BOOK_HTML`` = the built site (default ``_build/html``), ``CHROMIUM`` = the
browser binary (default: ``chromium`` or ``chromium-browser`` on the PATH). Chromium is
Debian's (``apt-get install chromium chromium-driver``; ``.ci/run`` installs it), driven by
Playwright's Python package with the system browser (no browser download).

Fixtures:
- ``book_html``: the built site's folder (the tests fail, not skip, when it is missing);
- ``browser``: Chromium on the built book, no host name resolving;
- ``local_browser``: Chromium that may reach 127.0.0.1 and nothing else (a local server);
- ``open_page``: ``with open_page(page) as visit: ...`` opens ``<page>.html`` in a fresh
  context (``visit.tab``); afterwards ``visit.problems()`` lists what a page must not do:
  no request recorded at all (a broken recorder), a request leaving the machine, a failed
  request, an uncaught JavaScript error (other than the theme's known ones);
- ``open_widget``: ``with open_widget(page, root_id, data_file) as (tab, root): ...`` opens a
  page with an in-browser model (the translator, the language model) as ``open_page`` does,
  its widget ``#root_id`` mounted; afterwards the page must have loaded its ``data_file`` and
  have no ``problems()``.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html")).resolve()
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    # A second fence: no host name resolves, so nothing could leave even if a request slipped by.
    "--host-resolver-rules=MAP * ~NOTFOUND",
]
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")
NOT_LOCAL = re.compile(r"^(?!(file|data|blob|about):)")
# Uncaught errors that come from the theme, not from the book, and break nothing on the page.
KNOWN_JS_ERRORS = [
    # sphinx-thebe's loader script is included twice by sphinx-book-theme; thebe is off (_config.yml).
    re.compile(r"Identifier 'THEBE_JS_URL' has already been declared"),
]


def find_chromium() -> str | None:
    """The browser binary: ``CHROMIUM``, else chromium or chromium-browser on the PATH."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@contextmanager
def chromium(args=CHROMIUM_ARGS):
    """A headless Chromium (Playwright's sync API) launched with ``args``; closed after.
    Without Chromium: skipped, or failed on CI."""
    executable = find_chromium()
    if executable is None:
        message = "Chromium not found: `apt-get install chromium chromium-driver` (or set CHROMIUM)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=args)
        try:
            yield b
        finally:
            b.close()


@dataclass
class Visit:
    """One opened page: its tab and what the tab recorded."""
    tab: object
    page_file: Path
    requests: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    js_errors: list[str] = field(default_factory=list)

    def settle(self, quiet_ms: int = 500, limit_s: float = 20) -> None:
        """Wait until every request has finished and none started for ``quiet_ms``.
        (Playwright's "networkidle" never fires for some file:// pages, so count by hand.)"""
        deadline = time.monotonic() + limit_s
        seen, quiet = -1, 0
        while time.monotonic() < deadline:
            if len(self.requests) == len(self.done) and len(self.requests) == seen:
                quiet += 100
                if quiet >= quiet_ms:
                    return
            else:
                seen, quiet = len(self.requests), 0
            self.tab.wait_for_timeout(100)
        pending = sorted(set(self.requests) - set(self.done))
        raise AssertionError(f"requests still pending after {limit_s} s: {pending}")

    def problems(self, failed: bool = True) -> list[str]:
        """What the page did that it must not (the page itself is one request: an empty
        record means a broken recorder); failed=False: failed requests are allowed."""
        out = [] if self.requests else ["no request recorded at all: the request recorder is broken"]
        out += [f"request leaves the machine: {u}" for u in self.requests
                if not u.startswith(LOCAL_SCHEMES)]
        out += [f"request failed: {f}" for f in self.failed] if failed else []
        out += [f"uncaught JavaScript error: {e}" for e in self.js_errors
                if not any(known.search(e) for known in KNOWN_JS_ERRORS)]
        return out


@contextmanager
def visit(browser, page: str, *, width: int = 1280, height: int = 900,
          timeout_ms: int | None = None, html: Path = HTML):
    """``<html>/<page>.html`` loaded in a fresh context (a ``width`` × ``height`` window,
    no service workers, every non-local request aborted): yields a ``Visit``."""
    page_file = html / f"{page}.html"
    assert page_file.exists(), f"{page} is in _toc.yml but {page_file} was not built"
    context = browser.new_context(viewport={"width": width, "height": height},
                                  service_workers="block")
    context.route(NOT_LOCAL, lambda route: route.abort("blockedbyclient"))
    v = Visit(context.new_page(), page_file)
    v.tab.on("request", lambda r: v.requests.append(r.url))
    v.tab.on("requestfinished", lambda r: v.done.append(r.url))
    v.tab.on("requestfailed", lambda r: (v.done.append(r.url),
                                         v.failed.append(f"{r.url} ({r.failure})")))
    v.tab.on("websocket", lambda ws: v.requests.append(ws.url))
    v.tab.on("pageerror", lambda e: v.js_errors.append(str(e)))
    try:
        if timeout_ms:
            v.tab.set_default_timeout(timeout_ms)
        v.tab.goto(page_file.as_uri(), wait_until="load")
        yield v
    finally:
        context.close()


@pytest.fixture(scope="session")
def book_html() -> Path:
    if not HTML.joinpath("index.html").exists():
        pytest.fail(f"no built book at {HTML}: run `jupyter-book build -W -n --keep-going .` "
                    "first (or point BOOK_HTML at the built _build/html)")
    return HTML


@pytest.fixture(scope="module")
def browser(book_html):
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def local_browser():
    args = [a for a in CHROMIUM_ARGS if not a.startswith("--host-resolver-rules")]
    # No host but the server's address resolves, so nothing leaves the machine.
    with chromium(args + ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]) as b:
        yield b


@pytest.fixture
def open_page(browser):
    """``open_page(page, width=..., height=..., timeout_ms=...)``: ``visit`` in ``browser``."""
    return partial(visit, browser)


@contextmanager
def widget(browser, page: str, root_id: str, data_file: str, **kwargs):
    """``page`` opened by ``visit(browser, page, **kwargs)``, its element ``#root_id``
    mounted (``data-mounted="1"``): yields (tab, root). Once its requests have settled,
    the page must have loaded ``data_file`` and done nothing ``Visit.problems`` lists."""
    with visit(browser, page, **kwargs) as v:
        root = v.tab.locator(f"#{root_id}")
        assert root.get_attribute("data-mounted") == "1", f"{page}: #{root_id} did not mount"
        yield v.tab, root
        v.settle()
    assert any(u.endswith(data_file) for u in v.requests), v.requests
    assert not v.problems(), v.problems()


@pytest.fixture
def open_widget(browser):
    """``open_widget(page, root_id, data_file, width=..., ...)``: ``widget`` in ``browser``."""
    return partial(widget, browser)

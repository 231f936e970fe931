"""Every chapter and appendix notebook read in JupyterLab, as the README says to.

Run: ``pytest -m browser tests/browser/test_jupyterlab.py`` (no book build needed).
Needs the pinned ``jupyterlab`` and ``jupyterlab-myst`` and Debian's ``chromium`` (or
``CHROMIUM``), as ``test_rendered_book.py``.

One JupyterLab server is started from the checkout (no token, 127.0.0.1, a free port;
its settings, workspaces, runtime files and notebook-trust database in a temporary
directory; autosave off; no kernel is ever started) and one Chromium tab opens it.
Every ``book/*.ipynb`` of ``_toc.yml`` is opened in turn with the windowing mode
``none`` (every cell in the page), scrolled through screen by screen (JupyterLab
renders a Markdown cell once it comes into view) and checked. A notebook fails on:

- a raw MyST role in its rendered Markdown (``{glue…}``, ``{doc}``, ``{cite…}``,
  ``{ref}``, ``{numref}``, ``{eq}``); a number's glue key shown instead of the number
  (``ch3_Z``: what jupyterlab-myst shows for a ``{glue}`` role); a chapter's file name
  (``03_softmax``: what it shows for a ``{doc}`` role without a title); a Markdown cell
  that never renders;
- a directive shown as code or as source text (a code block whose language or first
  line is ``{dropdown}``, ``{admonition}``, ..., or a ````{name}`` / ``:::{name}``
  fence left in the text), or as jupyterlab-myst's "Unknown Directive" box;
- a cross-reference or a citation that jupyterlab-myst cannot resolve (it shows the bare
  label or bibliography key with a warning sign, e.g. "vaswani2017attention");
- a bookkeeping cell in view: a code cell tagged ``remove-cell`` or ``hide-cell``
  (hidden or folded in the book) whose source editor or outputs are visible, or a
  ``hide-input`` cell whose source is visible (``metadata.jupyter.source_hidden`` /
  ``outputs_hidden`` fold them);
- an interactive figure (``book/explorers.py``) that does not draw once the notebook is
  trusted (signed here in the temporary trust database, as ``jupyter trust`` does);
- a kernel started, or a file under ``book/`` written or changed by opening the notebook
  (JupyterLab's checkpoints go to the temporary directory);
- a notebook that JupyterLab would mark modified (●) once open, so that a reader who only
  read it is asked to save it on closing: the dirty flag, or any difference between the file
  and what saving JupyterLab's copy would write (as the server writes it, with the kernel
  spec a reader's kernel sets, ``python3``'s); ``book/prose.py --sync`` stores notebooks
  in that form.

Screenshots of each notebook's top and end go to ``_build/screenshots/jupyterlab/`` (a
CI artifact), with ``findings.json``: the count of each kind of failure per notebook.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from book_toc import toc_entries

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = [p for p in toc_entries() if (ROOT / f"{p}.ipynb").exists()]
SHOTS = ROOT / "_build" / "screenshots" / "jupyterlab"
FINDINGS: dict[str, dict[str, int]] = {}
KINDS = ["raw_roles", "glue_keys", "file_names", "not_rendered", "fences_as_code",
         "directive_errors", "unresolved_refs", "unresolved_cites", "bookkeeping_cells",
         "figures_not_drawn", "kernels", "files_changed", "marked_modified"]

ROLE = re.compile(r"\{(?:glue(?::\w+)?|doc|cite(?::\w+)?|ref|numref|eq)\}")
FENCE_TEXT = re.compile(r"(?:```|:::)\s*\{[\w:-]+\}")
DIRECTIVE = re.compile(r"\{[a-z][\w:-]*\}")
GLUE_CALL = re.compile(r"""\bglue\(\s*["']([\w.:-]+)["']""")
FIGURE_ROOT = re.compile(r"""<div class="mtx\b[^"]*" id="(mtx-[\w-]+)\"""")
# What the book hides, and so must stay folded in JupyterLab.
HIDDEN = {"remove-cell": ("source", "outputs"), "hide-cell": ("source", "outputs"),
          "hide-input": ("source",)}

SETTINGS = {
    # Every cell in the page (JupyterLab otherwise attaches only the cells near the
    # viewport); a notebook without a kernel in its metadata does not start one either.
    "@jupyterlab/notebook-extension/tracker": {
        "windowingMode": "none", "autoStartDefaultKernel": False},
    # Opening must never write a notebook back into the checkout.
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    # No news or update check (they would reach for the network).
    "@jupyterlab/apputils-extension/notification": {
        "fetchNews": "false", "checkForUpdates": False},
}

# Runs in the JupyterLab page: opens one notebook with no kernel, scrolls through it
# until every Markdown cell has rendered, and reports what a reader sees, cell by cell.
OPEN = """
async (path) => {
  const app = window.jupyterapp;
  const factory = app.docRegistry.getWidgetFactory('Notebook');
  factory._preferKernel = false;      // open without starting (or asking for) a kernel
  factory._canStartKernel = false;
  const panel = await app.commands.execute('docmanager:open',
                                           {path, factory: 'Notebook'});
  await panel.context.ready;
  await panel.revealed;
  const notebook = panel.content;
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  const rendered = c => c.node.querySelector('.jp-InputArea .myst, .jp-MarkdownOutput');
  const done = c => rendered(c) && rendered(c).textContent.trim();
  const md = notebook.widgets.filter(c => c.model.type === 'markdown');
  const scroller =
    notebook.node.querySelector('.jp-WindowedPanel-outer') || notebook.node;
  const inView = c => {
    const r = c.node.getBoundingClientRect(), v = scroller.getBoundingClientRect();
    return r.bottom > v.top && r.top < v.bottom;
  };
  const settle = async (cells, ms) => {
    const t0 = Date.now();
    while (Date.now() - t0 < ms && cells.some(c => !done(c))) await frame();
  };
  for (let y = 0; y < scroller.scrollHeight; y += scroller.clientHeight) {
    scroller.scrollTop = y;
    await frame();
    await settle(md.filter(inView), 3000);
  }
  await settle(md, 3000);
  const shown = e => !!e && e.checkVisibility() && e.getClientRects().length > 0;
  const cells = notebook.widgets.map((c, i) => {
    const out = {index: i, type: c.model.type, tags: c.model.getMetadata('tags') || [],
                 source: c.model.sharedModel.getSource()};
    if (c.model.type === 'markdown') {
      const r = rendered(c);
      out.rendered = !!done(c);
      if (!r) return out;
      const clone = r.cloneNode(true);
      clone.querySelectorAll('pre, code, script, style, .katex, mjx-container, svg')
           .forEach(e => e.remove());
      out.text = clone.textContent;
      out.codeBlocks = [...r.querySelectorAll('pre')].map(p => {
        const code = p.querySelector('code');
        const lang = code && [...code.classList].find(k => k.startsWith('language-'));
        return {lang: (lang || '').slice(9),
                first: p.textContent.trim().split('\\n')[0]};
      });
      out.unknown = [...r.querySelectorAll('summary')].map(e => e.textContent.trim())
        .filter(t => /^\\S+ - Unknown (Directive|Role)$/.test(t));
      const missing = t => [...r.querySelectorAll(`[title="${t} Not Found"]`)]
        .map(e => e.textContent.trim());
      out.unresolved = missing('Cross Reference');
      out.uncited = missing('Citation');
    } else if (c.model.type === 'code') {
      out.sourceShown = shown(c.node.querySelector('.jp-InputArea-editor'));
      out.outputsShown =
        [...c.node.querySelectorAll('.jp-OutputArea-child')].some(shown);
      out.figures = [...c.node.querySelectorAll('.jp-OutputArea-output .mtx[id]')]
        .map(f => ({id: f.id, mounted: f.getAttribute('data-mounted') === '1',
                    drawn: shown(f) && !/needs JavaScript/.test(f.textContent)}));
    }
    return out;
  });
  const models = [...Array(notebook.model.cells.length).keys()]
    .map(i => notebook.model.cells.get(i));
  return {cells, trusted: models.length > 0 && models.every(m => m.trusted),
          dirty: panel.context.model.dirty, held: panel.context.model.toJSON()};
}
"""

SCROLL = """
(where) => {
  const content = window.jupyterapp.shell.currentWidget.content;
  const cells = content.widgets;
  if (where === 'top') cells[0].node.scrollIntoView({block: 'start'});
  else cells[cells.length - 1].node.scrollIntoView({block: 'end'});
}
"""

CLOSE = "() => { window.jupyterapp.shell.currentWidget.dispose(); }"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def _book_files() -> dict[str, str]:
    """Every file under book/ (ignored ones too) with its SHA-256."""
    return {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((ROOT / "book").rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on the checkout: yields its URL; stopped afterwards."""
    pytest.importorskip("jupyterlab")
    nbformat = pytest.importorskip("nbformat")
    from nbformat.sign import NotebookNotary

    tmp = tmp_path_factory.mktemp("jupyterlab")
    dirs = {d: tmp / d for d in ("data", "config", "runtime", "settings", "workspaces",
                                 "checkpoints")}
    for d in dirs.values():
        d.mkdir()
    for plugin, values in SETTINGS.items():
        path = dirs["settings"] / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    # Trust every notebook, as `jupyter trust` does, in this server's own database.
    notary = NotebookNotary(data_dir=str(dirs["data"]))
    for page in NOTEBOOKS:
        notary.sign(nbformat.read(ROOT / f"{page}.ipynb", as_version=4))
    env = dict(os.environ, JUPYTER_DATA_DIR=str(dirs["data"]),
               JUPYTER_CONFIG_DIR=str(dirs["config"]),
               JUPYTER_RUNTIME_DIR=str(dirs["runtime"]))
    port = _free_port()
    log_file = tmp / "server.log"
    with open(log_file, "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
             f"--port={port}", "--ServerApp.port_retries=0",
             "--IdentityProvider.token=",
             "--ServerApp.password=", "--ServerApp.allow_root=True",
             f"--ServerApp.root_dir={ROOT}",
             # JupyterLab makes a checkpoint of every notebook it opens: not in book/.
             f"--FileCheckpoints.checkpoint_dir={dirs['checkpoints']}",
             f"--LabApp.user_settings_dir={dirs['settings']}",
             f"--LabApp.workspaces_dir={dirs['workspaces']}",
             "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                _get(f"{url}/api/status")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start:\n{log_file.read_text()}")
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if FINDINGS:
            SHOTS.mkdir(parents=True, exist_ok=True)
            lines = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in FINDINGS.items()]
            (SHOTS / "findings.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")


@pytest.fixture(scope="module")
def tab(lab, local_browser):
    """A Chromium tab on the JupyterLab (``conftest.py``'s browser that reaches 127.0.0.1
    only): yields (tab, its JavaScript errors)."""
    page = local_browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{lab}/lab?reset", wait_until="load")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started",
                           timeout=120_000)
    page.evaluate("async () => { await window.jupyterapp.restored; "
                  "window.jupyterapp.shell.collapseLeft(); }")
    yield page, errors
    page.close()


def findings(report: dict, figures_expected: list[str]) -> dict[str, list[str]]:
    """What a reader would see wrong, by kind (each entry names its cell)."""
    found: dict[str, list[str]] = {k: [] for k in KINDS}
    stems = [Path(p).name for p in NOTEBOOKS if "_" in Path(p).name]
    file_name = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, stems)))
    cells = report["cells"]
    keys = sorted({k for c in cells if c["type"] == "code"
                   for k in GLUE_CALL.findall(c["source"])})
    glue_key = re.compile(r"(?<![\w-])(?:%s)(?![\w-])" % "|".join(map(re.escape, keys)))
    drawn: dict[str, bool] = {}
    for c in cells:
        where = f"cell {c['index']}"
        if c["type"] == "markdown":
            if not c["rendered"]:
                found["not_rendered"].append(f"{where}: {c['source'][:60]!r}")
            if "text" not in c:
                continue
            text = " ".join(c["text"].split())
            for kind, pattern in (("raw_roles", ROLE), ("fences_as_code", FENCE_TEXT),
                                  ("file_names", file_name)):
                found[kind] += [f"{where}: {m.group()}" for m in pattern.finditer(text)]
            if keys:
                found["glue_keys"] += [f"{where}: {m.group()}"
                                       for m in glue_key.finditer(text)]
            found["fences_as_code"] += [
                f"{where}: code block {b['lang'] or b['first'][:40]}"
                for b in c["codeBlocks"]
                if DIRECTIVE.fullmatch(b["lang"]) or DIRECTIVE.match(b["first"])]
            found["directive_errors"] += [f"{where}: {u}" for u in c["unknown"]]
            found["unresolved_refs"] += [f"{where}: {u}" for u in c["unresolved"]]
            found["unresolved_cites"] += [f"{where}: {u}" for u in c["uncited"]]
        elif c["type"] == "code":
            for tag, parts in HIDDEN.items():
                shown = [p for p in parts if tag in c["tags"] and c[f"{p}Shown"]]
                if shown:
                    found["bookkeeping_cells"].append(
                        f"{where} ({tag}): {' and '.join(shown)} shown: "
                        f"{c['source'][:50]!r}")
            for f in c["figures"]:
                drawn[f["id"]] = f["mounted"] and f["drawn"]
    found["figures_not_drawn"] = [
        f"{fid}: {'absent' if fid not in drawn else 'not drawn'}"
        for fid in figures_expected if not drawn.get(fid)]
    return found


def _kernelspec(lab: str) -> dict:
    """The kernel spec JupyterLab writes into a notebook when a reader's kernel starts."""
    spec = json.loads(_get(f"{lab}/api/kernelspecs"))["kernelspecs"]["python3"]["spec"]
    return {"display_name": spec["display_name"], "language": spec["language"],
            "name": "python3"}


def modified_by_opening(text: str, report: dict, kernelspec: dict) -> list[str]:
    """What would change if the reader saved the notebook just opened: the file's text
    against JupyterLab's copy written as the server writes it (``nbformat.writes``), with
    the kernel spec a started kernel sets; each difference named (metadata key, cell)."""
    nbformat = pytest.importorskip("nbformat")
    held = json.loads(json.dumps(report["held"]))
    # undefined fields (a Markdown cell's attachments) come back as None: JSON drops them
    held["cells"] = [{k: v for k, v in c.items() if v is not None} for c in held["cells"]]
    held["metadata"]["kernelspec"] = kernelspec
    saved = nbformat.writes(nbformat.from_dict(held), version=nbformat.NO_CONVERT) + "\n"
    found = ["the dirty marker is set"] if report["dirty"] else []
    if saved == text:
        return found
    stored, held = json.loads(text), json.loads(saved)
    meta = lambda nb: nb.get("metadata", {})
    found += [f"notebook metadata {k}: {meta(stored).get(k)!r} -> {meta(held).get(k)!r}"
              for k in sorted(set(meta(stored)) | set(meta(held)))
              if meta(stored).get(k) != meta(held).get(k)]
    for i, (a, b) in enumerate(zip(stored["cells"], held["cells"])):
        found += [f"cell {i} metadata {k}: {meta(a).get(k)!r} -> {meta(b).get(k)!r}"
                  for k in sorted(set(meta(a)) | set(meta(b)))
                  if meta(a).get(k) != meta(b).get(k)]
        found += [f"cell {i} {k}" for k in ("cell_type", "source", "outputs")
                  if a.get(k) != b.get(k)]
    if len(stored["cells"]) != len(held["cells"]):
        found.append(f"{len(stored['cells'])} cells in the file, {len(held['cells'])} held")
    return found or ["the saved text differs (formatting)"]


@pytest.mark.parametrize("page", NOTEBOOKS)
def test_notebook_in_jupyterlab(lab, tab, page):
    tab, js_errors = tab
    nb = json.loads((ROOT / f"{page}.ipynb").read_text())
    figures_expected = sorted({
        m for cell in nb["cells"] for out in cell.get("outputs", [])
        for m in FIGURE_ROOT.findall(
            "".join(out.get("data", {}).get("text/html", "")))})
    before = _book_files()
    errors_before = len(js_errors)
    report = tab.evaluate(OPEN, f"{page}.ipynb")
    name = Path(page).name
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        for where in ("top", "end"):
            tab.evaluate(SCROLL, where)
            tab.wait_for_timeout(150)
            tab.screenshot(path=str(SHOTS / f"{name}-{where}.png"))
    finally:
        tab.evaluate(CLOSE)
    found = findings(report, figures_expected)
    kernels = json.loads(_get(f"{lab}/api/kernels"))
    found["kernels"] = [f"kernel started: {k['name']}" for k in kernels]
    after = _book_files()
    found["files_changed"] = [f"{f} {'changed' if f in before else 'written'}"
                              for f in after if after[f] != before.get(f)]
    found["files_changed"] += [f"{f} deleted" for f in before if f not in after]
    found["marked_modified"] = modified_by_opening(
        (ROOT / f"{page}.ipynb").read_text(), report, _kernelspec(lab))
    if figures_expected and not report["trusted"]:
        found["figures_not_drawn"].append("the notebook is not trusted in JupyterLab")
    FINDINGS[name] = {k: len(v) for k, v in found.items()}
    assert any(c["type"] == "markdown" for c in report["cells"]), "no Markdown cell"
    problems = [f"{kind}: {item}" for kind, items in found.items() for item in items]
    counts = ", ".join(f"{k} {len(v)}" for k, v in found.items() if v)
    errors = js_errors[errors_before:] or "none"
    assert not problems, (
        f"{page}.ipynb in JupyterLab ({counts}; JavaScript errors: {errors}):\n"
        + "\n".join(problems[:60])
        + (f"\n... and {len(problems) - 60} more" if len(problems) > 60 else ""))

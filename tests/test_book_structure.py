"""The book's structure, checked without executing anything (part of the default `pytest`).

- every chapter in ``_toc.yml`` is a notebook or a Markdown page that exists;
- every page in ``book/`` is in ``_toc.yml`` (``only_build_toc_files`` would drop it silently);
- every notebook in ``book/`` is collected by nbval in the default ``pytest`` run;
- Markdown pages hold no executable ``{code-cell}`` (nothing would run or check it);
- no cell holds a control character: "\\approx" written in a non-raw Python string becomes a
  bell and "pprox", which MathJax shows as a TeX error;
- every code cell has a stored execution, from one top-to-bottom run in a fresh kernel;
- no stored output holds something that changes from run to run (a memory address, a
  temporary path, a timing);
- ``.ci/run`` runs exactly the README's test command and book build.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from book_toc import toc_entries

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"


TOC = toc_entries()
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))
MD_PAGES = sorted(BOOK.glob("*.md"))


def _source_of(entry: str) -> Path:
    candidates = [ROOT / (entry + ext) for ext in (".ipynb", ".md")]
    existing = [p for p in candidates if p.exists()]
    assert existing, f"_toc.yml lists {entry!r} but neither {entry}.ipynb nor {entry}.md exists"
    assert len(existing) == 1, f"_toc.yml entry {entry!r} is ambiguous: both {existing} exist"
    return existing[0]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_toc_lists_chapters():
    assert TOC, "_toc.yml lists no pages"
    assert len(TOC) == len(set(TOC)), f"_toc.yml lists a page twice: {TOC}"


@pytest.mark.parametrize("entry", TOC)
def test_toc_entry_exists(entry):
    _source_of(entry)


def test_every_page_in_book_is_in_the_toc():
    listed = {_rel(_source_of(e)) for e in TOC}
    pages = {_rel(p) for p in NOTEBOOKS + MD_PAGES}
    missing = sorted(pages - listed)
    assert not missing, f"in book/ but not in _toc.yml (the build would drop them): {missing}"


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@pytest.mark.parametrize("page", NOTEBOOKS + MD_PAGES, ids=_rel)
def test_no_control_characters_in_the_sources(page):
    if page.suffix == ".md":
        cells = [page.read_text()]
    else:
        cells = ["".join(c["source"]) for c in json.loads(page.read_text())["cells"]]
    found = [(i, m.group(), text[max(0, m.start() - 30):m.end() + 10])
             for i, text in enumerate(cells) for m in CONTROL.finditer(text)]
    assert not found, f"{_rel(page)}: control characters (an unescaped backslash?): {found}"


@pytest.mark.parametrize("page", MD_PAGES, ids=_rel)
def test_markdown_pages_have_no_executable_cells(page):
    text = page.read_text()
    assert "{code-cell}" not in text, (
        f"{_rel(page)} has a {{code-cell}}: the book does not execute (execute_notebooks: off) "
        "and nbval does not check Markdown; make it a .ipynb"
    )


def _collected_notebooks_default_run() -> dict[str, int]:
    """Notebook -> number of nbval items, from a collection of the default ``pytest`` run."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, f"`pytest --collect-only` failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    counts: dict[str, int] = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"^(\S+\.ipynb)::", line.strip())
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def test_every_notebook_is_collected_by_nbval(request):
    """In the default run, nbval collects a cell item for every notebook of the book.

    Inside the default run (no arguments, with or without xdist: every worker collects
    everything) the session's own items are the evidence, at no cost. Run alone, the test
    collects the default run in a subprocess.
    """
    wanted = {_rel(p) for p in NOTEBOOKS} | {
        _rel(_source_of(e)) for e in TOC if _source_of(e).suffix == ".ipynb"
    }
    counts: dict[str, int] = {}
    for item in request.session.items:
        path = Path(str(getattr(item, "path", item.fspath)))
        if path.suffix == ".ipynb" and type(item).__module__.startswith("nbval"):
            key = _rel(path) if path.is_relative_to(ROOT) else str(path)
            counts[key] = counts.get(key, 0) + 1
    if not wanted <= counts.keys():
        counts = _collected_notebooks_default_run()
    missing = sorted(wanted - counts.keys())
    assert not missing, f"nbval does not collect these notebooks in the default `pytest` run: {missing}"


def _load(nb_path: Path) -> dict:
    return json.loads(nb_path.read_text())


def _code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=_rel)
def test_every_code_cell_has_a_stored_execution(nb_path):
    cells = _code_cells(_load(nb_path))
    assert cells, f"{_rel(nb_path)} has no code cell: nbval would check nothing"
    empty = [i for i, c in enumerate(cells) if not _source(c).strip()]
    assert not empty, f"{_rel(nb_path)}: empty code cells (never executed, never checked): {empty}"
    counts = [c.get("execution_count") for c in cells]
    unexecuted = [i for i, n in enumerate(counts) if n is None]
    assert not unexecuted, (
        f"{_rel(nb_path)}: code cells {unexecuted} have no stored execution; re-execute with "
        f"`jupyter nbconvert --to notebook --execute --inplace {_rel(nb_path)}`"
    )
    assert counts == list(range(1, len(cells) + 1)), (
        f"{_rel(nb_path)}: execution counts {counts} are not 1..{len(cells)}: the stored outputs "
        "are not from one top-to-bottom run in a fresh kernel; re-execute it with nbconvert"
    )


# Text that changes from run to run or from machine to machine, and so must not be stored.
RUN_DEPENDENT = {
    "a memory address": re.compile(r"\b0x[0-9a-fA-F]{6,}\b"),
    "a temporary path": re.compile(r"/tmp/|/var/folders/|\\Temp\\|/private/var/"),
    "a timing": re.compile(
        r"Wall time:|CPU times:|\bper loop\b|\bloops? each\b|\belapsed\b|\btook\s+\d"
        r"|\d\s*(?:ms|µs|μs|us|ns)\s*±",
        re.IGNORECASE,
    ),
}
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TEXT_MIMES = ("text/plain", "text/html", "text/markdown", "text/latex", "application/json")


def _text(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(value)
    return json.dumps(value)


def _output_texts(output: dict):
    """(where, text) for every text an output stores (images are not text and are skipped)."""
    kind = output.get("output_type")
    if kind == "stream":
        yield output.get("name", "stream"), _text(output.get("text", ""))
    elif kind in ("execute_result", "display_data"):
        for mime, value in output.get("data", {}).items():
            if mime in TEXT_MIMES:
                yield mime, _text(value)
    elif kind == "error":
        parts = [output.get("ename", ""), output.get("evalue", "")] + output.get("traceback", [])
        yield "error", "\n".join(parts)


def _line_around(text: str, start: int, end: int) -> str:
    first = text.rfind("\n", 0, start) + 1
    last = text.find("\n", end)
    return text[first : len(text) if last == -1 else last].strip()


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=_rel)
def test_no_run_dependent_text_in_stored_outputs(nb_path):
    problems = []
    for i, cell in enumerate(_code_cells(_load(nb_path))):
        for output in cell.get("outputs", []):
            for where, text in _output_texts(output):
                text = ANSI.sub("", text)
                for what, pattern in RUN_DEPENDENT.items():
                    for m in pattern.finditer(text):
                        line = _line_around(text, m.start(), m.end())
                        problems.append(f"code cell {i} ({where}): {what}: {line[:120]!r}")
    assert not problems, (
        f"{_rel(nb_path)} stores output that changes from run to run (fix the print, or tag the "
        "cell nbval-ignore-output and print no such value):\n" + "\n".join(problems)
    )


def _readme_block_after(heading_text: str) -> str:
    readme = (ROOT / "README.md").read_text()
    at = readme.index(heading_text)
    block = re.search(r"```bash\n(.+?)\n```", readme[at:], re.DOTALL)
    assert block, f"no ```bash block after {heading_text!r} in README.md"
    return block.group(1).strip()


def test_ci_runs_exactly_the_readme_commands():
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    test_cmd = _readme_block_after("Run every test")
    assert test_cmd in ci_lines, f".ci/run does not run the README's test command verbatim:\n{test_cmd}"
    build_cmd = _readme_block_after("Build the book").split("&&")[-1].strip()
    assert build_cmd in ci_lines, f".ci/run does not run the README's book build verbatim:\n{build_cmd}"


# A float printed with more significant digits than a double's rounding can be trusted to
# across CPUs (SIMD kernels and BLAS summation orders differ in the last bits). Exact digits
# are fine: an integer value ("68719476736.0"), or a version-like "3.11.7".
LONG_FLOAT = re.compile(r"(?<![\w.])(\d+)\.(\d+)(?![\d.])")
MAX_SIGNIFICANT = 12


def _long_floats(text: str):
    for m in LONG_FLOAT.finditer(text):
        whole, frac = m.groups()
        if not frac.strip("0"):  # an integer value: exact
            continue
        significant = (whole + frac).lstrip("0").rstrip("0")
        if len(significant) > MAX_SIGNIFICANT:
            yield m.group(0)


def _stored_texts(output: dict):
    """Every text an output stores, glued values (``application/papermill.record/...``) too."""
    yield from _output_texts(output)
    for mime, value in output.get("data", {}).items():
        if mime.startswith("application/papermill.record/") and mime.endswith(
                ("text/plain", "json")):
            yield mime, _text(value)


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=_rel)
def test_no_float_stored_with_its_last_bits(nb_path):
    problems = []
    for i, cell in enumerate(_code_cells(_load(nb_path))):
        for output in cell.get("outputs", []):
            for where, text in _stored_texts(output):
                for number in _long_floats(ANSI.sub("", text)):
                    problems.append(f"code cell {i} ({where}): {number}")
    assert not problems, (
        f"{_rel(nb_path)} stores floats with more than {MAX_SIGNIFICANT} significant digits, "
        "whose last digits differ between CPUs; round them to what the prose needs "
        "(bookutils.glue rounds glued values):\n" + "\n".join(problems)
    )


def test_long_float_detector():
    found = list(_long_floats("33.557309761920706 and 33.55730976 and 68719476736.0 "
                              "and 3.11.7 and 0.000123456789012345 and 1.2345678901e-05"))
    assert found == ["33.557309761920706", "0.000123456789012345"]


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=_rel)
def test_notebooks_choose_their_figure_backend(nb_path):
    # A kernel inherits MPLBACKEND; with Agg, figures would not be stored and nbval would fail.
    cells = _code_cells(_load(nb_path))
    uses_matplotlib = any("matplotlib" in _source(c) for c in cells)
    if uses_matplotlib:
        assert _source(cells[0]).startswith("%matplotlib inline"), (
            f"{_rel(nb_path)}: its first code cell must start with `%matplotlib inline`")

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
- ``.ci/run`` runs exactly the README's test command and book build;
- every code line of a notebook, and of the package the chapters show with
  ``literalinclude``, fits the page's code column (88 characters; the browser test measures
  the rendered pages at 1280 px);
- chapters are numbered in reading order: file prefixes rise in ``_toc.yml`` order, the
  numbered parts hold the chapters 1, 2, 3, ... in that order, and every "chapter N" in the
  book's prose names the N-th chapter by what it is about ("the causal mask (chapter N)",
  "(the decoder's cache, chapter N)", "the key/value cache of chapter N");
- chapter 0 and every numbered chapter end with a ``## Summary`` of 3 to 6 bullets, each with
  a number (glued or printed), just before the exercises;
- no chapter mentions an issue, a target, a test file or an internal equation label.
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


# --- layout and numbering -------------------------------------------------------------------

CODE_COLUMNS = 88  # measured: 97 columns of DejaVu Sans Mono fit a code block at 1280 px


def _nb_code_cells(nb_path: Path):
    nb = json.loads(nb_path.read_text())
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            yield i, "".join(cell["source"])


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_as_jupyterlab_saves_it(nb_path):
    """A chapter opened in JupyterLab is not marked modified: the kernel spec is the one a
    reader's kernel writes, ``collapsed`` stands beside every ``outputs_hidden``, and the
    cells the book hides are folded (``book/prose.py --sync`` stores them so; the JupyterLab
    browser test checks the same thing in JupyterLab itself)."""
    sys.path.insert(0, str(ROOT / "book"))
    import prose

    nb = json.loads(nb_path.read_text())
    changed = prose.jupyterlab_form(nb)
    assert not changed, (f"{nb_path.name} is not stored as JupyterLab saves it "
                         f"({', '.join(changed[:4])}): run book/prose.py --sync on it")


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_lines_fit_the_column(nb_path):
    long = [f"cell {i}: {line!r}" for i, src in _nb_code_cells(nb_path)
            for line in src.splitlines() if len(line) > CODE_COLUMNS]
    assert not long, f"{nb_path.name}: code lines over {CODE_COLUMNS} characters:\n" + "\n".join(long)


def test_package_lines_fit_the_column():
    long = [f"{_rel(p)}:{n}: {line!r}" for p in sorted((ROOT / "mini_transformer").rglob("*.py"))
            for n, line in enumerate(p.read_text().splitlines(), 1) if len(line) > CODE_COLUMNS]
    assert not long, f"package lines over {CODE_COLUMNS} characters:\n" + "\n".join(long)


def _numbered_chapters() -> list[str]:
    """The chapters of the numbered parts of _toc.yml, in order: chapter 1, 2, ..."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [c["file"] for part in toc["parts"] if part.get("numbered")
            for c in part["chapters"]]


def test_chapters_are_numbered_in_reading_order():
    chapters = _numbered_chapters()
    assert chapters, "no numbered part in _toc.yml"
    prefixes = [int(re.match(r"book/(\d+)_", c).group(1)) for c in chapters]
    assert prefixes == list(range(1, len(chapters) + 1)), (
        f"file prefixes must be 01, 02, ... in _toc.yml order: {chapters}")
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    captions = [part["caption"] for part in toc["parts"] if part.get("numbered")]
    numerals = ["I", "II", "III", "IV", "V", "VI"]
    assert captions == [c for c in captions if c.startswith("Part ")] and all(
        c.startswith(f"Part {numerals[k]} ") for k, c in enumerate(captions)), captions


def _page_prose(path: Path) -> str:
    if path.suffix == ".md":
        return path.read_text()
    nb = json.loads(path.read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def _titles() -> dict[int, str]:
    titles = {}
    for k, entry in enumerate(_numbered_chapters(), 1):
        text = _page_prose(_source_of(entry))
        titles[k] = re.search(r"^# (.+)$", text, re.M).group(1)
    return titles


# What each chapter is about, as prose names it: a "chapter N" must sit near one of these
# words of the N-th chapter's title, or name a chapter whose title the sentence quotes.
def test_chapter_references_match_the_toc():
    """Every "chapter N" / "chapters N and M" in prose names an existing chapter."""
    n_chapters = len(_numbered_chapters())
    bad = []
    pattern = re.compile(r"\b[Cc]hapters?\s+((?:\d+)(?:\s*(?:,|and|or|to|-|–)\s*\d+)*)")
    pages = [_source_of(e) for e in TOC] + [ROOT / "README.md"]
    for page in pages:
        for m in pattern.finditer(_page_prose(page)):
            for number in map(int, re.findall(r"\d+", m.group(1))):
                if not 1 <= number <= n_chapters:
                    bad.append(f"{_rel(page)}: {m.group(0)!r} (the book has {n_chapters} chapters)")
    assert not bad, "\n".join(bad)


# Words prose uses for a chapter's topic, and a word of that chapter's title: "the decoder
# layer (chapter N)", "(the decoder's cache, chapter N)", "the key/value cache of chapter N"
# or "chapter N (the decoder layer)" must point at the chapter about it.
TOPICS = {
    "decoder layer": "decoder", "causal mask": "decoder", "cross-attention": "decoder",
    "whole model": "whole", "key/value cache": "whole", "kv cache": "whole", "cache": "whole",
    "greedy decoding": "whole", "tied weights": "whole", "cost of attention": "cost",
    "online softmax": "cost", "tiled attention": "cost", "flashattention": "cost",
    "why self-attention": "why", "table 1": "why", "path length": "why",
    "gradients by hand": "gradient", "encoder layer": "encoder", "layernorm": "encoder",
    "residual": "encoder", "feed-forward": "feed-forward", "positional encoding": "positional",
    "multi-head attention": "multi-head", "temperature": "softmax",
    "label smoothing": "training", "warm-up": "training", "beam search": "experiment",
}
# A topic ends at most this many characters before the reference ("the decoder's cache, ").
NEAR = 12
# References whose topic comes before them: "(chapter N)", "(..., chapter N)", "of chapter N",
# "from chapter N".
TOPIC_BEFORE = re.compile(
    r"(?:\((?=chapters? \d+\))|, (?=chapters? \d+\))| of | from )chapters? (\d+)\b")
# References whose topic comes after them: "chapter N (the decoder layer".
TOPIC_AFTER = re.compile(r"chapter (\d+) \((?:the )?([a-z/ -]+)")


def topic_references(text: str) -> list[tuple[int, str, str]]:
    """``(chapter number, topic, the reference)`` for each reference that names a topic."""
    text = " ".join(text.split()).lower()
    found = []
    for m in TOPIC_BEFORE.finditer(text):
        before = text[max(0, m.start() - 40):m.start()]
        ends = {t: before.rfind(t) for t in TOPICS if before.rfind(t) >= 0}
        near = [t for t, k in ends.items() if len(before) - k - len(t) <= NEAR]
        if near:  # the topic that ends last, the longest of those that end there
            last = max(near, key=lambda t: (ends[t] + len(t), len(t)))
            found.append((int(m.group(1)), last, m.group(0).strip(" ,(")))
    for m in TOPIC_AFTER.finditer(text):
        near = [t for t in TOPICS if m.group(2).startswith(t)]
        if near:
            found.append((int(m.group(1)), near[0], m.group(0)))
    return found


def test_topic_reference_finder():
    """The finder catches each form, and the misses it was written for."""
    cases = {
        "the causal mask (chapter 9) hides": [(9, "causal mask")],
        "reuses keys and values (the decoder's cache, chapter 11). The": [(11, "cache")],
        "greedy decoding with the key/value cache of chapter 10, from": [
            (10, "key/value cache")],
        "as chapter 8 (the encoder layer) showed": [(8, "encoder layer")],
        "the positional encoding from chapter 6": [(6, "positional encoding")],
        "a fused torch kernel (chapter 8)": [],  # no topic word: not checked
        "the cache, which chapter 10 builds": [],  # not a reference form
    }
    for text, expected in cases.items():
        assert [(n, t) for n, t, _ in topic_references(text)] == expected, text


def test_chapter_references_name_their_topic():
    """A topic just before "(chapter N)", "(..., chapter N)", "of chapter N", or just after
    "chapter N (", is chapter N's topic."""
    titles = {k: t.lower() for k, t in _titles().items()}
    bad, checked = [], 0
    for page in [_source_of(e) for e in TOC] + [ROOT / "README.md"]:
        for number, topic, where in topic_references(_page_prose(page)):
            checked += 1
            if TOPICS[topic] not in titles.get(number, ""):
                bad.append(f"{_rel(page)}: {topic!r} ... {where!r}, but chapter {number} "
                           f"is {titles.get(number)!r}")
    assert checked >= 10, f"only {checked} topic references found: the pattern is broken"
    assert not bad, "\n".join(bad)


PLUMBING = re.compile(
    r"\bthe issue\b|\bissue #?\d|\btests?/\w|test_\w+\.py|\bspeed targets?\b|"
    r"\bthe project's target|\btargets? (?:is|are|was|were) (?:met|unmet)|"
    r"(?:equation|eq\.)\s*\(?[a-z]+[0-9]*-[a-z0-9-]+\)?")


@pytest.mark.parametrize("page", [e for e in TOC if "appendix" not in e])
def test_no_plumbing_in_the_chapters(page):
    """No issue, target, test file or internal equation label in what a reader sees.

    (The appendices that list what the tests check may name them.)"""
    path = _source_of(page)
    texts = [_page_prose(path)]
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] != "code":
                continue
            texts.append("".join(cell["source"]))
            for out in cell.get("outputs", []):
                texts.append("".join(out.get("text", "")))
    found = [m.group(0) for t in texts for m in PLUMBING.finditer(t)]
    assert not found, f"{page}: {found}"


# --- one main line per chapter ----------------------------------------------------------------

MAIN_TEXT_WORDS = 3500


def main_text_words(nb_path: Path) -> int:
    """Words of a chapter's main text: its Markdown outside the Exercises and *Checking the
    sources* sections, outside folded blocks ({dropdown}, admonitions) and display math."""
    nb = json.loads(nb_path.read_text())
    words, skip = 0, False
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = ""
        for part in re.split(r"(?m)^(#{1,3} .*)$", "".join(cell["source"])):
            if re.match(r"#{1,3} ", part):
                skip = bool(re.match(r"#{1,3} (Exercises|Checking the sources)", part))
            elif not skip:
                text += part
        text = re.sub(r"(`{3,}|:{3,})\{(dropdown|admonition)\}.*?\n\1", "", text, flags=re.S)
        text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)
        text = re.sub(r"<!--.*?-->", "", text, flags=re.S)  # where a number comes from
        text = re.sub(r"(?m)^```python\n.*?^```", "", text, flags=re.S)  # the package's code
        words += len(re.findall(r"[A-Za-z][A-Za-z'’-]*", text))
    return words


def test_main_text_counter():
    """The counter skips what it should: folded blocks, exercises, the sources, display math."""
    cells = [
        "# Title\none two three\n```{dropdown} Folded\nfour five\n```\n$$a + b$$\n",
        "0.25<!--glue:x_y:.2f-->\n<!--source a.py f-->\n```python\ndef f():\n```\n",
        "## Exercises\nsix seven\n## Checking the sources\neight\n",
        "## Back\nnine ten\n",
    ]
    nb = {"cells": [{"cell_type": "markdown", "source": [c]} for c in cells]}
    path = Path(__file__).with_name("_words_probe.ipynb")
    try:
        path.write_text(json.dumps(nb))
        assert main_text_words(path) == 3 + 2  # one two three, nine ten (headings not counted)
    finally:
        path.unlink()


@pytest.mark.parametrize("entry", [e for e in TOC if "appendix" not in e and _source_of(e).suffix == ".ipynb"])
def test_main_text_is_at_most_3500_words(entry):
    words = main_text_words(_source_of(entry))
    assert words <= MAIN_TEXT_WORDS, (
        f"{entry}: {words} words of main text (at most {MAIN_TEXT_WORDS}): fold verification, "
        "audits and digressions into a {dropdown} or an appendix")


# --- a summary at the end of every chapter ----------------------------------------------------

SUMMARY_BULLETS = (3, 6)
# A number in a bullet: a glued value, or a digit that is not in a name ("float32", "W1")
# and not a chapter, section, figure or equation reference.
GLUE = re.compile(r"<!--glue:[\w-]+:[^>]*-->")
NOT_A_RESULT = re.compile(
    r"\b(?:chapters?|§|sections?|figures?|tables?|equations?|eq\.)\s*\d+(?:\.\d+)*", re.I)
NAME = re.compile(r"[A-Za-z_\\]\w*")


def summary_problems(nb: dict) -> list[str]:
    """What is wrong with a notebook's summary (an empty list when nothing is).

    The summary is the Markdown cell that starts with ``## Summary``: it comes just before the
    cell that starts with ``## Exercises`` (the last cell, or just before ``## Checking the
    sources``, in a chapter without exercises), holds no other heading, and lists 3 to 6
    bullets, each with a number: a glued value or a digit of its own."""
    cells = [c for c in nb["cells"] if "".join(c["source"]).strip()]
    text = ["".join(c["source"]).strip() if c["cell_type"] == "markdown" else "" for c in cells]
    at = [k for k, t in enumerate(text) if re.match(r"## Summary\s*$", t.split("\n")[0])]
    if len(at) != 1:
        return [f"{len(at)} Markdown cells start with '## Summary' (want exactly one)"]
    k = at[0]
    problems = []
    has_exercises = any(re.match(r"## Exercises\b", t) for t in text)
    nxt = text[k + 1] if k + 1 < len(text) else None
    if has_exercises and not (nxt and re.match(r"## Exercises\b", nxt)):
        problems.append("the summary is not the cell just before '## Exercises'")
    if not has_exercises and nxt is not None and not re.match(r"## Checking the sources\b", nxt):
        problems.append("the summary is not at the end (nor just before 'Checking the sources')")
    body = text[k].split("\n")[1:]
    if any(re.match(r"#{1,6} ", line) for line in body):
        problems.append("the summary cell holds another heading")
    bullets: list[str] = []
    for line in body:
        if re.match(r"[-*] ", line):
            bullets.append(line[2:])
        elif bullets and line[:1].isspace() and line.strip():
            bullets[-1] += " " + line.strip()  # a bullet's continuation line
    if not SUMMARY_BULLETS[0] <= len(bullets) <= SUMMARY_BULLETS[1]:
        problems.append(f"{len(bullets)} bullets (want {SUMMARY_BULLETS[0]} to "
                        f"{SUMMARY_BULLETS[1]})")
    for bullet in bullets:
        rest = NAME.sub("", NOT_A_RESULT.sub("", GLUE.sub("", bullet)))
        if not GLUE.search(bullet) and not re.search(r"\d", rest):
            problems.append(f"a bullet without a number: {bullet[:80]!r}")
    return problems


def test_summary_checker():
    """The checker accepts a good summary and names each defect of a bad one."""
    def nb(*sources):
        return {"cells": [{"cell_type": "markdown", "source": [s]} for s in sources]}

    good = ("## Summary\n\n- the scores: 0.25<!--glue:x_y:.2f--> on average\n"
            "- softmax of a row of\n  4 equal scores gives 0.25 each\n- 3 heads of width 8\n")
    assert summary_problems(nb("# T", good, "## Exercises\n1. x")) == []
    assert summary_problems(nb("# T", good)) == []
    assert summary_problems(nb("# T", good, "## Checking the sources")) == []
    assert summary_problems(nb("# T", "## Exercises")) == [
        "0 Markdown cells start with '## Summary' (want exactly one)"]
    assert summary_problems(nb("# T", good, "## More", "## Exercises")) == [
        "the summary is not the cell just before '## Exercises'"]
    assert summary_problems(nb("# T", good, "## More")) == [
        "the summary is not at the end (nor just before 'Checking the sources')"]
    two = "## Summary\n- 1 thing\n- 2 things\n"
    assert summary_problems(nb(two, "## Exercises")) == ["2 bullets (want 3 to 6)"]
    vague = ("## Summary\n- the cache of chapter 10\n- float32 and W1 are used\n"
             "- 3 heads\n")
    assert summary_problems(nb(vague)) == [
        "a bullet without a number: 'the cache of chapter 10'",
        "a bullet without a number: 'float32 and W1 are used'"]
    assert summary_problems(nb(good + "### Also\n")) == ["the summary cell holds another heading"]


@pytest.mark.parametrize("entry", [e for e in TOC if re.match(r"book/\d\d_", e)])
def test_chapter_ends_with_a_summary(entry):
    """Chapter 0 and every numbered chapter end with a '## Summary' of 3 to 6 bullets, each with
    a number, just before its exercises."""
    problems = summary_problems(_load(_source_of(entry)))
    assert not problems, f"{entry}: " + "; ".join(problems)

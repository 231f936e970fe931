"""The numbers and code listings the chapters' prose shows, and where they come from.

A chapter's Markdown is plain text wherever it is read (the built book, JupyterLab, any
notebook viewer), so a number the code computed is written into the prose as text, and an
HTML comment right after it says where it comes from::

    the highest score gets the weight 0.6095<!--glue:ch3_p0:.4f-->.

``ch3_p0`` is a value a hidden cell stored with ``bookutils.glue`` and ``.4f`` the format
it is shown with (Python's format mini-language, as in ``format(value, ".4f")``). A listing
of the package's code is a ``python`` code block after a comment naming the object::

    <!--source ../mini_transformer/attention.py scaled_dot_product_attention-->
    ```python
    def scaled_dot_product_attention(...):
    ```

(``end-before=TEXT`` after the name stops the listing before the first line holding
TEXT.) The comments are invisible in every renderer. ``check`` lists every place where the
text differs from the stored value or the package's source; nbval makes the stored values
equal to what the code computes, so a changed result fails a test until the prose follows.
``sync`` rewrites the text from the stored values and the source::

    python book/prose.py book/03_softmax.ipynb            # check
    python book/prose.py --sync book/03_softmax.ipynb     # rewrite, then check

``sync`` also stores the notebook in the form JupyterLab saves it (``jupyterlab_form``), so
that a reader who opens a chapter and only reads it is never asked to save it.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

GLUE = re.compile(r"<!--glue:(?P<key>[A-Za-z0-9_.-]+)(?::(?P<fmt>[^>]*?))?-->")
SOURCE = re.compile(
    r"<!--source (?P<path>\S+) (?P<name>[A-Za-z_][\w.]*)"
    r"(?: end-before=(?P<end>[^>]*?))?-->\n(?P<block>```python\n(?P<code>.*?)```)",
    re.S,
)
# The text a numeric value may have been shown as, at the end of the prose before a marker.
NUMBER = re.compile(r"[-+]?(?:\d[\d,]*)?(?:\.\d+)?(?:e[-+]?\d+)?%?$")
RECORD = "application/papermill.record/text/plain"


def format_value(text: str, fmt: str | None) -> str:
    """A stored value (its ``repr``) shown with ``fmt``, as the book's glue role showed it."""
    try:
        value = ast.literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if not fmt:
        return str(value)
    kind = fmt[-1]
    if kind == "s":
        value = str(value)
    elif kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    return format(value, fmt)


# What the book hides (the tags) stays folded in JupyterLab (``jupyter.*_hidden``).
FOLDED = {"remove-cell": ("source", "outputs"), "hide-cell": ("source", "outputs"),
          "hide-input": ("source",)}
# What JupyterLab sets in a notebook it opens: the kernel spec of the kernel a reader runs
# (ipykernel's), and ``collapsed`` beside every ``jupyter.outputs_hidden`` (its model keeps
# the two in step).
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def jupyterlab_form(nb: dict) -> list[str]:
    """Bring ``nb`` to the form JupyterLab saves, with the book's hidden cells folded (in
    place); returns what it changed."""
    changed = []
    if "metadata" in nb and nb["metadata"].get("kernelspec") != KERNELSPEC:
        nb["metadata"]["kernelspec"] = dict(KERNELSPEC)
        changed.append("kernelspec")
    for i, cell in enumerate(nb["cells"]):
        meta = cell.setdefault("metadata", {})
        tags = meta.get("tags", [])
        for tag, parts in FOLDED.items():
            if cell["cell_type"] == "code" and tag in tags:
                jupyter = meta.setdefault("jupyter", {})
                for part in parts:
                    if jupyter.get(f"{part}_hidden") is not True:
                        jupyter[f"{part}_hidden"] = True
                        changed.append(f"cell {i}: {part}_hidden")
        hidden = meta.get("jupyter", {}).get("outputs_hidden")
        if cell["cell_type"] == "code" and hidden is not None and meta.get("collapsed") != hidden:
            meta["collapsed"] = hidden
            changed.append(f"cell {i}: collapsed")
    return changed


def stored_values(nb: dict) -> dict[str, str]:
    """Every value the notebook's cells glued, by name (as stored, i.e. as nbval checks it)."""
    values = {}
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is not None and RECORD in out.get("data", {}):
                values[name] = out["data"][RECORD]
    return values


def listing(book_dir: Path, path: str, name: str, end: str | None = None) -> str:
    """The source of ``name`` (a function or class, ``Class.method``) in the file ``path``.

    From its first decorator to its last line, as Sphinx's ``literalinclude :pyobject:``
    shows it; with ``end``, up to the first line that holds ``end``.
    """
    file = (book_dir / path).resolve()
    lines = file.read_text().splitlines(keepends=True)
    body = ast.parse("".join(lines)).body
    node = None
    for part in name.split("."):
        node = next(
            (
                n
                for n in body
                if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                and n.name == part
            ),
            None,
        )
        if node is None:
            raise LookupError(f"{name} not found in {path}")
        body = node.body
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    chosen = lines[first - 1 : node.end_lineno]
    if end is not None:
        cut = next((i for i, line in enumerate(chosen) if end in line), None)
        if cut is None:
            raise LookupError(f"end-before={end!r} not found in {name} of {path}")
        chosen = chosen[:cut]
    indent = min(len(s) - len(s.lstrip()) for s in chosen if s.strip())
    return "".join(s[indent:] if s.strip() else "\n" for s in chosen).rstrip() + "\n"


def _rewrite(text: str, values: dict[str, str], book_dir: Path, problems: list[str]):
    """``text`` with every marked number and listing as stored; problems appended."""

    def source(m):
        try:
            code = listing(book_dir, m["path"], m["name"], m["end"])
        except (OSError, LookupError, SyntaxError) as exc:
            problems.append(f"listing {m['name']}: {exc}")
            return m[0]
        if code != m["code"]:
            problems.append(f"listing {m['name']} ({m['path']}) differs from the package")
        return m[0][: m.start("code") - m.start()] + code + "```"

    text = SOURCE.sub(source, text)
    out, last = [], 0
    for m in GLUE.finditer(text):
        before = text[last : m.start()]
        key, fmt = m["key"], m["fmt"]
        if key not in values:
            problems.append(f"{key}: no stored value (is its glue cell run?)")
            out.append(before + m[0])
        else:
            shown = format_value(values[key], fmt)
            old = NUMBER.search(before)
            # a number must be the whole number before the marker: "21" never shows "1"
            # (a written plus sign, "+3", may stand before a positive value)
            whole = (old is None or not NUMBER.fullmatch(shown)
                     or old[0].removeprefix("+") == shown.removeprefix("+"))
            if not (before.endswith(shown) and whole):
                got = before[-max(len(shown), 1) :] if old is None else old[0]
                problems.append(f"{key}: the prose shows {got!r}, the value is {shown!r}")
                if old is not None and old[0]:
                    before = before[: old.start()] + shown
            out.append(before + m[0])
        last = m.end()
    out.append(text[last:])
    return "".join(out)


def check(path: str | Path, write: bool = False) -> list[str]:
    """Where the notebook's prose differs from its stored values and the package's code.

    With ``write``, rewrite the notebook first (numeric values and listings only; a
    string value that differs is reported, to be edited by hand), then check again.
    """
    path = Path(path)
    nb = json.loads(path.read_text())
    values = stored_values(nb)
    problems: list[str] = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        found: list[str] = []
        new = _rewrite(text, values, path.parent, found)
        problems += [f"{path.name}, cell {i}: {p}" for p in found]
        if write and new != text:
            cell["source"] = new.splitlines(keepends=True)
    if write:
        jupyterlab_form(nb)
        text = json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False)
        path.write_text(text + "\n")
        return check(path)
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--sync", action="store_true", help="rewrite the prose first")
    args = parser.parse_args(argv)
    problems = [p for nb in args.notebooks for p in check(nb, write=args.sync)]
    print("\n".join(problems) or f"{len(args.notebooks)} notebook(s): prose as stored")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

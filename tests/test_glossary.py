"""Every term of the glossary is defined before a chapter uses it.

``book/glossary.md`` holds one ``{glossary}`` block: each entry is one or more spellings of
a term (``batch`` / ``batches``), then one indented line, a plain definition that ends with
the chapter defining the term, ``{doc}`chapter 4 <04_attention>``` (or chapter 0, the
orientation).

**The rule.** Chapters are read in ``_toc.yml`` order. In every chapter that comes *before*
a term's defining chapter, the term's first use must be one of

1. a link to its glossary entry, ``{term}`batch``` (or ``{term}`padded <padding>```);
2. emphasised, ``*batch*`` or ``**batch**``: the book's mark of a term defined in the
   sentence it sits in (the sentence must say what it means: that part is for the reader,
   not this test);
3. in a sentence that links the glossary page or the defining chapter (``{doc}`` role or
   Markdown link): "masks (causal, padding; {doc}`chapter 4 <04_attention>`)".

A use counts wherever a reader meets it in the chapter's Markdown: prose, folded blocks,
exercises and solutions, tables. Not counted: headings (labels, not sentences), code blocks
and inline code, math, HTML comments, link targets, and the *Checking the sources* section
(whose audits quote the sources' own words). A spelling matches as a whole word, case
insensitive; the entry lists the spellings (plural, adjective) that count.

The defining chapter itself and the chapters after it are not checked: from there on the
term is known. ``PENDING`` lists the first uses that chapters still have to change, each with
the exact edit; a test checks that each still fails, so the list cannot go stale.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from book_toc import toc_entries

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "book" / "glossary.md"
CHAPTERS = [e.split("/")[-1] for e in toc_entries() if re.match(r"book/\d\d_", e)]

# (chapter, term): the edit that makes the chapter follow the rule. Chapters of other
# authors; each entry is removed once the edit is made (test_pending_entries_still_fail).
PENDING: dict[tuple[str, str], str] = {
}


def glossary_entries() -> list[dict]:
    """[{'terms': [...], 'definition': str, 'chapter': '04_attention'}, ...]."""
    text = GLOSSARY.read_text()
    block = re.search(r"(?ms)^(`{3,}|:{3,})\{glossary\}[^\n]*\n(.*?)^\1\s*$", text)
    assert block, "book/glossary.md has no {glossary} block"
    entries, terms = [], []
    for line in block.group(2).splitlines():
        if not line.strip() or line.startswith(":"):
            continue
        if line[0].isspace():
            assert terms, f"a definition without a term: {line!r}"
            ref = re.search(r"\{doc\}`[^`<]*<([^>]+)>`", line)
            entries.append({"terms": terms, "definition": line.strip(),
                            "chapter": ref.group(1).split("/")[-1] if ref else None})
            terms = []
        else:
            terms.append(line.strip())
    return entries


def _blank(m: re.Match) -> str:
    return re.sub(r"[^\n]", " ", m.group(0))


def chapter_markdown(name: str) -> str:
    nb = json.loads((ROOT / "book" / f"{name}.ipynb").read_text())
    text = "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    cut = re.search(r"(?m)^## Checking the sources", text)
    return text[:cut.start()] if cut else text


def _without_code(text: str) -> str:
    """Fence lines and the lines of code blocks blanked; a directive's content kept.

    A fence opens a directive (```{dropdown} Title), a code block (```python, ```) or
    closes the innermost open fence of the same length."""
    out, stack = [], []
    for line in text.split("\n"):
        fence = re.match(r"(`{3,}|:{3,})(.*)$", line)
        if fence and stack and fence.group(1) == stack[-1][0] and not fence.group(2).strip():
            stack.pop()
            out.append(" " * len(line))
        elif fence and not any(kind == "code" for _, kind in stack):
            kind = "directive" if fence.group(2).startswith("{") else "code"
            stack.append((fence.group(1), kind))
            out.append(" " * len(line))
        elif any(kind == "code" for _, kind in stack):
            out.append(" " * len(line))
        else:
            out.append(line)
    return "\n".join(out)


def readable(text: str) -> str:
    """The text with everything that is not prose blanked out (positions kept)."""
    t = _without_code(text)
    t = re.sub(r"(?m)^:\w+:.*$", _blank, t)                                   # options
    t = re.sub(r"(?s)<!--.*?-->", _blank, t)
    t = re.sub(r"(?s)\$\$.*?\$\$", _blank, t)
    t = re.sub(r"(?<![\\$])\$[^$\n]+?\$", _blank, t)
    # roles: keep the text a reader sees, blank the role's name and target
    t = re.sub(r"\{\w+\}`([^`<]*?)(\s*<[^>]*>)?`",
               lambda m: " " * (m.start(1) - m.start()) + m.group(1)
               + " " * (m.end() - m.end(1)), t)
    t = re.sub(r"`[^`\n]*`", _blank, t)                                      # inline code
    t = re.sub(r"(?m)^#{1,6} .*$", _blank, t)                                # headings
    t = re.sub(r"\]\([^)]*\)", _blank, t)                                    # link targets
    return t


def _pattern(terms: list[str]) -> re.Pattern:
    alternatives = sorted((re.escape(t).replace(r"\ ", r"[\s-]+") for t in terms),
                          key=len, reverse=True)
    return re.compile(r"(?<![\w-])(?:%s)(?![\w-])" % "|".join(alternatives), re.I)


def _sentence(text: str, at: int) -> tuple[int, int]:
    starts = [m.end() for m in re.finditer(r"[.!?]\s|\n\s*\n|\n[-*] |\n\d+\. ", text[:at])]
    start = starts[-1] if starts else 0
    end = re.search(r"[.!?]\s|\n\s*\n", text[at:])
    return start, at + end.start() if end else len(text)


def first_use_problem(name: str, entry: dict) -> str | None:
    """None when chapter ``name`` follows the rule for ``entry``, else what it does."""
    text = chapter_markdown(name)
    match = _pattern(entry["terms"]).search(readable(text))
    if not match:
        return None
    at, end = match.start(), match.end()
    spellings = {t.lower() for t in entry["terms"]}
    for role in re.finditer(r"\{term\}`([^`<]*?)(?:\s*<([^>]*)>)?`", text):
        if role.start() <= at < role.end():
            target = (role.group(2) or role.group(1)).strip().lower()
            return None if target in spellings else (
                f"{{term}} points to {target!r}, not to this entry")
    for emph in re.finditer(r"(\*\*?)(?=\S)([^*\n]+?)(?<=\S)\1", text):
        if emph.start(2) <= at and end <= emph.end(2):
            return None
    s, e = _sentence(text, at)
    targets = {"glossary", entry["chapter"]}
    for link in re.finditer(r"\{doc\}`[^`<]*<([^>]+)>`|\]\(([^)#]+)", text[s:e]):
        path = (link.group(1) or link.group(2)).split("/")[-1]
        if path.removesuffix(".ipynb").removesuffix(".md") in targets:
            return None
    line = text[max(0, at - 60):end + 40].replace("\n", " ")
    return f"first use {match.group(0)!r} is neither linked nor defined: ...{line}..."


def problems(name: str) -> list[str]:
    found = []
    position = CHAPTERS.index(name)
    for entry in glossary_entries():
        if entry["chapter"] not in CHAPTERS or CHAPTERS.index(entry["chapter"]) <= position:
            continue
        problem = first_use_problem(name, entry)
        if problem and (name, entry["terms"][0]) not in PENDING:
            found.append(f"{entry['terms'][0]} (defined in {entry['chapter']}): {problem}")
    return found


def test_every_entry_names_its_chapter_in_one_line():
    entries = glossary_entries()
    assert len(entries) >= 30, f"only {len(entries)} entries"
    for entry in entries:
        assert entry["chapter"] in CHAPTERS, entry
        assert len(entry["definition"]) <= 320, f"more than a line: {entry['terms']}"
    spellings = [t.lower() for e in entries for t in e["terms"]]
    assert len(spellings) == len(set(spellings)), "a spelling in two entries"


def test_the_glossary_is_in_the_book():
    assert "book/glossary" in toc_entries()


@pytest.mark.parametrize("name", CHAPTERS)
def test_terms_are_defined_or_linked_at_first_use(name):
    found = problems(name)
    assert not found, f"{name}:\n" + "\n".join(found)


@pytest.mark.parametrize("key", sorted(PENDING))
def test_pending_entries_still_fail(key):
    name, term = key
    entry = next(e for e in glossary_entries() if e["terms"][0] == term)
    assert first_use_problem(name, entry), f"{key} now follows the rule: remove it from PENDING"


def test_the_rule_on_examples(tmp_path, monkeypatch):
    """Each way of following the rule passes; a bare first use fails."""
    entry = {"terms": ["batch", "batches"], "chapter": "04_attention", "definition": ""}
    cases = {
        "A {term}`batch` of two sentences.": None,
        "A {term}`batches <batch>` heading.": None,
        "A *batch* is several sequences at once.": None,
        "Stacked ({doc}`chapter 4 <04_attention>`), a batch of two.": None,
        "A batch of two. A {term}`batch` again.": "neither linked nor defined",
        "`batch` in code, then a *batch*.": None,
        "A {term}`padding <padding>` then batch.": "neither linked nor defined",
    }
    for text, want in cases.items():
        monkeypatch.setattr(__import__(__name__), "chapter_markdown", lambda name, t=text: t)
        got = first_use_problem("02_scaling", entry)
        assert (got is None) if want is None else (want in got), (text, got)


if __name__ == "__main__":
    for chapter in CHAPTERS:
        for line in problems(chapter):
            print(chapter, "|", line)

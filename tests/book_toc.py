"""The pages of the book, in `_toc.yml` order (shared by the structure and browser tests)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def toc_entries() -> list[str]:
    """Every `root` and `file` entry of `_toc.yml`, e.g. 'book/intro'."""
    found: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            found.extend(str(node[k]) for k in ("root", "file") if k in node)
            for value in node.values():
                if isinstance(value, (dict, list)):
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    return found

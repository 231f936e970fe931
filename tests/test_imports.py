"""The package's imports read bottom-up: every module sits on a floor, and imports
only modules on floors below its own; so no import circle is possible.

How it checks: every ``.py`` file under ``mini_transformer/`` is parsed with ``ast``
(never imported), and every ``import`` / ``from ... import`` in it, at the top or
inside a function, that names a module of the package becomes an arrow (``from .x
import y`` is an arrow to ``x``, or to ``x.y`` when that is a module). An arrow to
the same or a higher floor fails the test, and so does a module no floor lists. A
cycle search over the same arrows is run too, so that a circle is named as one.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mini_transformer"

# Bottom first. A module may import the modules of the floors below it, never one of
# its own floor or above.
FLOORS = [
    # no import of the package: checks, the parameter-tree walker, data,
    # positions, tokens
    ["_checks", "_ops", "tree", "positional", "bpe", "batching",
     "number_words.data"],
    # one idea each, on arrays; the toy tasks
    ["softmax", "layernorm", "feedforward", "dropout", "checkpoint", "rmsnorm", "rotary",
     "swiglu", "tasks"],
    ["row_blocks"],           # the softmax's NumPy fast path
    ["attention", "loss", "optim", "params", "sampling"],
    ["multihead", "tiled", "grouped_query",
     "torch.convert",         # params to and from torch.nn (the containers, torch)
     "residual"],             # LN(x + Sublayer(x)), the sub-layer every layer repeats
    ["encoder", "decoder"],
    ["transformer"],          # the whole model, its loss and gradients
    ["decoding", "lm"],       # greedy and beam search; the decoder-only model
    ["translation"],          # texts in, texts out, scores
    # the experiment, outside the equations
    ["number_words.files", "number_words.normalize", "pydoc_lm.data", "pydoc_lm.files"],
    ["number_words.train", "number_words.translator", "pydoc_lm.baselines",
     "pydoc_lm.score"],
    ["number_words.cli", "pydoc_lm.train"],
    ["number_words.__main__", "number_words", "pydoc_lm.cli"],
    ["pydoc_lm.__main__", "pydoc_lm"],
    ["torch.modules"],        # nn.Module wrappers
    ["torch"],
    [""],                     # mini_transformer/__init__.py
]
FLOOR = {name: i for i, names in enumerate(FLOORS) for name in names}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def arrows(name: str, path: Path, known) -> set:
    """The package modules ``name`` imports."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    package = [p for p in package if p]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):  # absolute: ``import torch`` is not ours
            targets = [a.name.removeprefix("mini_transformer").strip(".")
                       for a in node.names if a.name.split(".")[0] == "mini_transformer"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
            elif (node.module or "").split(".")[0] == "mini_transformer":
                base = []
            else:
                continue
            module = (node.module or "").split(".")
            if module[0] == "mini_transformer":
                module = module[1:]
            base = ".".join([*base, *[m for m in module if m]])
            targets = [f"{base}.{a.name}".strip(".") for a in node.names]
            targets = [t if t in known else base for t in targets]
        else:
            continue
        for t in targets:
            if t in known and t != name:
                out.add(t)
    return out


def graph() -> dict:
    found = modules()
    return {name: arrows(name, path, found) for name, path in found.items()}


def test_every_module_has_a_floor():
    assert sorted(set(modules()) - set(FLOOR)) == []
    assert sorted(set(FLOOR) - set(modules())) == []


def test_imports_point_down():
    g = graph()
    upward = [f"{a} (floor {FLOOR[a]}) imports {b} (floor {FLOOR[b]})"
              for a, targets in g.items() for b in sorted(targets)
              if FLOOR[b] >= FLOOR[a]]
    assert upward == [], "\n".join(upward)


def test_no_import_cycle():
    g, state, cycles = graph(), {}, []

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(g[node]):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join([*stack[stack.index(nxt):], nxt]))
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = "done"

    for node in sorted(g):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_the_checker_sees_an_upward_arrow(tmp_path):
    """The arrows are found: the known ones of a few modules, and an import inside
    a function."""
    g = graph()
    assert {"transformer", "decoder", "softmax"} <= g["decoding"]
    assert "checkpoint" in g["params"] and "params" not in g["checkpoint"]
    assert "params" in g["torch.convert"] and "torch.convert" not in g["params"]
    fake = tmp_path / "layernorm.py"
    fake.write_text("def f():\n    from .transformer import embed\n")
    assert arrows("layernorm", fake, set(FLOOR)) == {"transformer"}

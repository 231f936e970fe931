"""Every refused input raises a ValueError with a useful message; every accepted
edge case gives its documented answer. The cases are data in refused_cases.py,
which also writes book/appendix_refused_inputs.md; a test keeps the two in sync.
"""

import importlib
import re
import warnings
from pathlib import Path

import pytest

import mini_transformer
import refused_cases as rc

PACKAGE = Path(mini_transformer.__file__).resolve().parent


@pytest.fixture(scope="module")
def ns():
    return rc.namespace()


@pytest.mark.parametrize("case", rc.REFUSED, ids=[c.id for c in rc.REFUSED])
def test_refused(case, ns):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused cleanly, not after a RuntimeWarning
        with pytest.raises(ValueError, match=re.escape(case.expect)) as info:
            eval(case.call, ns)
    # raised by the package's own checks, not deep inside NumPy or torch
    raised_in = Path(info.traceback[-1].path).resolve()
    assert PACKAGE in raised_in.parents, raised_in


@pytest.mark.parametrize("edge", rc.EDGE_CASES, ids=[e.id for e in rc.EDGE_CASES])
def test_edge_case(edge, ns):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # inf - inf in the +inf case
        value = eval(edge.call, ns)
    assert rc.matches(value, edge.expect), (edge.call, value)


def test_ids_are_unique_and_every_category_is_covered():
    ids = [c.id for c in rc.REFUSED] + [e.id for e in rc.EDGE_CASES]
    assert len(ids) == len(set(ids))
    assert {c.category for c in rc.REFUSED} == set(rc.CATEGORIES)


def test_edge_cases_name_existing_tests():
    for edge in rc.EDGE_CASES:
        assert edge.tests, edge.id
        for node in edge.tests:
            module, name = node.split("::")
            assert hasattr(importlib.import_module(module.removesuffix(".py")), name), node


def test_appendix_page_is_in_sync():
    # regenerate with: .venv/bin/python tests/refused_cases.py
    assert rc.PAGE.read_text() == rc.render_page()

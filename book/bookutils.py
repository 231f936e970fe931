"""Helpers the chapters share for what they show, not for the math (that is in
``mini_transformer``). Imported by the notebooks, which run with ``book/`` as their
working directory: ``from bookutils import glue``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Integral, Real

from myst_nb import glue as _myst_glue

SIGNIFICANT_DIGITS = 8


def portable(value, digits: int = SIGNIFICANT_DIGITS):
    """``value`` as it may be stored in a notebook: the same on every CPU.

    A float is rounded to ``digits`` significant digits (8 by default, more than
    any sentence of the book shows): CPUs with other SIMD kernels (``exp``,
    ``arccos``) or other BLAS summation orders differ in a float's last bits, and
    a stored last bit would fail nbval on the next machine. Exact values stay
    exact: integers, bools, strings, ``Fraction``s, and floats whose value is an
    integer below 2**53.
    """
    if isinstance(value, (bool, str, Fraction, Integral)) or value is None:
        return value
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:  # NumPy/torch scalar
        return portable(value.item(), digits)
    if isinstance(value, Real):
        x = float(value)
        if not math.isfinite(x) or (x.is_integer() and abs(x) < 2**53):
            return x + 0.0  # + 0.0: no -0.0
        return float(f"{x:.{digits}g}") + 0.0
    raise TypeError(f"glue a number, a bool or a string, got {type(value).__name__}")


def glue(name: str, value, display: bool = False, digits: int = SIGNIFICANT_DIGITS):
    """Store ``value`` under ``name`` for the prose, made ``portable`` first.

    The prose writes the number as text followed by ``<!--glue:name:.2f-->``;
    ``book/prose.py`` checks (and with ``--sync`` rewrites) that text against the stored
    value, which nbval checks against what the cell computes. The stored value is the
    same on every CPU.
    """
    _myst_glue(name, portable(value, digits), display=display)

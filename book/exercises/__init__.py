"""Checkers for the chapters' exercises.

Each chapter's module (``exercises/ch04.py`` for chapter 4, ...) has one function per
exercise with a computable answer, ``check_2(answer)`` for exercise 2. It returns a
``Verdict``: right, or the likely mistake named ("rows and columns swapped: you returned
the transpose"), never the solution. In a notebook::

    from exercises import ch04
    c = ...            # your answer
    ch04.check_2(c)

While the answer is still ``...`` (or ``None``) the checker says so and nothing fails.
This module holds what the chapters' checkers share: comparing a number, an array or a
function with the expected one, and recognising mistakes given as wrong answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np


@dataclass(frozen=True)
class Verdict:
    """The outcome of a check: ``ok`` (None while unanswered), a message, the mistake's key."""

    ok: bool | None
    message: str
    mistake: str | None = None

    def __repr__(self) -> str:
        return self.message

    def __bool__(self) -> bool:
        return bool(self.ok)


@dataclass(frozen=True)
class Mistake:
    """A likely wrong answer and what to say when the reader's answer equals it."""

    key: str
    wrong: object  # the wrong answer itself, or a function answer -> bool
    message: str


def right(message: str = "") -> Verdict:
    return Verdict(True, "Right." + (f" {message}" if message else ""))


def wrong(message: str, mistake: str | None = None) -> Verdict:
    return Verdict(False, f"Not yet: {message}", mistake)


UNANSWERED = Verdict(
    None, "No answer yet: replace the ... with your answer and run this cell again."
)


def unanswered(answer) -> bool:
    return answer is None or answer is Ellipsis


def _as_array(answer):
    if hasattr(answer, "detach"):  # a torch tensor
        answer = answer.detach().cpu().numpy()
    try:
        return np.asarray(answer, dtype=float)
    except (TypeError, ValueError):
        return None


def _close(a, b, rtol, atol) -> bool:
    b = np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _matches(answer, mistake: Mistake, rtol, atol) -> bool:
    if callable(mistake.wrong):
        return bool(mistake.wrong(answer))
    return _close(answer, mistake.wrong, rtol, atol)


def check_value(
    answer,
    expected,
    *,
    what: str = "your answer",
    mistakes: Sequence[Mistake] = (),
    rtol: float = 1e-6,
    atol: float = 1e-9,
    praise: str = "",
) -> Verdict:
    """Compare a number or an array with ``expected``; name a listed mistake if it is one.

    Without a listed mistake, a wrong shape, a transposed matrix, NaN or infinity, and a
    wrong value are told apart (the message never shows the expected entries).
    """
    if unanswered(answer):
        return UNANSWERED
    a = _as_array(answer)
    if a is None:
        return wrong(f"{what} should be a number or an array, got {type(answer).__name__}.")
    e = np.asarray(expected, dtype=float)
    if _close(a, e, rtol, atol):
        return right(praise)
    for m in mistakes:
        if _matches(a, m, rtol, atol):
            return wrong(m.message, m.key)
    if not np.all(np.isfinite(a)):
        return wrong(f"{what} holds NaN or infinity.", "not-finite")
    if a.shape != e.shape:
        if e.ndim == 2 and a.shape == e.T.shape and _close(a, e.T, rtol, atol):
            return wrong("rows and columns swapped: you returned the transpose.", "transposed")
        return wrong(f"{what} has shape {a.shape}; the answer's shape is {e.shape}.", "shape")
    if e.ndim == 2 and e.shape[0] == e.shape[1] and _close(a, e.T, rtol, atol):
        return wrong("rows and columns swapped: you returned the transpose.", "transposed")
    if e.ndim == 0:
        return wrong(f"{what} is off: {a.item():.6g} is not it.", "value")
    err = float(np.max(np.abs(a - e)))
    n_bad = int(np.sum(~np.isclose(a, e, rtol=rtol, atol=atol)))
    return wrong(
        f"{n_bad} of {e.size} entries differ, by up to {err:.3g}.", "value"
    )


def check_function(
    fn: Callable,
    cases: Sequence[tuple[tuple, object]],
    *,
    what: str = "your function",
    mistakes: Sequence[Mistake] = (),
    rtol: float = 1e-6,
    atol: float = 1e-9,
    praise: str = "",
) -> Verdict:
    """Call ``fn(*args)`` on each case and compare with the case's expected result.

    A ``Mistake`` here compares with the wrong function's result on the first case that
    fails (its ``wrong`` is a function of the same arguments).
    """
    if unanswered(fn):
        return UNANSWERED
    if not callable(fn):
        return wrong(f"{what} should be a function, got {type(fn).__name__}.")
    for args, expected in cases:
        try:
            got = fn(*args)
        except NotImplementedError:
            return UNANSWERED
        except Exception as exc:  # the reader's code: say what it raised
            return wrong(f"{what} raised {type(exc).__name__}: {exc}", "raises")
        if isinstance(got, tuple) and not isinstance(expected, tuple):
            got = got[0]
        listed = [Mistake(m.key, m.wrong(*args), m.message) for m in mistakes]
        verdict = check_value(got, expected, what=f"{what}'s result", mistakes=listed,
                              rtol=rtol, atol=atol)
        if not verdict.ok:
            return verdict
    return right(praise)

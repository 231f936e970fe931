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
function with the expected one, recognising mistakes given as wrong answers, and answers
in several parts (``check_parts`` for a dict, ``check_each`` for a list of ``Part``s).
A function answer can be held to the package: ``check_function(..., own_work=...)``
refuses a function that hands back torch's result (a torch tensor, or a call of torch's
attention, softmax, LayerNorm, modules or autograd) instead of computing it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np


@dataclass(frozen=True)
class Verdict:
    """The outcome of a check: ``ok`` (None while unanswered), a message, a mistake."""

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
    """Compare a number or an array with ``expected``; name a listed mistake if any.

    Without a listed mistake, a wrong shape, a transposed matrix, NaN or infinity, and a
    wrong value are told apart (the message never shows the expected entries).
    """
    if unanswered(answer):
        return UNANSWERED
    a = _as_array(answer)
    if a is None:
        kind = type(answer).__name__
        return wrong(f"{what} should be a number or an array, got {kind}.")
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
            return wrong("rows and columns swapped: you returned the transpose.",
                         "transposed")
        return wrong(f"{what} has shape {a.shape}, which is not the answer's shape: "
                     "check what each axis stands for.", "shape")
    if e.ndim == 2 and e.shape[0] == e.shape[1] and _close(a, e.T, rtol, atol):
        return wrong("rows and columns swapped: you returned the transpose.",
                     "transposed")
    if e.ndim == 0:
        return wrong(f"{what} is off: {a.item():.6g} is not it.", "value")
    n_bad = int(np.sum(~np.isclose(a, e, rtol=rtol, atol=atol)))
    return wrong(f"{n_bad} of {e.size} entries differ from the answer's.", "value")


# torch's own versions of what the chapters compute: a function under check that calls
# one of them hands back the reference library's result instead of computing it.
TORCH_REFERENCES = (
    ("torch.nn.functional", "scaled_dot_product_attention"),
    ("torch.nn.functional", "multi_head_attention_forward"),
    ("torch.nn.functional", "softmax"),
    ("torch.nn.functional", "layer_norm"),
    ("torch", "softmax"),
    ("torch", "layer_norm"),
    ("torch.Tensor", "softmax"),
    ("torch.nn.Module", "__call__"),
    ("torch.autograd", "grad"),
    ("torch.Tensor", "backward"),
)


def _is_torch(value) -> bool:
    return type(value).__module__.split(".")[0] == "torch"


@contextlib.contextmanager
def watching_torch():
    """Within the block, record the calls of ``TORCH_REFERENCES`` (a list of names).

    torch is imported first if it is installed, so that a function importing it inside
    is watched too; the originals are restored on leaving the block.
    """
    called: list[str] = []
    if importlib.util.find_spec("torch") is None:
        yield called
        return
    import torch  # noqa: F401  (the attributes below live in its modules)

    saved = []
    for module_name, name in TORCH_REFERENCES:
        owner = {"torch.Tensor": torch.Tensor, "torch.nn.Module": torch.nn.Module}.get(
            module_name) or importlib.import_module(module_name)
        original = getattr(owner, name, None)
        if original is None:
            continue

        def spy(*args, _original=original, _name=f"{module_name}.{name}", **kwargs):
            called.append(_name)
            return _original(*args, **kwargs)

        saved.append((owner, name, original, name in vars(owner)))
        setattr(owner, name, spy)
    try:
        yield called
    finally:
        for owner, name, original, own in reversed(saved):
            if own:
                setattr(owner, name, original)
            else:                     # inherited: remove the spy, inherit again
                delattr(owner, name)


def _refused(what: str, own_work: str, got, called) -> Verdict | None:
    """A wrong verdict when a function answer used torch's result, else None."""
    if called:
        name = called[0].replace("torch.nn.Module.__call__", "a torch.nn module's forward")
        return wrong(f"{what} calls torch ({name}): the exercise is to compute it with "
                     f"{own_work}, not to hand back the reference library's result.",
                     "reference-library")
    if _is_torch(got) or (isinstance(got, tuple) and any(map(_is_torch, got))):
        return wrong(f"{what} returns a torch tensor: compute it with {own_work} on "
                     "NumPy arrays, as the chapter does.", "reference-library")
    return None


def check_function(
    fn: Callable,
    cases: Sequence[tuple[tuple, object]],
    *,
    what: str = "your function",
    mistakes: Sequence[Mistake] = (),
    rtol: float = 1e-6,
    atol: float = 1e-9,
    praise: str = "",
    own_work: str | None = None,
    tensors_ok: bool = False,
) -> Verdict:
    """Call ``fn(*args)`` on each case and compare with the case's expected result.

    A ``Mistake`` here compares with the wrong function's result on the first case that
    fails (its ``wrong`` is a function of the same arguments). With ``own_work`` (what
    the reader should compute with, e.g. "the package's mt.encoder"), a function that
    returns a torch tensor or calls torch's own attention, softmax, LayerNorm, modules
    or autograd is refused, whatever it returns; a torch tensor returned is refused too,
    unless ``tensors_ok`` (the package's own result, handed back as a tensor).
    """
    if unanswered(fn):
        return UNANSWERED
    if not callable(fn):
        return wrong(f"{what} should be a function, got {type(fn).__name__}.")
    for args, expected in cases:
        called: list[str] = []
        try:
            with (watching_torch() if own_work else contextlib.nullcontext([])) as called:
                got = fn(*args)
        except NotImplementedError:
            return UNANSWERED
        except Exception as exc:  # the reader's code: say what it raised
            if own_work and called:
                return _refused(what, own_work, None, called)
            return wrong(f"{what} raised {type(exc).__name__}: {exc}", "raises")
        if own_work:
            refused = _refused(what, own_work, None if tensors_ok else got, called)
            if refused is not None:
                return refused
        if isinstance(got, tuple) and not isinstance(expected, tuple):
            got = got[0]
        listed = [Mistake(m.key, m.wrong(*args), m.message) for m in mistakes]
        verdict = check_value(got, expected, what=f"{what}'s result", mistakes=listed,
                              rtol=rtol, atol=atol)
        if not verdict.ok:
            return verdict
    return right(praise)


def check_parts(
    answer,
    expected: Mapping[str, object],
    *,
    mistakes: Mapping[str, Sequence[Mistake]] | None = None,
    whole: Sequence[tuple[str, Callable[[dict], bool], str]] = (),
    rtol: float | Mapping[str, float] = 1e-6,
    atol: float | Mapping[str, float] = 1e-9,
    fallback: Callable[[str, object], str] | None = None,
    praise: str = "",
) -> Verdict:
    """Check an answer given as a dict, one value per key of ``expected``.

    ``mistakes[key]`` are the likely mistakes in one part; ``whole`` holds
    ``(key, predicate, message)`` for mistakes that involve several parts (tried first,
    on the filled parts). ``rtol`` and ``atol`` may be given per key, as a dict.
    ``fallback(key, value)`` words a wrong part (value or shape) that no mistake names.
    Parts still ``...`` are left for later: the verdict is ``None`` until all are
    filled.
    """
    if unanswered(answer):
        return UNANSWERED
    if not isinstance(answer, Mapping):
        return wrong(f"give the dict of the answer cell (keys {', '.join(expected)}), "
                     f"not a {type(answer).__name__}.", "not-a-dict")
    missing = [k for k in expected if k not in answer]
    if missing:
        names = ", ".join(map(repr, missing))
        return wrong(f"the answer has no {names}: keep the keys of the answer cell.",
                     "keys")
    todo = [k for k in expected if unanswered(answer[k])]
    if len(todo) == len(expected):
        return UNANSWERED
    filled = {k: answer[k] for k in expected if k not in todo}
    def tol(t, k):
        return t[k] if isinstance(t, Mapping) else t

    results = {k: check_value(v, expected[k], what=repr(k),
                              mistakes=(mistakes or {}).get(k, ()),
                              rtol=tol(rtol, k), atol=tol(atol, k))
               for k, v in filled.items()}
    if not all(v.ok for v in results.values()):
        for key, predicate, message in whole:
            try:
                hit = predicate(filled)
            except (KeyError, TypeError, ValueError):
                hit = False
            if hit:
                return wrong(message, key)
    for k, v in results.items():
        if not v.ok:
            text = v.message.removeprefix("Not yet: ")
            if v.mistake in ("value", "shape") and fallback is not None:
                text = fallback(k, filled[k])
            return wrong(f"{k!r}: {text}", v.mistake)
    if todo:
        return Verdict(None, f"Right so far ({', '.join(map(repr, filled))}); still to "
                             f"fill in: {', '.join(map(repr, todo))}.")
    return right(praise)


@dataclass(frozen=True)
class Part:
    """One named part of an answer, what it should be, and its likely mistakes."""

    what: str
    answer: object
    expected: object
    mistakes: Sequence[Mistake] = ()
    rtol: float = 1e-6
    atol: float = 1e-9


def check_each(*parts: Part, praise: str = "") -> Verdict:
    """Check the parts in order and stop at the first wrong one.

    Parts still ``...`` are left for later: right so far, but no verdict until all are
    filled in. All of them ``...``: unanswered.
    """
    if all(unanswered(p.answer) for p in parts):
        return UNANSWERED
    for p in parts:
        if unanswered(p.answer):
            continue
        verdict = check_value(p.answer, p.expected, what=p.what, mistakes=p.mistakes,
                              rtol=p.rtol, atol=p.atol)
        if not verdict.ok:
            return verdict
    missing = [p.what for p in parts if unanswered(p.answer)]
    if missing:
        return Verdict(None, f"Right so far. No answer yet for {', '.join(missing)}: "
                             "replace the ... and run this cell again.")
    return right(praise)

"""Input checks shared by every equation.

Each public function validates its inputs here, so a bad call fails with a
``ValueError`` that names the offending shapes or values instead of a bare
NumPy/torch traceback or, worse, a silently wrong answer.
"""

from __future__ import annotations

import math

from array_api_compat import array_namespace, device, is_array_api_obj


def _kind(a) -> str:
    return f"{type(a).__module__.split('.')[0]}.{type(a).__name__}"


def namespace(*arrays, names: tuple[str, ...] | None = None):
    """The array namespace shared by ``arrays``, checked to be one library,
    one device and one floating dtype.

    Raises ``ValueError`` for mixed libraries (NumPy with torch), mixed devices,
    mixed dtypes or non-floating input; ``None`` entries are skipped.
    """
    names = names or tuple(f"argument {i}" for i in range(len(arrays)))
    pairs = [(n, a) for n, a in zip(names, arrays) if a is not None]
    for n, a in pairs:
        if not is_array_api_obj(a):
            raise ValueError(
                f"{n} must be an array (NumPy or torch), got {type(a).__name__}"
            )
    try:
        xp = array_namespace(*(a for _, a in pairs))
    except TypeError:
        kinds = ", ".join(f"{n}: {_kind(a)}" for n, a in pairs)
        raise ValueError(
            f"inputs mix array libraries ({kinds}); convert them all to one "
            "library (e.g. torch.as_tensor) first"
        ) from None
    first_n, first = pairs[0]
    for n, a in pairs:
        if not xp.isdtype(a.dtype, "real floating"):
            raise ValueError(f"{n} must have a real floating dtype, got {a.dtype}")
        if a.dtype != first.dtype:
            raise ValueError(
                f"dtype mismatch: {first_n} is {first.dtype} but {n} is {a.dtype}; "
                "cast them to one dtype"
            )
        if device(a) != device(first):
            raise ValueError(
                f"device mismatch: {first_n} is on {device(first)} but {n} is on "
                f"{device(a)}; move them to one device"
            )
    return xp


def rank_at_least(a, ndim: int, name: str, layout: str) -> None:
    if a.ndim < ndim:
        raise ValueError(
            f"{name} must have rank >= {ndim} with shape {layout}, got shape "
            f"{tuple(a.shape)}"
        )


def non_empty(n: int, name: str, shape) -> None:
    if n == 0:
        raise ValueError(f"{name} is an empty sequence (shape {tuple(shape)})")


def same(a: int, b: int, what: str) -> None:
    if a != b:
        raise ValueError(what)


def positive_temperature(temperature) -> float:
    """``temperature`` as a float, checked to be a real number > 0 (``inf`` allowed)."""
    try:
        if getattr(temperature, "ndim", 0) != 0 or isinstance(temperature, (str, bytes)):
            raise TypeError
        t = float(temperature)
    except (TypeError, ValueError, RuntimeError, NotImplementedError):
        raise ValueError(
            f"temperature must be a real number > 0, got {temperature!r}"
        ) from None
    if math.isnan(t) or t <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    return t


def axis_length(a, axis: int, name: str) -> int:
    """The length of ``a`` along ``axis``, checked to exist and be non-zero."""
    if not -a.ndim <= axis < a.ndim:
        raise ValueError(
            f"axis {axis} is out of range for {name} of shape {tuple(a.shape)}"
        )
    n = a.shape[axis]
    if n == 0:
        raise ValueError(
            f"{name} is empty along axis {axis} (shape {tuple(a.shape)}): "
            "there is nothing to normalise"
        )
    return n


def broadcast_shape(a: tuple, b: tuple):
    """NumPy broadcasting of two shapes, or ``None`` if they do not broadcast."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(y if x == 1 else x)
    return tuple(reversed(out))

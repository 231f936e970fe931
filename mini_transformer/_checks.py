"""Input checks shared by every equation.

Each public function validates its inputs here, so a bad call fails with a
``ValueError`` that names the offending shapes or values instead of a bare
NumPy/torch traceback or, worse, a silently wrong answer.

The checks run at the door: ``at_door(check)`` runs ``check`` when a user calls
the function, and skips it when the call comes from inside another checked call
(``encoder_layer`` calling ``multi_head_attention``, a backward calling its
forward's kernels), whose door checked the same arrays already.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import math

import numpy as np

from array_api_compat import array_namespace, device, is_array_api_obj

_inside = contextvars.ContextVar("inside_a_checked_call", default=False)


def at_door(check):
    """Decorator: ``check(**arguments)`` before a call from outside the package;
    no check inside a call that was checked at its own door.

    ``check`` receives every argument of the decorated function by name, defaults
    filled in (it may take ``**_`` for those it does not read).
    """
    def decorate(f):
        signature = inspect.signature(f)

        @functools.wraps(f)
        def door(*args, **kwargs):
            if _inside.get():
                return f(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            check(**bound.arguments)
            token = _inside.set(True)
            try:
                return f(*args, **kwargs)
            finally:
                _inside.reset(token)
        return door
    return decorate


def kind(a) -> str:
    """The library and type of ``a``, as error messages name it: ``numpy.ndarray``."""
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
        kinds = ", ".join(f"{n}: {kind(a)}" for n, a in pairs)
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


def features(a, d_model: int, name: str) -> None:
    """``a`` checked to be a non-empty sequence (..., n, d_model) of d_model features.
    """
    rank_at_least(a, 2, name, "(..., n, d_model)")
    non_empty(a.shape[-2], name, a.shape)
    same(a.shape[-1], d_model,
         f"{name} has {a.shape[-1]} features but the weights expect d_model={d_model} "
         f"(shape {tuple(a.shape)})")


def normalisation(x, vectors: dict, grad_output=None) -> None:
    """A normalisation's input x (..., d), its per-feature ``vectors`` ({"gamma": γ,
    "beta": β}, each (d,) or None) and a gradient of x's shape."""
    namespace(x, *vectors.values(), grad_output,
              names=("x", *vectors, "grad_output"))
    rank_at_least(x, 1, "x", "(..., d_model)")
    non_empty(x.shape[-1], "the feature axis of x", x.shape)
    for name, a in vectors.items():
        if a is not None:
            same(tuple(a.shape), (x.shape[-1],), f"{name} must have shape "
                 f"({x.shape[-1]},) to match x {tuple(x.shape)}, got {tuple(a.shape)}")
    if grad_output is not None:
        same(tuple(grad_output.shape), tuple(x.shape), "grad_output must have x's "
             f"shape {tuple(x.shape)}, got {tuple(grad_output.shape)}")


def dropout_masks(x, masks, count: int, name: str = "x") -> None:
    """``masks``: None (no dropout) or ``count`` dropout masks, one per sub-layer, each
    None or of x's shape (the sub-layer's output, of x's shape, is multiplied by it:
    a mask of another shape would broadcast silently)."""
    if masks is None:
        return
    if len(masks) != count:
        raise ValueError(f"masks must hold {count} dropout masks, one per sub-layer, "
                         f"got {len(masks)}")
    for i, m in enumerate(masks):
        if m is not None:
            namespace(x, m, names=(name, f"dropout mask {i}"))
            same(tuple(m.shape), tuple(x.shape), f"dropout mask {i} must have {name}'s "
                 f"shape {tuple(x.shape)}, got {tuple(m.shape)}")


def mask_broadcasts(mask, target: tuple, name: str, layout: str) -> None:
    """Refuse, in the caller's terms, a mask that does not broadcast to ``target``."""
    if mask is None:
        return
    shape = tuple(mask.shape) if hasattr(mask, "shape") else tuple(np.shape(mask))
    if broadcast_shape(shape, target) != target:
        raise ValueError(
            f"{name} of shape {shape} does not broadcast to {layout} = {target}"
        )


def batch_axes(a, b, a_name: str, b_name: str) -> tuple:
    """The broadcast batch axes (all but the last two) of ``a`` and ``b``."""
    batch = broadcast_shape(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    if batch is None:
        raise ValueError(
            f"the batch axes of {a_name} {tuple(a.shape)} "
            f"and {b_name} {tuple(b.shape)} "
            "do not broadcast"
        )
    return batch


def qkv_sizes(q, k, v, grad_output=None, rank: int = 2,
              layout: str = "(..., n, d)") -> None:
    """Refuse q, k, v of another library, device or dtype than each other, of a rank
    below ``rank``, empty, or whose d_k or n_k differ (the checks every attention
    shares; the batch and head axes are each attention's own)."""
    namespace(q, k, v, grad_output, names=("q", "k", "v", "grad_output"))
    for name, a in (("q", q), ("k", k), ("v", v)):
        rank_at_least(a, rank, name, layout)
    same(q.shape[-1], k.shape[-1], "q and k must share the feature size d_k: "
         f"q {tuple(q.shape)}, k {tuple(k.shape)}")
    same(k.shape[-2], v.shape[-2], "k and v must have the same length n_k: "
         f"k {tuple(k.shape)}, v {tuple(v.shape)}")
    non_empty(q.shape[-2], "q", q.shape)
    non_empty(k.shape[-2], "k", k.shape)
    non_empty(q.shape[-1], "the feature axis of q", q.shape)


def check_qkv(q, k, v, grad_output=None, **_):
    """Refuse attention's q, k, v (and a gradient of its output) that do not fit
    together."""
    qkv_sizes(q, k, v, grad_output)
    qk = broadcast_shape(tuple(q.shape[:-2]), tuple(k.shape[:-2]))
    if qk is None:
        raise ValueError(f"leading (batch/head) axes of q {tuple(q.shape)} and k "
                         f"{tuple(k.shape)} do not broadcast")
    batch = broadcast_shape(qk, tuple(v.shape[:-2]))
    if batch is None:
        raise ValueError(f"leading (batch/head) axes of q {tuple(q.shape)}, k "
                         f"{tuple(k.shape)} and v {tuple(v.shape)} do not broadcast")
    out = (*batch, q.shape[-2], v.shape[-1])
    if grad_output is not None:
        same(tuple(grad_output.shape), out, "grad_output must have the "
             f"output's shape {out}, got {tuple(grad_output.shape)}")


def same(a: int, b: int, what: str) -> None:
    if a != b:
        raise ValueError(what)


def positive_temperature(temperature) -> float:
    """``temperature`` as a float, checked to be a real number > 0 (``inf`` allowed)."""
    try:
        if getattr(temperature, "ndim", 0) != 0 or isinstance(
            temperature, (str, bytes)
        ):
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

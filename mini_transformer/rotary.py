"""Rotary position embedding, RoPE (chapter 19): positions as rotations of q and k."""

from __future__ import annotations

import numpy as np
from array_api_compat import array_namespace, device, is_array_api_obj, is_torch_array

from . import _checks


def _check_forward(x, positions, base=10000.0, **_):
    _check(x, positions, base, "x")


def _check_backward(grad_output, positions, base=10000.0, **_):
    _check(grad_output, positions, base, "grad_output")


@_checks.at_door(_check_forward)
def rotary_embedding(x, positions, base: float = 10000.0):
    """RoPE(x)_pos: each feature pair (x_2i, x_2i+1) of row pos turned by pos · ω_i.

    ω_i = base^(−2i/d), i = 0, ..., d/2 − 1, d = x.shape[-1] (even), as RoFormer:

        y_2i   = x_2i cos(pos ω_i) − x_2i+1 sin(pos ω_i)
        y_2i+1 = x_2i sin(pos ω_i) + x_2i+1 cos(pos ω_i)

    x: (..., n, d), queries or keys of one head (or of every head)
    positions: (n,) or broadcast to x.shape[:-1], integer or real; NumPy or
    a list welcome with torch x. The angles are computed in float64.
    """
    return _rotate(x, _positions(positions, x), base, array_namespace(x))


@_checks.at_door(_check_backward)
def rotary_embedding_backward(grad_output, positions, base: float = 10000.0):
    """The gradient of RoPE: each pair is turned back by the opposite angle.

    RoPE multiplies each pair by a rotation R(θ), θ = pos ω_i; R is orthogonal and
    R(θ)ᵀ = R(−θ), so ∂L/∂x = ∂L/∂y turned by −pos ω_i: the forward itself, with
    −positions.
    """
    return _rotate(grad_output, -_positions(positions, grad_output), base,
                   array_namespace(grad_output))


def rotary_angles(positions, d: int, base: float = 10000.0):
    """θ[..., pos, i] = pos · base^(−2i/d), float64 NumPy: what RoPE turns pair i by."""
    if not isinstance(d, (int, np.integer)) or d < 2 or d % 2:
        raise ValueError(f"d must be an even integer >= 2, got {d!r}")
    omega = base ** (-np.arange(0, d, 2) / d)                  # (d/2,) ω_i
    return np.asarray(positions, dtype=np.float64)[..., None] * omega


def _rotate(x, pos, base, xp):
    d = x.shape[-1]
    i = xp.arange(d // 2, dtype=xp.float64, device=device(x))
    omega = base ** (-2 * i / d)                               # (d/2,)
    theta = pos[..., None] * omega                             # (..., n, d/2)
    cos = xp.astype(xp.cos(theta), x.dtype)
    sin = xp.astype(xp.sin(theta), x.dtype)
    pairs = xp.reshape(x, (*x.shape[:-1], d // 2, 2))          # (..., n, d/2, 2)
    even, odd = pairs[..., 0], pairs[..., 1]
    turned = xp.stack([even * cos - odd * sin, even * sin + odd * cos], axis=-1)
    return xp.reshape(turned, x.shape)                         # (..., n, d)


def _positions(positions, x):
    """positions as float64 in x's library and on its device."""
    if is_torch_array(positions):
        import torch

        return positions.to(torch.float64)
    arr = np.asarray(positions, dtype=np.float64)
    if is_torch_array(x):
        import torch

        return torch.as_tensor(arr, device=x.device)
    return arr


def _check(x, positions, base, name):
    """Refuse an x without an even feature axis, a base <= 0, and positions that are
    not integer or real, not on x's device or not one per row of x."""
    _checks.namespace(x, names=(name,))
    _checks.rank_at_least(x, 2, name, "(..., n, d)")
    d = x.shape[-1]
    if d == 0 or d % 2:
        raise ValueError(
            f"rotary_embedding turns pairs of features: the last axis of x must "
            f"have an even, non-zero length, got {d} (shape {tuple(x.shape)})")
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not base > 0:
        raise ValueError(f"base must be a number > 0, got {base!r}")
    if is_torch_array(positions):
        if not is_torch_array(x):
            raise ValueError("torch positions cannot be used with NumPy inputs")
        if positions.device != x.device:
            raise ValueError(
                f"device mismatch: positions are on {positions.device} but x is on "
                f"{x.device}; move them (or pass NumPy positions)")
        import torch

        if positions.dtype == torch.bool or positions.is_complex():
            raise ValueError(
                f"positions must be integer or real, got {positions.dtype}")
    else:
        if is_array_api_obj(positions) and not isinstance(positions, np.ndarray):
            raise ValueError(f"positions must be NumPy, a list or x's library, got "
                             f"{type(positions).__name__}")
        arr = np.asarray(positions)
        if arr.dtype == bool or arr.dtype.kind not in "iuf":
            raise ValueError(
                f"positions must be integer or real, got dtype {arr.dtype}")
    pos = _positions(positions, x)
    shape = tuple(pos.shape)
    target = tuple(x.shape[:-1])
    if _checks.broadcast_shape(shape, target) != target:
        raise ValueError(
            f"positions of shape {shape} do not broadcast to x's rows {target} "
            f"(..., n): give one position per row")
    if is_torch_array(pos):
        import torch

        finite = bool(torch.isfinite(pos).all())
    else:
        finite = bool(np.isfinite(pos).all())
    if not finite:
        raise ValueError("positions must be finite")

"""Softmax, the Boltzmann distribution of the scores (chapter 3)."""

from __future__ import annotations

import math

from . import _checks


def softmax(x, axis: int = -1, temperature: float = 1.0):
    """softmax(x)_i = exp(x_i / T) / Σ_j exp(x_j / T), along ``axis``.

    Stable: the row maximum is subtracted first, so no ``exp`` overflows.
    A row that is all ``-inf`` (every key masked) gives zeros, not NaN;
    a NaN anywhere in a row makes that row NaN (it is never hidden).
    ``temperature`` must be > 0; ``float('inf')`` gives the uniform distribution.
    """
    xp = _checks.namespace(x, names=("x",))
    _checks.axis_length(x, axis, "x")
    temperature = _checks.positive_temperature(temperature)
    if temperature == math.inf:  # the limit T -> inf: uniform over the unmasked keys
        x = xp.where(x == -xp.inf, x, 0.0 * x)  # (-inf / inf would be NaN)
    elif temperature != 1.0:
        x = x / temperature
    m = xp.max(x, axis=axis, keepdims=True)
    m = xp.where(m == -xp.inf, 0.0, m)  # all -inf row: keep exp(-inf) = 0
    e = xp.exp(x - m)
    z = xp.sum(e, axis=axis, keepdims=True)  # the partition function, shifted
    return e / xp.where(z == 0.0, 1.0, z)


def log_sum_exp(x, axis: int = -1):
    """log Σ_j exp(x_j) along ``axis``, computed without overflow.

    This is log Z, the log partition function; −log Z is the free energy at
    temperature 1. A row that is all ``-inf`` gives ``-inf``.
    """
    xp = _checks.namespace(x, names=("x",))
    _checks.axis_length(x, axis, "x")
    m = xp.max(x, axis=axis, keepdims=True)
    m = xp.where(xp.isinf(m), 0.0, m)
    z = xp.sum(xp.exp(x - m), axis=axis, keepdims=True)
    return xp.squeeze(xp.log(z) + m, axis=axis)

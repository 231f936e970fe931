"""Softmax, the Boltzmann distribution of the scores (chapter 3)."""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from array_api_compat import array_namespace, is_numpy_array

from . import _checks


def softmax(x, axis: int = -1, temperature: float = 1.0, *, overwrite_x: bool = False):
    """a = softmax(s / τ): a_j = exp(s_j / τ) / Σ_j′ exp(s_j′ / τ), along ``axis``.

    The scores s are ``x`` and the temperature τ is ``temperature`` (chapter 3).

    Stable: the row maximum is subtracted first, so no ``exp`` overflows.
    A row that is all ``-inf`` (every key masked) gives zeros, not NaN;
    a NaN anywhere in a row makes that row NaN (it is never hidden).
    ``temperature`` must be > 0; ``float('inf')`` gives the uniform distribution.
    ``overwrite_x=True`` lets a NumPy ``x`` be reused for the result (as SciPy's
    ``overwrite_a``): one array of x's shape less; other libraries ignore it.

    The math is ``stable_softmax``; this function checks the input, divides by the
    temperature, and sends a large NumPy array to the fast path beside it, which
    runs ``stable_softmax`` on cache-sized blocks of rows (chapter 12).
    """
    xp = _checks.namespace(x, names=("x",))
    _checks.axis_length(x, axis, "x")
    temperature = _checks.positive_temperature(temperature)
    if _in_row_blocks(x, axis):  # fast path: the same function on blocks of rows
        return _softmax_row_blocks(x, temperature, overwrite_x)
    return stable_softmax(_divide_by_temperature(x, temperature, xp), axis, overwrite_x)


def stable_softmax(x, axis: int = -1, overwrite_x: bool = False):
    """a_j = exp(s_j − m) / Σ_j′ exp(s_j′ − m), m = the row maximum: the softmax
    at τ = 1 of the scores s = ``x``.

    Subtracting m changes nothing mathematically (it cancels between numerator
    and denominator) and keeps every exp(·) ≤ 1. No checks: call ``softmax``.
    """
    xp = array_namespace(x)
    m = xp.max(x, axis=axis, keepdims=True)
    m = xp.where(m == -xp.inf, 0.0, m)  # all -inf row: keep exp(-inf) = 0
    e = _exp_minus(x, m, overwrite_x)  # exp(x - m), the one array of x's shape
    Z = xp.sum(e, axis=axis, keepdims=True)  # the partition function, shifted
    return _divide(e, xp.where(Z == 0.0, 1.0, Z))


def _divide_by_temperature(x, temperature, xp):
    if temperature == math.inf:  # the limit τ -> inf: uniform over the unmasked keys
        # keep -inf (masked) and NaN as they are
        return xp.where(xp.isfinite(x), 0.0, x)
    return x if temperature == 1.0 else x / temperature


_BLOCK_BYTES = 2**20  # rows that stay in a core's cache


def _in_row_blocks(x, axis) -> bool:
    """True for a large C-contiguous NumPy array, softmax along its last axis."""
    return (
        is_numpy_array(x) and x.ndim >= 2 and axis in (-1, x.ndim - 1)
        and x.flags.c_contiguous and x.nbytes > 8 * _BLOCK_BYTES
    )


def _softmax_row_blocks(x, temperature, overwrite_x: bool):
    """``softmax`` of each cache-sized block of rows, in place in the result.

    The same function on each block: the block's five passes (max, subtract,
    exp, sum, divide) then run in cache, instead of streaming all of x through
    memory five times (chapter 12). Blocks run in one thread per CPU: NumPy's
    ufuncs release the GIL, and each block is independent of the others.
    """
    rows = x.reshape(-1, x.shape[-1])  # a view: x is C-contiguous
    out = rows if overwrite_x else np.empty_like(rows)
    step = max(1, _BLOCK_BYTES // rows[0].nbytes)

    def one_block(i):
        block = out[i : i + step]
        if not overwrite_x:
            block[...] = rows[i : i + step]
        x_t = _divide_by_temperature(block, temperature, np)
        p = stable_softmax(x_t, axis=-1, overwrite_x=True)
        if p is not block:  # a temperature made a new array
            block[...] = p

    starts = range(0, rows.shape[0], step)
    with ThreadPoolExecutor(min(len(starts), cpus())) as pool:
        list(pool.map(one_block, starts))
    return out.reshape(x.shape)


def cpus() -> int:
    """The number of CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _exp_minus(x, m, overwrite_x: bool):
    """exp(x - m). NumPy: computed in place in one new array (in x itself if
    ``overwrite_x``): each fresh T×T array costs a page-faulting pass over memory.
    Other libraries: plain out-of-place operations, so autograd is untouched.
    """
    if not is_numpy_array(x):
        return array_namespace(x).exp(x - m)
    e = np.subtract(x, m, out=x if overwrite_x else None)
    return np.exp(e, out=e)


def _divide(e, z):
    """e / z, in place when ``e`` is a NumPy array (made by ``_exp_minus``)."""
    if is_numpy_array(e):
        return np.divide(e, z, out=e)
    return e / z


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
    # no log(0) warning
    log_z = xp.where(z == 0.0, -xp.inf, xp.log(xp.where(z == 0.0, 1.0, z)))
    return xp.squeeze(log_z + m, axis=axis)


def log_softmax(x, axis: int = -1):
    """log softmax(x) = x − log Σ_j exp(x_j) along ``axis``: the log-probabilities
    that the loss and beam search use, without forming a probability that could
    round to 0."""
    xp = array_namespace(x)
    return x - xp.expand_dims(log_sum_exp(x, axis=axis), axis=axis)


def softmax_backward(weights, grad_weights, axis: int = -1):
    """The vector–Jacobian product of the softmax: ∂L/∂s from ∂L/∂a, a = softmax(s).

    The Jacobian is ∂a_i/∂s_j = a_i ([i = j] − a_j), diagonal minus outer product, so

        ∂L/∂s = a ∘ (g − Σ_j a_j g_j),    g = ∂L/∂a,

    one row sum and two element-wise products: the n × n Jacobian is never formed.
    weights: the softmax's output a (reused, not recomputed); grad_weights: g, same
    shape.
    Rows of a that are all 0 (every key masked) get a zero gradient.
    """
    xp = _checks.namespace(weights, grad_weights, names=("weights", "grad_weights"))
    _checks.same(tuple(weights.shape), tuple(grad_weights.shape),
                 f"weights {tuple(weights.shape)} and grad_weights "
                 f"{tuple(grad_weights.shape)} must have the same shape")
    _checks.axis_length(weights, axis, "weights")
    a, g = weights, grad_weights
    return a * (g - xp.sum(a * g, axis=axis, keepdims=True))

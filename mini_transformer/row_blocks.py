"""The softmax's NumPy fast path (chapter 12): the same function on cache-sized
blocks of rows, in threads, in place.

A softmax makes five passes over its array (max, subtract, exp, sum, divide). On a
large array each pass streams all of it through memory; on a block of rows that
fits in a core's cache the five passes run in cache. NumPy's ufuncs release the
GIL and the blocks are independent, so they run in one thread per CPU. The math is
the caller's function, unchanged: this module only cuts, schedules and reuses
memory.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from array_api_compat import array_namespace, is_numpy_array

BLOCK_BYTES = 2**20  # rows that stay in a core's cache


def cpus() -> int:
    """The number of CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def worth_blocking(x, axis) -> bool:
    """True for a large C-contiguous NumPy array, reduced along its last axis."""
    return (
        is_numpy_array(x) and x.ndim >= 2 and axis in (-1, x.ndim - 1)
        and x.flags.c_contiguous and x.nbytes > 8 * BLOCK_BYTES
    )


def map_row_blocks(f, x, overwrite_x: bool):
    """``f(block, overwrite_x=True)`` on each cache-sized block of rows of ``x``,
    written into the result (into x itself if ``overwrite_x``)."""
    rows = x.reshape(-1, x.shape[-1])  # a view: x is C-contiguous
    out = rows if overwrite_x else np.empty_like(rows)
    step = max(1, BLOCK_BYTES // rows[0].nbytes)

    def one_block(i):
        block = out[i : i + step]
        if not overwrite_x:
            block[...] = rows[i : i + step]
        result = f(block, overwrite_x=True)
        if result is not block:  # f made a new array
            block[...] = result

    starts = range(0, rows.shape[0], step)
    with ThreadPoolExecutor(min(len(starts), cpus())) as pool:
        list(pool.map(one_block, starts))
    return out.reshape(x.shape)


def exp_minus(x, m, overwrite_x: bool):
    """exp(x - m). NumPy: computed in place in one new array (in x itself if
    ``overwrite_x``): each fresh T×T array costs a page-faulting pass over memory.
    Other libraries: plain out-of-place operations, so autograd is untouched.
    """
    if not is_numpy_array(x):
        return array_namespace(x).exp(x - m)
    e = np.subtract(x, m, out=x if overwrite_x else None)
    return np.exp(e, out=e)


def divide(e, z):
    """e / z, in place when ``e`` is a NumPy array (made by ``exp_minus``)."""
    if is_numpy_array(e):
        return np.divide(e, z, out=e)
    return e / z

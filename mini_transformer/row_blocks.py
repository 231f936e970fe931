"""The softmax's NumPy fast path (chapter 12): the reference's lines in place, on
cache-sized blocks of rows, in threads.

A softmax makes five passes over its array (max, subtract, exp, sum, divide). On a
large array each pass streams all of it through memory, and each fresh array of
its size costs a page-faulting pass; on a block of rows that fits in a core's
cache, written over itself, the five passes run in cache. NumPy's ufuncs release
the GIL and the blocks are independent, so they run in one thread per CPU. The
math is ``softmax.stable_softmax``'s, line for line: this module only cuts,
schedules and reuses memory.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from array_api_compat import is_numpy_array

from .softmax import stable_softmax

BLOCK_BYTES = 2**20  # rows that stay in a core's cache


def cpus() -> int:
    """The number of CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def fast_softmax(x, overwrite_x: bool = False):
    """``stable_softmax(x)`` along the last axis, no checks. A NumPy ``x`` is
    computed in place, in one new array (in x itself if ``overwrite_x``, as SciPy's
    ``overwrite_a``), a large one in cache-sized blocks of rows, in threads. Other
    arrays (torch: autograd needs new tensors) go to ``stable_softmax``."""
    if not is_numpy_array(x) or x.ndim == 0:
        return stable_softmax(x, axis=-1)
    if worth_blocking(x):
        return map_row_blocks(_softmax_in_place, x, overwrite_x)
    return _softmax_in_place(x if overwrite_x else x.copy())


def _softmax_in_place(s):
    """``stable_softmax``'s lines on the rows of the NumPy array s, written over s."""
    m = np.max(s, axis=-1, keepdims=True)
    m[m == -np.inf] = 0.0                        # all -inf row: keep exp(-inf) = 0
    e = np.exp(np.subtract(s, m, out=s), out=s)
    z = np.sum(e, axis=-1, keepdims=True)
    z[z == 0.0] = 1.0                            # all -inf row: 0 / 1, not 0 / 0
    return np.divide(e, z, out=e)


def worth_blocking(x) -> bool:
    """True for a large C-contiguous NumPy array (its rows: the last axis)."""
    return x.ndim >= 2 and x.flags.c_contiguous and x.nbytes > 8 * BLOCK_BYTES


def map_row_blocks(f, x, overwrite_x: bool):
    """``f(block)``, which writes its result over ``block``, on each cache-sized
    block of rows of ``x``, written into the result (into x itself if
    ``overwrite_x``)."""
    rows = x.reshape(-1, x.shape[-1])  # a view: x is C-contiguous
    out = rows if overwrite_x else np.empty_like(rows)
    step = max(1, BLOCK_BYTES // rows[0].nbytes)

    def one_block(i):
        block = out[i : i + step]
        if not overwrite_x:
            block[...] = rows[i : i + step]
        f(block)

    starts = range(0, rows.shape[0], step)
    with ThreadPoolExecutor(min(len(starts), cpus())) as pool:
        list(pool.map(one_block, starts))
    return out.reshape(x.shape)

"""Tiled attention: the same output as ``scaled_dot_product_attention`` without
the n_q × n_k matrix (chapter 12).

The softmax of a row of scores needs its maximum and its partition function
Z = Σ_j exp(s_j), both sums over *all* keys. The online softmax
(Milakov & Gimelshein 2018) keeps them as running values while the keys arrive
in blocks, rescaling what was accumulated so far whenever the maximum grows;
FlashAttention (Dao et al. 2022) does the same on a GPU. Memory is then
O(n·d) instead of O(n_q·n_k).

This is a NumPy fast path, checked against the reference in the tests; it is
NumPy-only on purpose (it updates tiles in place and runs query blocks in
threads), and refuses other arrays with a ``ValueError``: for torch use
``torch.nn.functional.scaled_dot_product_attention``.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
from array_api_compat import is_numpy_array

from . import _checks
from ._ops import sum_to
from .attention import as_mask
from .row_blocks import cpus


def _check_threads(threads):
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")


def _check_tiled(q, k, v, block_size, threads, **_):
    _checks.check_qkv(q, k, v)
    for name, a in (("q", q), ("k", k), ("v", v)):
        if not is_numpy_array(a):
            raise ValueError(
                "tiled_attention is NumPy-only, got "
                f"{name} of type {type(a).__name__}; "
                "use scaled_dot_product_attention (any library) or "
                "torch.nn.functional.scaled_dot_product_attention"
            )
    _check_block_size(block_size)
    _check_threads(threads)


def _check_block_size(block_size):
    b_q, b_k = (block_size, block_size) if isinstance(block_size, int) else block_size
    if b_q < 1 or b_k < 1:
        raise ValueError(f"block_size must be positive, got {block_size}")


@_checks.at_door(_check_tiled)
def tiled_attention(
    q,
    k,
    v,
    mask=None,
    *,
    causal=False,
    block_size=(512, 512),
    threads=None,
    return_lse=False,
):
    """softmax(Q Kᵀ / √d_k) V, streaming keys and values in blocks.

    q: (..., n_q, d_k)   k: (..., n_k, d_k)   v: (..., n_k, d_v), NumPy arrays.
    mask: as in ``scaled_dot_product_attention`` (bool True = may attend, or
    float added to the scores), broadcast to (..., n_q, n_k) as a view, never
    copied. ``causal=True`` lets query i attend to keys j <= i (as
    ``causal_mask``) without any mask array. Key blocks in which every score is
    masked are skipped. A query whose keys are all masked gets a zero output.
    block_size: (queries, keys) per tile, or one int for both.
    threads: query blocks run in this many threads (default: the CPUs
    available, from 2**22 scores on); BLAS runs at one thread inside each.
    return_lse: also return each query's log-sum-exp of its scaled scores,
    log Σ_j exp(S_ij) (..., n_q) (``-inf`` for a fully masked query): the one number
    per row that ``tiled_attention_backward`` needs to recompute the weights.
    Returns the output (..., n_q, d_v), or (output, lse); the weights are never formed.

    For one block of queries with scaled scores S_j = Q K_jᵀ / √d_k against key
    block j, starting from m = -inf, ℓ = 0, O = 0:

        m_new = max(m, rowmax S_j)                        running maximum
        ℓ     = exp(m - m_new) ℓ + rowsum exp(S_j - m_new)  running partition function
        O     = exp(m - m_new) O + exp(S_j - m_new) V_j     running numerator
        m     = m_new

    and after the last block, output = O / ℓ (a row with ℓ = 0 gives 0) and the
    row's log-sum-exp is m + log ℓ. The
    code runs it in base 2 (``exp2``, see ``_attend``), which is the same math.
    The max only prevents overflow (softmax does not change when a row is
    shifted): when |q|·|k| bounds every score far inside the float range, m
    stays 0 and each tile saves two passes.
    """
    b_q, b_k = (block_size, block_size) if isinstance(block_size, int) else block_size
    n_q, d_k = q.shape[-2:]
    n_k, d_v = v.shape[-2:]
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q2 = q * (_LOG2_E / math.sqrt(d_k))  # see _attend
    # Cauchy-Schwarz: every score |q2·k| <= B. If 2^±B and the sums of up to
    # n_k terms 2^B·v stay inside the float range, no running max is needed
    # (a float mask could add anything to the scores: not with one).
    bound = _max_norm(q2) * _max_norm(k)
    growth = bound + math.log2(n_k * max(1.0, float(np.max(np.abs(v)))))
    maxexp = np.finfo(q.dtype).maxexp
    mask = _mask_view(mask, q, batch + (n_q, n_k))
    bounded = (
        2 * bound <= maxexp
        and growth < maxexp - 1
        and (mask is None or mask.dtype == bool)
    )
    q2 = np.broadcast_to(q2, batch + (n_q, d_k))
    k = np.broadcast_to(k, batch + (n_k, d_k))
    v = np.broadcast_to(v, batch + (n_k, d_v))
    out = np.empty(batch + (n_q, d_v), dtype=q.dtype)
    lse2 = np.empty(batch + (n_q, 1), dtype=q.dtype)  # base 2, see _attend

    def query_block(task):
        b, i = task
        out[b][i : i + b_q], lse2[b][i : i + b_q] = _attend(
            q2[b][i : i + b_q],
            k[b],
            v[b],
            None if mask is None else mask[b][i : i + b_q],
            causal_offset=i if causal else None,
            b_k=b_k,
            bounded=bounded,
        )

    tasks = [(b, i) for b in np.ndindex(batch) for i in range(0, n_q, b_q)]
    if threads is None:  # threads pay from about a GFLOP on
        threads = cpus() if math.prod(batch) * n_q * n_k >= 2**22 else 1
    threads = min(len(tasks), threads)
    # tiles are small: BLAS threads would only wait on each other
    with _blas_threads(1):
        if threads <= 1:
            for task in tasks:
                query_block(task)
        else:
            with ThreadPoolExecutor(
                threads
            ) as pool:  # NumPy releases the GIL in @ and exp
                list(pool.map(query_block, tasks))
    if return_lse:
        return out, lse2[..., 0] / _LOG2_E  # log₂ -> natural log
    return out


def _attend(q2, k, v, mask, *, causal_offset, b_k, bounded):
    """One query block against every key block: the recurrence of
    ``tiled_attention``, in base 2: ``q2`` holds Q·log₂e/√d_k, so the tile is
    S_j·log₂e and exp(S_j - m) = 2^(S_j·log₂e - m·log₂e); ``exp2`` is cheaper
    than ``exp``, and m is kept in the same base-2 units. ``causal_offset``: the
    row of the causal mask where this block starts, or None. Returns the block's
    output and its rows' log-sum-exp in base 2, m + log₂ ℓ (-inf where ℓ = 0).

    The running max only guards exp against overflow. ``bounded`` says every
    score is known to be far from overflow and underflow (see
    ``tiled_attention``): then m stays 0, the rescale factor is 1, and each tile
    skips its max and subtract passes. The result is the same."""
    n_q, n_k = q2.shape[0], k.shape[0]
    # running max (base 2)
    m = np.full((n_q, 1), 0.0 if bounded else -np.inf, dtype=q2.dtype)
    l = np.zeros((n_q, 1), dtype=q2.dtype)  # running partition function
    o = np.zeros((n_q, v.shape[-1]), dtype=q2.dtype)  # running numerator
    # rowsum p = p · 1 (a fast matvec)
    ones = np.ones((min(b_k, n_k), 1), dtype=q2.dtype)
    tile = np.empty((n_q, min(b_k, n_k)), dtype=q2.dtype)  # one buffer for every S_j
    for j in range(0, n_k, b_k):
        if causal_offset is not None and j > causal_offset + n_q - 1:
            break  # this key block and all later ones are in every query's future
        s = tile[:, : min(b_k, n_k - j)]
        np.matmul(q2, k[j : j + b_k].T, out=s)  # (n_q, b_k) scores S_j·log₂e
        if causal_offset is not None and j + s.shape[1] - 1 > causal_offset:
            rows = np.arange(causal_offset, causal_offset + n_q)[:, None]
            s[rows < np.arange(j, j + s.shape[1])] = -np.inf  # key after query
        if mask is not None:
            mask_j = mask[:, j : j + b_k]
            if mask_j.dtype == np.bool_:
                if not mask_j.any():
                    continue  # every score of this tile is masked: nothing to add
                np.copyto(s, -np.inf, where=~mask_j)
            else:
                s += mask_j * _LOG2_E
        if bounded:  # m = 0 throughout: exp(S_j - 0), nothing to rescale
            p = np.exp2(s, out=s)
        else:
            m_new = np.maximum(m, s.max(axis=1, keepdims=True))
            # all -inf so far: exp(-inf) = 0
            shift = np.where(m_new == -np.inf, 0.0, m_new)
            # exp(S_j - m_new), in place
            p = np.exp2(np.subtract(s, shift, out=s), out=s)
            rescale = np.exp2(m - shift)  # exp(m - m_new): 0 on the first block
            l *= rescale
            o *= rescale
            m = m_new
        l += p @ ones[: s.shape[1]]
        o += p @ v[j : j + b_k]
    empty = l == 0.0  # every key of the row masked
    lse2 = np.where(empty, -np.inf, m + np.log2(np.where(empty, 1.0, l)))
    return o / np.where(empty, 1.0, l), lse2


_LOG2_E = math.log2(math.e)


def _max_norm(x):
    """The largest Euclidean norm of a row of x (..., n, d)."""
    return float(np.sqrt(np.max(np.einsum("...i,...i->...", x, x))))


def _mask_view(mask, like, shape):
    """``mask`` checked as the reference checks it (``as_mask``, ``like``'s dtype)
    and broadcast to ``shape`` as a view."""
    if mask is None:
        return None
    if not is_numpy_array(mask) and hasattr(mask, "__array_namespace__"):
        raise ValueError(
            f"tiled_attention needs a NumPy mask, got {type(mask).__name__}")
    return np.broadcast_to(as_mask(mask, like, shape, np), shape)


_controller = None


def _blas_threads(n):
    """Context manager limiting BLAS to ``n`` threads (threadpoolctl), if installed."""
    global _controller
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is in requirements.txt
        import contextlib

        return contextlib.nullcontext()
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller.limit(limits=n, user_api="blas")


def _check_tiled_backward(q, k, v, output, lse, grad_output, block_size, threads=None,
                          **_):
    _checks.check_qkv(q, k, v)
    for name, a in (("q", q), ("k", k), ("v", v), ("output", output), ("lse", lse),
                    ("grad_output", grad_output)):
        if not is_numpy_array(a):
            raise ValueError(
                f"tiled_attention_backward is NumPy-only, got {name} of type "
                f"{type(a).__name__}"
            )
    _check_block_size(block_size)
    _check_threads(threads)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    n_q, d_v = q.shape[-2], v.shape[-1]
    for name, a, shape in (("output", output, batch + (n_q, d_v)),
                           ("grad_output", grad_output, batch + (n_q, d_v)),
                           ("lse", lse, batch + (n_q,))):
        if a.shape != shape:
            raise ValueError(
                f"{name} must have shape {shape} (the forward's), got {a.shape}"
            )


@_checks.at_door(_check_tiled_backward)
def tiled_attention_backward(
    q,
    k,
    v,
    output,
    lse,
    grad_output,
    mask=None,
    *,
    causal=False,
    block_size=(512, 512),
    threads=None,
):
    """The gradients of ``tiled_attention`` without the n_q × n_k matrix: each tile of
    weights is recomputed from the forward's row log-sum-exp, P_ij = exp(S_ij − lse_i),
    as FlashAttention's backward recomputes it (Dao et al. 2022 save each row's maximum
    and sum, which give the log-sum-exp; FlashAttention-2 saves the log-sum-exp itself).

    The reference backward's equations, tile by tile (dO = grad_output):

        dV_j += P_ijᵀ dO_i,   dP_ij = dO_i V_jᵀ,   dS_ij = P_ij ∘ (dP_ij − D_i),
        dK_j += dS_ijᵀ Q_i / √d_k,   dQ_i += dS_ij K_j / √d_k,

    with D_i = rowsum(dP_i ∘ P_i) = rowsum(dO_i ∘ O_i), which needs only the output:
    Σ_j P_ij (dO_i · v_j) = dO_i · O_i. Five tile-sized matrix products per tile,
    against
    the forward's two. Key blocks are shared out between threads; each keeps its own dQ.
    q, k, v, mask, causal, block_size, threads: as given to the forward;
    output, lse: what ``tiled_attention(..., return_lse=True)`` returned.
    Returns (grad_q, grad_k, grad_v), shaped like q, k, v.
    """
    b_q, b_k = (block_size, block_size) if isinstance(block_size, int) else block_size
    n_q, d_k = q.shape[-2:]
    n_k, d_v = v.shape[-2:]
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    mask = _mask_view(mask, q, batch + (n_q, n_k))
    shapes = q.shape, k.shape, v.shape
    scale = 1 / math.sqrt(d_k)
    q2 = np.broadcast_to(q * (scale * _LOG2_E), batch + (n_q, d_k))   # scores in base 2
    qb = np.broadcast_to(q, batch + (n_q, d_k))
    k = np.broadcast_to(k, batch + (n_k, d_k))
    v = np.broadcast_to(v, batch + (n_k, d_v))
    lse2 = np.where(np.isneginf(lse), np.inf, lse * _LOG2_E)[
        ..., None
    ]  # all masked: P = 0
    d = np.sum(grad_output * output, axis=-1, keepdims=True)  # D, (..., n_q, 1)
    grad_k = np.empty(batch + (n_k, d_k), dtype=q.dtype)
    grad_v = np.empty(batch + (n_k, d_v), dtype=q.dtype)
    tasks = [(b, j) for b in np.ndindex(batch) for j in range(0, n_k, b_k)]
    if threads is None:
        threads = cpus() if math.prod(batch) * n_q * n_k >= 2**22 else 1
    threads = max(1, min(len(tasks), threads))

    def key_blocks(chunk):
        # this thread's share of dQ
        grad_q = np.zeros(batch + (n_q, d_k), dtype=q.dtype)
        for b, j in chunk:
            queries = _Queries(q2[b], qb[b], grad_output[b], lse2[b], d[b], grad_q[b])
            grad_k[b][j : j + b_k], grad_v[b][j : j + b_k] = _attend_backward(
                queries,
                k[b][j : j + b_k],
                v[b][j : j + b_k],
                None if mask is None else mask[b][:, j : j + b_k],
                j,
                causal=causal,
                b_q=b_q,
            )
        return grad_q

    chunks = [tasks[i::threads] for i in range(threads)]
    with _blas_threads(1):
        if threads == 1:
            partial = [key_blocks(chunks[0])]
        else:
            with ThreadPoolExecutor(threads) as pool:
                partial = list(pool.map(key_blocks, chunks))
    grad_q = partial[0]
    for g in partial[1:]:
        grad_q += g
    grad_q *= scale
    grad_k *= scale
    return tuple(sum_to(g, shape) for g, shape in zip((grad_q, grad_k, grad_v), shapes))


class _Queries(NamedTuple):
    """What every key block of one batch entry reads, one row per query: Q·log₂e/√d_k
    (``q2``), Q, dO, the log-sum-exp in base 2 (``lse2``), D = rowsum(dO ∘ O), and the
    dQ that the key blocks add to (``grad_q``)."""

    q2: np.ndarray
    q: np.ndarray
    d_out: np.ndarray
    lse2: np.ndarray
    d: np.ndarray
    grad_q: np.ndarray


def _attend_backward(queries, k_j, v_j, mask_j, j, *, causal, b_q):
    """One key block j against every query block: returns (dK_j √d_k, dV_j) and adds
    dS K_j to ``queries.grad_q`` (the 1/√d_k is applied once, by the caller)."""
    q2, q, d_out, lse2, d, grad_q = queries
    n_q = q.shape[0]
    grad_k = np.zeros(k_j.shape, dtype=q.dtype)
    grad_v = np.zeros(v_j.shape, dtype=q.dtype)
    cols = np.arange(j, j + k_j.shape[0])
    for i in range(0, n_q, b_q):
        rows = slice(i, i + b_q)
        last_query = min(i + b_q, n_q) - 1
        if causal and j > last_query:
            continue  # every key of this block is in the future of every query
        s = q2[rows] @ k_j.T                          # S_ij·log₂e, (b_q, b_k)
        if causal and cols[-1] > i:
            s[np.arange(i, last_query + 1)[:, None] < cols] = -np.inf
        if mask_j is not None:
            m = mask_j[rows]
            if m.dtype == np.bool_:
                if not m.any():
                    continue
                np.copyto(s, -np.inf, where=~m)
            else:
                s += m * _LOG2_E
        p = np.exp2(np.subtract(s, lse2[rows], out=s), out=s)   # P_ij, in place
        grad_v += p.T @ d_out[rows]                   # dV_j += P_ijᵀ dO_i
        dp = d_out[rows] @ v_j.T                      # dP_ij
        ds = np.multiply(p, np.subtract(dp, d[rows], out=dp), out=dp)   # dS_ij
        grad_k += ds.T @ q[rows]                      # dK_j += dS_ijᵀ Q_i
        grad_q[rows] += ds @ k_j                      # dQ_i += dS_ij K_j
    return grad_k, grad_v

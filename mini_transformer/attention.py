"""Scaled dot-product attention and its masks (chapter 4).

Mask convention (the same as ``torch.nn.functional.scaled_dot_product_attention``
and JAX): a **bool** mask is True where a query *may attend* to a key; a
**float** mask is *added* to the scores (0 keeps a score, ``-inf`` removes it).
``torch.nn.MultiheadAttention``'s ``key_padding_mask`` and ``attn_mask`` use the
opposite bool polarity (True = *masked out*): pass ``~mask`` to them.
"""

from __future__ import annotations

import math

import numpy as np
from array_api_compat import (array_namespace, is_array_api_obj, is_numpy_array,
                              is_torch_array)

from . import _checks
from ._ops import sum_to
from .row_blocks import fast_softmax
from .softmax import softmax_backward


def causal_mask(n_q: int, n_k: int | None = None):
    """Bool (n_q, n_k): True where query i may attend to key j, i.e. j <= i.

    Upper-left aligned (``tril``), as ``torch.tril`` and ``is_causal=True``.
    """
    n_k = n_q if n_k is None else n_k
    for name, n in (("n_q", n_q), ("n_k", n_k)):
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
            raise ValueError(
                f"causal_mask needs {name} to be an integer >= 1, got {n!r}"
            )
    return np.tril(np.ones((n_q, n_k), dtype=bool))


def padding_mask(lengths, n_k: int):
    """Bool (batch, 1, n_k): True on the first ``lengths[b]`` keys of sequence b.

    The singleton axis broadcasts over the queries.
    """
    if not isinstance(n_k, (int, np.integer)) or isinstance(n_k, bool) or n_k < 1:
        raise ValueError(f"padding_mask needs n_k to be an integer >= 1, got {n_k!r}")
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(
            f"lengths must be a 1-D sequence of integers, got {lengths.dtype} "
            f"array of shape {lengths.shape}"
        )
    if np.any(lengths < 0) or np.any(lengths > n_k):
        raise ValueError(f"lengths must lie in [0, n_k={n_k}], got {lengths.tolist()}")
    return (np.arange(n_k)[None, :] < lengths[:, None])[:, None, :]


def as_mask(mask, like, shape, xp):
    """``mask`` checked for the scores of ``shape`` and put in ``like``'s library,
    device and dtype: bool stays bool, a floating mask takes ``like``'s dtype.

    A NumPy (or nested-list) mask is welcome with torch inputs; a torch mask
    with NumPy inputs, or on another device, is refused.
    """
    if not is_array_api_obj(mask):
        mask = np.asarray(mask)
    if is_torch_array(like):
        import torch

        if is_torch_array(mask) and mask.device != like.device:
            raise ValueError(
                f"device mismatch: the mask is on {mask.device} but the scores are on "
                f"{like.device}; move the mask (or pass a NumPy mask)"
            )
        mask = torch.as_tensor(mask, device=like.device)
    elif is_torch_array(mask):
        raise ValueError("a torch mask cannot be used with NumPy inputs")
    elif is_numpy_array(mask) and not is_numpy_array(like):
        mask = xp.asarray(mask)
    shape = tuple(shape)
    if _checks.broadcast_shape(tuple(mask.shape), shape) != shape:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' "
            f"shape {shape} (..., n_q, n_k)"
        )
    if mask.dtype == xp.bool:
        return mask
    if xp.isdtype(mask.dtype, "real floating"):
        return xp.astype(mask, like.dtype)
    raise ValueError(
        f"mask must be bool (True = may attend) or floating (added to the scores), "
        f"got dtype {mask.dtype}"
    )


def _check_scores(scores, **_):
    _checks.namespace(scores, names=("scores",))


@_checks.at_door(_check_scores)
def apply_mask(scores, mask):
    """scores where a bool mask is True, ``-inf`` elsewhere; or scores + a float mask.
    """
    if mask is None:
        return scores
    xp = array_namespace(scores)
    mask = as_mask(mask, scores, scores.shape, xp)
    if mask.dtype == xp.bool:
        return xp.where(mask, scores, -xp.inf)
    return scores + mask


@_checks.at_door(_checks.check_qkv)
def scaled_dot_product_attention(q, k, v, mask=None):
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V.

    q: (..., n_q, d_k)   k: (..., n_k, d_k)   v: (..., n_k, d_v)
    mask: bool, True = may attend; or float, added to the scores; broadcast to
    (..., n_q, n_k). A query whose keys are all masked gets zero weights and a
    zero output.
    Returns (output (..., n_q, d_v), weights (..., n_q, n_k)).
    """
    scores = (q / math.sqrt(q.shape[-1])) @ k.mT  # (..., n_q, n_k); scale the smaller q
    weights = fast_softmax(apply_mask(scores, mask), overwrite_x=True)  # over keys
    return weights @ v, weights  # (..., n_q, d_v)


@_checks.at_door(_checks.check_qkv)
def scaled_dot_product_attention_backward(
    q, k, v, grad_output, mask=None, weights=None
):
    """The gradients of Attention(Q, K, V) = A V, A = softmax(S), S = Q Kᵀ / √d_k.

    With dO = ∂L/∂output, row by row:

        dV = Aᵀ dO                        (n_k, d_v)
        dA = dO Vᵀ                        (n_q, n_k)
        dS = A ∘ (dA − rowsum(dA ∘ A))    softmax_backward
        dQ = dS K / √d_k                  (n_q, d_k)
        dK = dSᵀ Q / √d_k                 (n_k, d_k)

    A masked score has A = 0, hence dS = 0: it passes no gradient, and a query whose
    keys are all masked gets zero, finite gradients. Arrays that the forward
    broadcast get the sum over their copies. mask: as in the forward (the float
    mask is a constant: no gradient). weights: the forward's A, when the caller has
    it already (``multi_head_attention_backward`` does); by default recomputed.
    Returns (grad_q, grad_k, grad_v), shaped like q, k, v.
    """
    if weights is None:
        _, weights = scaled_dot_product_attention(q, k, v, mask)
    a, scale = weights, 1 / math.sqrt(q.shape[-1])            # A, (..., n_q, n_k)
    grad_v = a.mT @ grad_output                              # (..., n_k, d_v)
    grad_s = softmax_backward(a, grad_output @ v.mT)         # (..., n_q, n_k)
    grad_q = grad_s @ k * scale                              # (..., n_q, d_k)
    grad_k = grad_s.mT @ q * scale                           # (..., n_k, d_k)
    return (sum_to(grad_q, q.shape), sum_to(grad_k, k.shape), sum_to(grad_v, v.shape))

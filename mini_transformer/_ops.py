"""Array operations the equations share: products over all rows at once, and
undoing a broadcast in a backward pass.

A forward that broadcasts an array (a bias added to every row, one key matrix
shared by every query batch) uses it several times, so its gradient is the sum of
the gradients of its copies (the multivariate chain rule): ``sum_to``.
"""

from __future__ import annotations

from array_api_compat import array_namespace


def rows_matmul(a, W):
    """a @ W for a (..., d_in) and a matrix W, as one product over all rows (NumPy
    runs a stack of small products one by one)."""
    xp = array_namespace(a)
    return xp.reshape(
        xp.reshape(a, (-1, a.shape[-1])) @ W, (*a.shape[:-1], W.shape[-1])
    )


def rows_outer(a, b):
    """Σ over every row r of aᵣᵀ bᵣ: the gradient of W in a @ W, a (..., d_in), b (...,
    d_out).
    """
    xp = array_namespace(a)
    a2 = xp.reshape(a, (-1, a.shape[-1]))
    b2 = xp.reshape(b, (-1, b.shape[-1]))
    return a2.T @ b2                                          # (d_in, d_out)


def sum_to(grad, shape):
    """``grad`` summed over the axes that broadcasting added or stretched, so that it
    has ``shape``: the gradient of an array of ``shape`` broadcast in the forward."""
    xp = array_namespace(grad)
    shape = tuple(shape)
    extra = grad.ndim - len(shape)
    if extra:
        grad = xp.sum(grad, axis=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if stretched:
        grad = xp.sum(grad, axis=stretched, keepdims=True)
    return grad

"""What every backward pass needs: undoing a broadcast.

A forward that broadcasts an array (a bias added to every row, one key matrix
shared by every query batch) uses it several times, so its gradient is the sum of
the gradients of its copies (the multivariate chain rule).
"""

from __future__ import annotations

from array_api_compat import array_namespace


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

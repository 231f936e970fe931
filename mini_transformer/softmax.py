"""Softmax, the Boltzmann distribution of the scores (chapter 3)."""

from __future__ import annotations

import math

from array_api_compat import array_namespace

from . import _checks


def _check(x, axis, temperature, **_):
    _checks.namespace(x, names=("x",))
    _checks.axis_length(x, axis, "x")
    _checks.positive_temperature(temperature)


@_checks.at_door(_check)
def softmax(x, axis: int = -1, temperature: float = 1.0):
    """a = softmax(s / τ): a_j = exp(s_j / τ) / Σ_j′ exp(s_j′ / τ), along ``axis``.

    The scores s are ``x`` and the temperature τ is ``temperature`` (chapter 3).
    Stable: the row maximum is subtracted first, so no ``exp`` overflows.
    A row that is all ``-inf`` (every key masked) gives zeros, not NaN;
    a NaN anywhere in a row makes that row NaN (it is never hidden).
    ``temperature`` must be > 0; ``float('inf')`` gives the uniform distribution.
    The math is ``stable_softmax``; ``row_blocks.fast_softmax`` is its NumPy
    fast path (chapter 12).
    """
    return stable_softmax(_divide_by_temperature(x, float(temperature)), axis)


def stable_softmax(x, axis: int = -1):
    """a_j = exp(s_j − m) / Σ_j′ exp(s_j′ − m), m = the row maximum: the softmax
    at τ = 1 of the scores s = ``x``.

    Subtracting m changes nothing mathematically (it cancels between numerator
    and denominator) and keeps every exp(·) ≤ 1. No checks: call ``softmax``.
    """
    xp = array_namespace(x)
    m = xp.max(x, axis=axis, keepdims=True)
    m = xp.where(m == -xp.inf, 0.0, m)  # all -inf row: keep exp(-inf) = 0
    e = xp.exp(x - m)
    Z = xp.sum(e, axis=axis, keepdims=True)  # the partition function, shifted
    return e / xp.where(Z == 0.0, 1.0, Z)  # all -inf row: 0 / 1, not 0 / 0


def _divide_by_temperature(x, temperature):
    if temperature == math.inf:  # the limit τ -> inf: uniform over the unmasked keys
        xp = array_namespace(x)
        return xp.where(xp.isfinite(x), 0.0, x)  # -inf (masked) and NaN stay
    return x if temperature == 1.0 else x / temperature


def _check_axis(x, axis, **_):
    _checks.namespace(x, names=("x",))
    _checks.axis_length(x, axis, "x")


@_checks.at_door(_check_axis)
def log_sum_exp(x, axis: int = -1):
    """log Σ_j exp(x_j) along ``axis``, computed without overflow.

    This is log Z, the log partition function; −log Z is the free energy at
    temperature 1. A row that is all ``-inf`` gives ``-inf``.
    """
    xp = array_namespace(x)
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


def _check_backward(weights, grad_weights, axis):
    _checks.namespace(weights, grad_weights, names=("weights", "grad_weights"))
    _checks.same(tuple(weights.shape), tuple(grad_weights.shape),
                 f"weights {tuple(weights.shape)} and grad_weights "
                 f"{tuple(grad_weights.shape)} must have the same shape")
    _checks.axis_length(weights, axis, "weights")


@_checks.at_door(_check_backward)
def softmax_backward(weights, grad_weights, axis: int = -1):
    """The vector–Jacobian product of the softmax: ∂L/∂s from ∂L/∂a, a = softmax(s).

    The Jacobian is ∂a_i/∂s_j = a_i ([i = j] − a_j), diagonal minus outer product, so

        ∂L/∂s = a ∘ (g − Σ_j a_j g_j),    g = ∂L/∂a,

    one row sum and two element-wise products: the n × n Jacobian is never formed.
    weights: the softmax's output a (reused, not recomputed); grad_weights: g, same
    shape.
    Rows of a that are all 0 (every key masked) get a zero gradient.
    """
    xp = array_namespace(weights)
    a, g = weights, grad_weights
    return a * (g - xp.sum(a * g, axis=axis, keepdims=True))

"""Checkers for chapter 7's exercises (the position-wise feed-forward network).

check_1: the parameters of one FFN of the big model, d_model = 1024, d_ff = 4096.
check_2: a function collapse(W_1, b_1, W_2, b_2) -> (W, b), the FFN without its ReLU
    as one affine map x W + b.
(Exercise 3 asks to show a property and explain it; its solution stays folded.)
"""

from __future__ import annotations

import numpy as np

import mini_transformer as mt
from exercises import Mistake, UNANSWERED, check_value, right, unanswered, wrong


def check_1(n_params):
    """n_params: weights and biases of one FFN with d_model = 1024, d_ff = 4096."""
    d, d_ff = 1024, 4096
    p = mt.FeedForwardParams.random(np.random.default_rng(0), d_model=d, d_ff=d_ff)
    sizes = {f: getattr(p, f).size for f in ("W_1", "b_1", "W_2", "b_2")}
    expected = sum(sizes.values())
    weights = sizes["W_1"] + sizes["W_2"]
    mistakes = [
        Mistake("no-biases", weights, "that counts the weights only: b_1 and b_2 are "
                "parameters too."),
        Mistake("only-b_1", weights + sizes["b_1"], "b_2 is missing."),
        Mistake("only-b_2", weights + sizes["b_2"], "b_1 is missing."),
        Mistake("bias-sizes", lambda a: a.ndim == 0 and int(a) in (
                    weights + 2 * d, weights + 2 * d_ff),
                "b_1 has d_ff entries (one per hidden unit), b_2 has d_model."),
        Mistake("one-layer", lambda a: a.ndim == 0 and int(a) in (
                    sizes["W_1"] + sizes["b_1"], sizes["W_2"] + sizes["b_2"],
                    sizes["W_1"], sizes["W_2"]),
                "that is one of the two layers: the FFN has W_1 and W_2."),
        Mistake("base-model", 2 * 512 * 2048 + 2048 + 512,
                "that is the base model (d_model = 512): the big model doubles both "
                "widths."),
    ]
    return check_value(n_params, expected, what="your count", mistakes=mistakes,
                       rtol=1e-9, atol=0)


def _no_relu(x, W_1, b_1, W_2, b_2):
    return (x @ W_1 + b_1) @ W_2 + b_2


def _cases():
    # the chapter's worked example (d_model 2, d_ff 4), then random sizes
    W_1 = np.array([[1.0, -1.0, 0.5, 2.0], [1.0, 1.0, -1.0, -1.0]])
    b_1 = np.array([0.0, -2.0, 0.0, 1.0])
    W_2 = np.array([[1.0, 0.0], [2.0, 1.0], [-1.0, 3.0], [0.0, -1.0]])
    b_2 = np.array([0.5, 0.0])
    cases = [(W_1, b_1, W_2, b_2)]
    rng = np.random.default_rng(7)
    for d, d_ff in ((8, 32), (3, 5)):
        p = mt.FeedForwardParams.random(rng, d_model=d, d_ff=d_ff)
        cases.append((p.W_1, p.b_1, p.W_2, p.b_2))
    return cases


def check_2(collapse):
    """collapse(W_1, b_1, W_2, b_2) -> (W, b) with x W + b = (x W_1 + b_1) W_2 + b_2."""
    if unanswered(collapse):
        return UNANSWERED
    if not callable(collapse):
        return wrong(f"collapse should be a function, got {type(collapse).__name__}.")
    for W_1, b_1, W_2, b_2 in _cases():
        d = W_1.shape[0]
        # read the affine map off the two-layer network itself: b is its value at x = 0,
        # row i of W its change along the unit vector e_i
        b = _no_relu(np.zeros(d), W_1, b_1, W_2, b_2)
        W = _no_relu(np.eye(d), W_1, b_1, W_2, b_2) - b
        try:
            got = collapse(W_1, b_1, W_2, b_2)
        except NotImplementedError:
            return UNANSWERED
        except Exception as exc:  # the reader's code: say what it raised
            return wrong(f"collapse raised {type(exc).__name__}: {exc}", "raises")
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return wrong("collapse should return two arrays, (W, b).", "form")
        W_got, b_got = got
        v = check_value(W_got, W, what="your W", rtol=1e-9, atol=1e-12, mistakes=[
            Mistake("W-order", W_2 @ W_1, "your W is W_2 W_1 (d_ff x d_ff): the row "
                    "x meets W_1 first."),
            Mistake("W-first-layer", W_1, "your W is W_1 alone: the second layer "
                    "multiplies it too."),
        ])
        if not v.ok:
            return v
        v = check_value(b_got, b, what="your b", rtol=1e-9, atol=1e-12, mistakes=[
            Mistake("b-no-b_2", b_1 @ W_2, "your b misses b_2."),
            Mistake("b-no-b_1", b_2, "your b misses b_1, which passes through W_2."),
        ])
        if not v.ok:
            return v
    return right()

"""Checkers for chapter 6's exercises (positional encoding).

check_1: (offset, distance) of the closest two encodings of 0..1000, d_model = 2.
check_3: the dot product PE_pos . PE_(pos+6) for d_model = 4.
check_4: (estimate, measured) float32 angle error at pos = 100000, d_model = 512.
(Exercise 2 asks to show two identities and explain them; its solution stays folded.)
"""

from __future__ import annotations

import math

import numpy as np

from exercises import Mistake, UNANSWERED, check_value, right, unanswered, wrong
from mini_transformer import positional_encoding


def _closest(pe):
    """Smallest distance between two different rows of pe, and their offset."""
    dist = np.linalg.norm(pe[:, None, :] - pe[None, :, :], axis=-1)
    np.fill_diagonal(dist, np.inf)
    a, b = np.unravel_index(np.argmin(dist), dist.shape)
    return abs(int(b) - int(a)), float(dist[a, b])


def check_1(answer):
    """answer = (k, distance): the closest two encodings are k positions apart."""
    if unanswered(answer):
        return UNANSWERED
    try:
        a = np.asarray(answer, dtype=float)
    except (TypeError, ValueError):
        a = None
    if a is None or a.shape != (2,):
        return wrong("give two numbers: (offset in positions, distance).", "form")
    k, d = _closest(positional_encoding(1001, 2))
    k_first_hundred, _ = _closest(positional_encoding(101, 2))
    got_k, got_d = a
    k_ok = abs(got_k - k) < 0.5
    d_ok = math.isclose(got_d, d, rel_tol=2e-2)
    if k_ok and d_ok:
        return right()
    if math.isclose(got_k, d, rel_tol=2e-2) and abs(got_d - k) < 0.5:
        return wrong("the two numbers are swapped: the offset first, then the "
                     "distance.", "swapped")
    if got_k == 0:
        return wrong("an offset of 0 compares a position with itself: the two "
                     "positions must differ.", "self")
    if abs(got_k - k_first_hundred) < 0.5:
        return wrong("that is the closest pair among the first hundred positions: "
                     "search all of 0..1000.", "first-hundred")
    if abs(got_k - k / 2) < 0.5:
        return wrong("at that offset the angle is near an odd multiple of π: the sine "
                     "is back near 0, but the cosine has changed sign. Both must come "
                     "back.", "half-turn")
    if not k_ok:
        return wrong(f"the offset {got_k:g} is not it: the distance at that offset is "
                     f"{2 * abs(math.sin(got_k / 2)):.2g}.", "offset")
    if math.isclose(got_d, d * d, rel_tol=2e-2):
        return wrong("the offset is right; your distance is the squared distance.",
                     "squared")
    if math.isclose(got_d, d / 2, rel_tol=2e-2):
        return wrong("the offset is right; your distance is half of it: a factor 2 is "
                     "missing.", "half")
    return wrong("the offset is right, the distance is not.", "distance")


def check_3(dot):
    """dot = PE_pos . PE_(pos+6), d_model = 4 (the same for every pos)."""
    pe = positional_encoding(16, 4)
    dots = [pe[pos] @ pe[pos + 6] for pos in range(10)]
    expected = dots[0]
    assert np.ptp(dots) < 1e-12                     # it depends on the offset only
    omega_1 = 10000 ** (-2 / 4)

    def near(value):  # the two distances, read off the chapter's three-decimal table
        return lambda a: a.ndim == 0 and math.isclose(a, value, rel_tol=5e-3)

    mistakes = [
        Mistake("wrong-frequency", math.cos(6) + math.cos(6 * 10000 ** (-1 / 4)),
                "the slow pair's frequency is off: ω_i = 10000^(-2i/d_model), with i "
                "the pair's index, not the column's."),
        Mistake("degrees",
                math.cos(math.radians(6)) + math.cos(math.radians(6 * omega_1)),
                "you took the angles in degrees: sin and cos here take radians."),
        Mistake("fast-pair-only", math.cos(6),
                "that is the fast pair alone: d_model = 4 has two pairs."),
        Mistake("slow-pair-only", math.cos(6 * omega_1),
                "that is the slow pair alone: d_model = 4 has two pairs."),
        Mistake("sines", math.sin(6) + math.sin(6 * omega_1),
                "you added sines: the dot product of two rotated pairs is the cosine "
                "of the angle between them."),
        Mistake("distance", near(float(np.linalg.norm(pe[0] - pe[6]))),
                "that is the distance between the two encodings, not their dot "
                "product."),
        Mistake("squared-distance", near(float(np.sum((pe[0] - pe[6]) ** 2))),
                "that is the squared distance between the two encodings, not their dot "
                "product."),
    ]
    return check_value(dot, expected, what="your dot product", mistakes=mistakes,
                       rtol=0, atol=6e-5)


def _float32_errors(pos):
    """Largest |angle in float32 - angle in float64| over the 256 frequencies."""
    i = np.arange(256)
    omega = 10000.0 ** (-2 * i / 512)
    omega32 = omega.astype(np.float32)
    exact = pos * omega
    both_rounded = np.float32(pos) * omega32                  # the folded block's way
    product_rounded = (pos * omega).astype(np.float32)        # only the product rounded
    err = np.abs(both_rounded.astype(np.float64) - exact)
    err_product = np.abs(product_rounded.astype(np.float64) - exact)
    return float(err.max()), float(err_product.max())


def check_4(answer):
    """answer = (estimate, measured): float32 angle error at pos = 100000."""
    pos = 100000
    spacing = float(np.spacing(np.float32(pos)))
    measured, product_only = _float32_errors(pos)
    measured_10k, _ = _float32_errors(10000)
    expected = [spacing / 2, measured]
    u = 2.0**-24                                     # float32's unit roundoff

    def first(value):
        return lambda a: a.shape == (2,) and math.isclose(a[0], value, rel_tol=2e-3)

    def second(value, abs_tol=0.0):
        return lambda a: a.shape == (2,) and math.isclose(a[1], value, rel_tol=2e-3,
                                                          abs_tol=abs_tol)

    mistakes = [
        Mistake("one-number", lambda a: a.shape != (2,),
                "give two numbers: (estimate, measured)."),
        Mistake("swapped", [measured, spacing / 2],
                "the two numbers are swapped: the estimate first, then the "
                "measurement."),
        Mistake("whole-spacing", first(spacing),
                "your estimate is the whole spacing: rounding to the nearest float32 "
                "is off by at most half of it."),
        Mistake("relative-bound", first(u * pos),
                "your estimate is the relative bound 2^-24 times 10^5; near 10^5 the "
                "float32 spacing is a power of two: use it."),
        Mistake("relative-precision",
                lambda a: a.shape == (2,) and 0 < a[0] < 1e-6,
                "your estimate is a relative precision: the error of the angle is "
                "absolute, and near 10^5 float32 numbers are far apart."),
        Mistake("measured-zero", second(0.0, abs_tol=1e-12),
                "your measured error is 0: were both angles computed in the same "
                "precision, or only at i = 0 (ω_0 = 1, exact)?"),
        Mistake("product-only", second(product_only),
                "you rounded only the product: the folded block rounds each frequency "
                "ω_i to float32 first, then multiplies in float32."),
        Mistake("pos-10000", second(measured_10k),
                "that is the error at pos = 10000: the exercise asks about 100000."),
    ]
    return check_value(answer, expected, what="your pair", mistakes=mistakes,
                       rtol=2e-3, atol=0)

"""Checkers for chapter 15's exercises (training).

check_1(peak, half_before, half_after): the peak of the paper's learning rate for
    d_model = 256 and warmup_steps = 8000, and the steps where it is half the peak.
check_2(first_98, first_999, corrected): Adam's first update (learning rate 1, gradient
    1, β₁ = 0.9) without the bias corrections for β₂ = 0.98 and 0.999, and with them.
check_3(p_true, p_other): the predicted probability of the correct next token, and of
    each other token, for a model at the floor of the smoothed loss (ε = 0.1, 12
    tokens).
check_4(scaled, unscaled): the mean largest weight of the first encoder layer at
    initialisation, with and without the 1/√d_k, recomputed in float64 from the ablation
    file's seeds and model (d_model = 64, one head) on the held-out sources it uses.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np

import mini_transformer as mt
from mini_transformer import tasks
from mini_transformer.optim import AdamState, adam_step

from . import UNANSWERED, Mistake, Verdict, check_value, unanswered, wrong
from . import Part, check_each

ABLATIONS = Path(__file__).resolve().parents[2] / "benchmarks/results/ablations.json"
L, V = 8, 12   # the reverse task: source length, vocabulary (BOS, EOS, 10 symbols)


def _rate(step, d_model, warmup):
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def check_1(peak, half_before, half_after) -> Verdict:
    """The peak rate, and the steps before and after it where the rate is half of it."""
    d, w = 256, 8000
    steps = np.arange(1, 8 * w + 1)
    rates = d**-0.5 * np.minimum(steps**-0.5, steps * w**-1.5)
    top = rates.max()
    before = int(steps[np.argmax(rates >= top / 2)])
    after = int(steps[(steps > w) & (rates <= top / 2 * (1 + 1e-12))][0])
    peak_mistakes = [
        Mistake("warmup-4000", _rate(4000, d, 4000),
                "your peak uses the paper's 4000 warm-up steps: this schedule has "
                "8000."),
        Mistake("d-512", _rate(w, 512, w),
                "your peak uses the paper's d_model = 512: this model has 256."),
        Mistake("no-d-factor", w**-0.5,
                "your peak leaves out the factor d_model^-0.5."),
    ]
    after_mistakes = [
        Mistake("inverse-step", 2 * w,
                "half_after is where a rate falling as 1/step would be half: this one "
                "falls as step^-0.5."),
        Mistake("steps-after-peak", after - w,
                "half_after counts the steps since the peak: give the step number."),
    ]
    return check_each(
        Part("peak", peak, top, peak_mistakes, rtol=1e-3),
        Part("half_before", half_before, before, rtol=0, atol=1.5),
        Part("half_after", half_after, after, after_mistakes, rtol=0, atol=1.5),
        praise="Check them with learning_rate.")


def check_2(first_98, first_999, corrected) -> Verdict:
    """The first update without the bias corrections (β₂ = 0.98, 0.999), and with."""
    b1, g = 0.9, 1.0

    def first(b2, m_factor=1 - b1, v_factor=None, root=math.sqrt):
        m = m_factor * g
        v = (1 - b2 if v_factor is None else v_factor) * g**2
        return m / root(v)

    def mistakes(b2):
        return [
            Mistake("no-sqrt", first(b2, root=lambda v: v),
                    "you divided by v: Adam divides by its square root."),
            Mistake("m-full", first(b2, m_factor=1.0),
                    "your m is the whole gradient: after one step it is (1 − β₁) g, "
                    "since it starts at 0."),
            Mistake("v-full", first(b2, v_factor=1.0),
                    "your v is the whole squared gradient: after one step it is "
                    "(1 − β₂) g², since it starts at 0."),
        ]

    zero = np.zeros(1)
    step = adam_step(zero, np.ones(1), AdamState.zeros_like(zero), lr=1.0)[0]
    return check_each(
        Part("first_98", first_98, first(0.98), mistakes(0.98), rtol=2e-3),
        Part("first_999", first_999, first(0.999), mistakes(0.999), rtol=2e-3),
        Part("corrected", corrected, abs(float(step[0])), [
            Mistake("uncorrected", lambda a: a.ndim == 0 and (
                abs(a - first(0.98)) < 2e-3 or abs(a - first(0.999)) < 7e-3),
                "corrected is one of the uncorrected updates: divide m by 1 − β₁ and "
                "v by 1 − β₂ first."),
        ], rtol=2e-3),
        praise="How many steps does the uncorrected error take to fade?")


def check_3(p_true, p_other) -> Verdict:
    """p_true, p_other: predicted probabilities of the correct token, of each other."""
    eps = 0.1
    if unanswered(p_true) and unanswered(p_other):
        return UNANSWERED
    pairs = [
        ("eps-over-n-minus-1", (1 - eps, eps / (V - 1)),
         "you spread ε over the 11 other tokens: the smoothing spreads it over all 12, "
         "the correct one included."),
        ("vocab-11", (1 - eps + eps / (V - 1), eps / (V - 1)),
         "you used 11 tokens: the vocabulary has 12, the correct one and 11 others."),
        ("no-eps-on-target", (1 - eps, eps / V),
         "your p_other is right, but the correct token also gets its share ε/n_vocab "
         "of the smoothing."),
        ("certain", (1.0, 0.0),
         "at the floor the model's probabilities equal the smoothed targets, not the "
         "one-hot ones."),
    ]
    tol = (5e-4, 5e-5)   # the measured values of a model at the floor pass too
    try:
        got = (float(p_true), float(p_other))
    except (TypeError, ValueError):
        got = None
    expected = (1 - eps + eps / V, eps / V)
    right_pair = got is not None and all(
        abs(g - e) < t for g, e, t in zip(got, expected, tol))
    if got is not None and not right_pair:
        for key, wrong_pair, message in pairs:
            if all(abs(g - w) < t for g, w, t in zip(got, wrong_pair, tol)):
                return wrong(message, key)
    return check_each(
        Part("p_true", p_true, expected[0], rtol=0, atol=tol[0]),
        Part("p_other", p_other, expected[1], rtol=0, atol=tol[1]),
        praise="Now measure them on the held-out sequences.")


@functools.lru_cache(maxsize=1)
def _largest_weights():
    """Per seed: the mean largest weight of encoder layer 0, scaled, unscaled, and with
    the scores multiplied by √d_k once more than the unscaled ones."""
    config = json.loads(ABLATIONS.read_text())["experiments"]["scale_dk64"]["config"]

    def times(c):
        def attention(q, k, v, mask=None):
            return mt.scaled_dot_product_attention(q * c(q.shape[-1]), k, v, mask)
        return attention

    variants = {"scaled": None, "unscaled": times(math.sqrt), "twice": times(float)}
    result = {name: [] for name in variants}
    overall = {name: [] for name in variants}
    n_keys = 0
    for seed in config["seeds"]:
        params = mt.TransformerParams.random(np.random.default_rng(seed), vocab_size=V,
                                             **config["model"])
        src = tasks.reverse_task(np.random.default_rng(2000 + seed), 500, L, V)[0]
        x = mt.embed(src, params.embedding)
        for name, attention in variants.items():
            w = mt.multi_head_attention(x, params.encoder_layers[0].attn,
                                        attention=attention)[1]
            result[name].append(float(w.max(-1).mean()))
            overall[name].append(float(w.max()))
            n_keys = w.shape[-1]
    return {k: np.array(v) for k, v in result.items()}, overall, n_keys


def check_4(scaled, unscaled) -> Verdict:
    """The mean largest weight of the first encoder layer at initialisation."""
    if unanswered(scaled) and unanswered(unscaled):
        return UNANSWERED
    per_seed, overall, n_keys = _largest_weights()
    sc, un = per_seed["scaled"].mean(), per_seed["unscaled"].mean()
    swapped = check_value([scaled, unscaled], [un, sc], atol=1e-4) if not (
        unanswered(scaled) or unanswered(unscaled)) else None
    if swapped is not None and swapped.ok:
        return wrong("the two are swapped: the scaled model first.", "swapped")

    def mistakes(name):
        return [
            Mistake("one-seed", per_seed[name][0],
                    f"your {name} value is that of the first seed alone: average over "
                    "every seed of the ablation."),
            Mistake("overall-max", max(overall[name]),
                    f"your {name} value is the largest weight of all: take each "
                    "query's largest weight, then their mean."),
            Mistake("mean-weight", 1 / n_keys,
                    f"your {name} value is the mean weight, 1/n for every softmax row: "
                    "take each row's largest."),
        ]

    twice = Mistake(
        "scaled-twice", per_seed["twice"].mean(),
        "your unscaled scores are √d_k times too large: without the scale they are "
        "q · k, not q · k √d_k.")
    return check_each(
        Part("scaled", scaled, sc, mistakes("scaled"), rtol=0, atol=1e-4),
        Part("unscaled", unscaled, un, [*mistakes("unscaled"), twice],
             rtol=0, atol=1e-4),
        praise="Unscaled, the softmax starts nearly one-hot.")

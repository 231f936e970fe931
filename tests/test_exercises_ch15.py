"""book/exercises/ch15.py: each checker accepts a solution written here independently
(closed forms, attention weights recomputed in torch, the ablation file's own float32
values) and names the mistake in answers written as a reader who made it would write
them."""

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import mini_transformer as mt
from mini_transformer import tasks

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book"))
from exercises import ch15  # noqa: E402
from helpers import refused  # noqa: E402



# --- 1. the schedule for d_model = 256, warmup_steps = 8000 ---------------------------

# peak d^-0.5 w^-0.5 at step w; before it the rate is step d^-0.5 w^-1.5: half at w / 2;
# after it d^-0.5 step^-0.5: half where step^-0.5 = w^-0.5 / 2, at step 4w
PEAK = 1 / math.sqrt(256 * 8000)


def test_1_right():
    assert ch15.check_1(PEAK, 4000, 32000).ok is True
    assert ch15.check_1(6.988e-4, 4000, 32000).ok is True   # rounded as printed


@pytest.mark.parametrize("answer, key, word", [
    ((1 / math.sqrt(256 * 4000), 4000, 32000), "warmup-4000", "4000"),
    ((1 / math.sqrt(512 * 8000), 4000, 32000), "d-512", "512"),
    ((PEAK, 4000, 16000), "inverse-step", "1/step"),
    ((PEAK, 4000, 24000), "steps-after-peak", "step number"),
])
def test_1_mistakes(answer, key, word):
    assert refused(ch15.check_1(*answer), key, word)


def test_1_unanswered():
    assert ch15.check_1(..., ..., ...).ok is None


# --- 2. Adam's first step ------------------------------------------------------------

def test_2_right():
    # m = 0.1 g, v = (1 − β₂) g²: the uncorrected update is 0.1 / √(1 − β₂); corrected,
    # m̂ = g and v̂ = g², so the update is g / (|g| + ε) with ε = 1e-9
    uncorrected = (0.1 / math.sqrt(0.02), 0.1 / math.sqrt(0.001))
    assert ch15.check_2(*uncorrected, 1 / (1 + 1e-9)).ok is True
    assert ch15.check_2(0.707, 3.162, 1).ok is True


@pytest.mark.parametrize("answer, key, word", [
    ((0.1 / 0.02, 0.1 / 0.001, 1.0), "no-sqrt", "square root"),
    ((1 / math.sqrt(0.02), 1 / math.sqrt(0.001), 1.0), "m-full", "(1 − β₁)"),
    ((0.1, 0.1, 1.0), "v-full", "(1 − β₂)"),
    ((0.1 / math.sqrt(0.02), 0.1 / math.sqrt(0.001), 0.1 / math.sqrt(0.02)),
     "uncorrected", "divide"),
])
def test_2_mistakes(answer, key, word):
    assert refused(ch15.check_2(*answer), key, word)


def test_2_unanswered():
    assert ch15.check_2(..., ..., ...).ok is None


# --- 3. the probabilities at the floor ------------------------------------------------

def test_3_right():
    # p = q: the correct token 1 − ε + ε/12, each other ε/12
    assert ch15.check_3(0.9 + 0.1 / 12, 0.1 / 12).ok is True
    assert ch15.check_3(0.9084, 0.0083).ok is True    # the chapter's measured values


@pytest.mark.parametrize("answer, key, word", [
    ((0.9, 0.1 / 11), "eps-over-n-minus-1", "11 other"),
    ((0.9 + 0.1 / 11, 0.1 / 11), "vocab-11", "12"),
    ((0.9, 0.1 / 12), "no-eps-on-target", "ε/n_vocab"),
    ((1.0, 0.0), "certain", "one-hot"),
])
def test_3_mistakes(answer, key, word):
    assert refused(ch15.check_3(*answer), key, word)


def test_3_unanswered():
    assert ch15.check_3(..., ...).ok is None


# --- 4. saturation at initialisation --------------------------------------------------

EXPERIMENT = json.loads((ROOT / "benchmarks/results/ablations.json").read_text())[
    "experiments"]["scale_dk64"]


def torch_largest_weights(scaled):
    """Per seed, the mean over queries of the largest weight of encoder layer 0's head,
    from the projections in torch (not through mt.multi_head_attention)."""
    config = EXPERIMENT["config"]
    means = []
    for seed in config["seeds"]:
        p = mt.TransformerParams.random(np.random.default_rng(seed), vocab_size=12,
                                        **config["model"])
        src = tasks.reverse_task(np.random.default_rng(2000 + seed), 500, 8, 12)[0]
        x = torch.tensor(mt.embed(src, p.embedding))               # (500, n, 64)
        a = p.encoder_layers[0].attn
        q = torch.einsum("bnd,hdk->bhnk", x, torch.tensor(a.W_Q)) + torch.tensor(
            a.b_Q)[:, None]
        k = torch.einsum("bnd,hdk->bhnk", x, torch.tensor(a.W_K)) + torch.tensor(
            a.b_K)[:, None]
        scores = q @ k.mT / (math.sqrt(q.shape[-1]) if scaled else 1.0)
        means.append(float(torch.softmax(scores, -1).amax(-1).mean()))
    return means


@pytest.fixture(scope="module")
def largest():
    return {s: torch_largest_weights(s) for s in (True, False)}


def test_4_right(largest):
    scaled, unscaled = np.mean(largest[True]), np.mean(largest[False])
    assert ch15.check_4(scaled, unscaled).ok is True
    # the ablation file's float32 torch values, averaged, pass too
    file = {s: np.mean([r["initial"]["max_weight_enc0"] for r in EXPERIMENT["runs"]
                        if r["setting"] == s]) for s in ("scaled", "unscaled")}
    assert ch15.check_4(file["scaled"], file["unscaled"]).ok is True


def test_4_mistakes(largest):
    scaled, unscaled = np.mean(largest[True]), np.mean(largest[False])
    assert refused(ch15.check_4(unscaled, scaled), "swapped", "swapped")
    assert refused(ch15.check_4(largest[True][0], unscaled), "one-seed", "every seed")
    assert refused(ch15.check_4(scaled, 1 / 8), "mean-weight", "1/n")


def test_4_unanswered():
    assert ch15.check_4(..., ...).ok is None

"""Checkers for chapter 10's exercises (the whole model).

check_1: the big model's parameter count with n_vocab = 37000, tied and untied: a
    pair of ints (this chapter's model: shared embedding, no final LayerNorms).
check_2: the cached step t at which a layer's self-attention scores cost as much as the
    rest of the layer, for the base and the big model with n_src = 32: a pair of ints.
check_3: the big model's key/value cache in float16 (batch 64, n_src = 256, 256 target
    tokens) and its parameters in float16, in GiB: a pair of floats.

Exercise 4 (the cache with pre-LN: an observation, True or False) has no checker.
"""

from __future__ import annotations

import numpy as np

from . import UNANSWERED, Mistake, Verdict, check_value, unanswered

N_VOCAB, N_LAYERS = 37000, 6
SIZES = {"base": dict(d=512, d_ff=2048), "big": dict(d=1024, d_ff=4096)}
GIB = 2**30


def _pair(i, *values, rtol=0.0, atol=0.5):
    """A predicate: the answer is a pair whose entry i is one of values."""
    def matches(a):
        return a.shape == (2,) and any(
            abs(float(a[i]) - v) <= atol + rtol * abs(v) for v in values)
    return matches


def _both(first, second, **tol):
    def matches(a):
        return _pair(0, first, **tol)(a) and _pair(1, second, **tol)(a)
    return matches


# --- exercise 1 -----------------------------------------------------------------------

def _layers(d, d_ff, *, cross=True):
    attention = 4 * d * d + 4 * d
    ffn = 2 * d * d_ff + d_ff + d
    encoder = attention + ffn + 2 * 2 * d
    decoder = (2 if cross else 1) * attention + ffn + (3 if cross else 2) * 2 * d
    return N_LAYERS * (encoder + decoder)


def check_1(counts) -> Verdict:
    """counts: (the big model's parameters with a tied embedding, untied)."""
    if unanswered(counts):
        return UNANSWERED
    d, d_ff = SIZES["big"]["d"], SIZES["big"]["d_ff"]
    E = N_VOCAB * d
    tied = E + _layers(d, d_ff)
    mistakes = [
        Mistake("swapped", np.array([tied + 2 * E, tied]),
                "the two numbers are swapped: tied first, then untied."),
        Mistake("untied-one", _pair(1, tied + E),
                "your untied count adds one matrix: untied, the encoder's input, the "
                "decoder's input and the output projection are three separate "
                "n_vocab × d_model matrices."),
        Mistake("final-norms", _pair(0, tied + 4 * d),
                "you counted the two final LayerNorms of `torch.nn.Transformer`: this "
                "chapter's model has none."),
        Mistake("no-embedding", _pair(0, tied - E),
                "your tied count leaves out the shared embedding (n_vocab × d_model, "
                "counted once)."),
        Mistake("no-cross-attention", _pair(0, E + _layers(d, d_ff, cross=False)),
                "your decoder layers have no cross-attention: each has two attentions "
                "and three LayerNorms."),
    ]
    return check_value(counts, [tied, tied + 2 * E], what="your pair of counts",
                       mistakes=mistakes, rtol=0, atol=0.5)


# --- exercise 2 -----------------------------------------------------------------------

def _step(d, d_ff, n_src=32, *, three=3, with_src=True, with_ffn=True, minus=1):
    # 4 (t + 1) d = 12 d² + 4 n_src d + 4 d d_ff  <=>  t + 1 = 3 d + n_src + d_ff
    return three * d + (n_src if with_src else 0) + (d_ff if with_ffn else 0) - minus


def _steps(**kw):
    return np.array([_step(**SIZES[name], **kw) for name in ("base", "big")])


def check_2(steps) -> Verdict:
    """steps: (t for the base model, t for the big model), n_src = 32."""
    if unanswered(steps):
        return UNANSWERED
    expected = _steps()
    mistakes = [
        Mistake("swapped", expected[::-1],
                "the two numbers are swapped: the base model first, then the big one."),
        Mistake("t-plus-one", _steps(minus=0),
                "that is t + 1, the number of keys at step t: the question asks for "
                "t."),
        Mistake("no-n-src", _steps(with_src=False),
                "you left out the cross-attention's scores over the n_src memory "
                "keys."),
        Mistake("no-ffn", _steps(with_ffn=False),
                "you left out the FFN's products, 4 d_model d_ff per layer."),
        Mistake("no-projections", _steps(three=0),
                "you left out the projections of the new row, 12 d_model² per layer."),
    ]
    return check_value(steps, expected, what="your pair of steps", mistakes=mistakes,
                       rtol=0, atol=0.5)


# --- exercise 3 -----------------------------------------------------------------------

def _cache_bytes(*, kv=2, attentions=2, layers=N_LAYERS, batch=64, nbytes=2, n=256):
    d = SIZES["big"]["d"]
    return kv * attentions * layers * n * d * batch * nbytes


def check_3(gib) -> Verdict:
    """gib: (the key/value cache, the parameters), both in float16, in GiB."""
    if unanswered(gib):
        return UNANSWERED
    d, d_ff = SIZES["big"]["d"], SIZES["big"]["d_ff"]
    tied = N_VOCAB * d + _layers(d, d_ff)
    cache, params = _cache_bytes(), 2 * tied
    tol = dict(rtol=5e-3, atol=0.0)

    def first(*values):
        return _pair(0, *(v / GIB for v in values), **tol)

    def second(*values):
        return _pair(1, *(v / GIB for v in values), **tol)

    mistakes = [
        Mistake("swapped", _both(params / GIB, cache / GIB, **tol),
                "the two numbers are swapped: the cache first, then the parameters."),
        Mistake("gb", lambda a: first(cache * GIB / 1e9)(a)
                or second(params * GIB / 1e9)(a),
                "that is in GB of 10⁹ bytes: a GiB is 2³⁰ bytes."),
        Mistake("float32", lambda a: first(2 * cache)(a) or second(2 * params)(a),
                "a float16 number takes 2 bytes, not 4."),
        Mistake("half-cache", first(cache / 2),
                "your cache is half of it: every decoder layer keeps keys and values, "
                "for its self-attention (the target's positions) and for its "
                "cross-attention (the source's)."),
        Mistake("one-layer", first(cache / N_LAYERS, cache / N_LAYERS / 2),
                "the cache holds keys and values for each of the N = 6 decoder "
                "layers."),
        Mistake("no-batch", first(cache / 64, cache / 64 / 2),
                "that is the cache of one sentence: the batch holds 64."),
        Mistake("untied", second(params + 2 * 2 * N_VOCAB * d),
                "those are the untied parameters: the big model shares its embedding."),
    ]
    return check_value(gib, [cache / GIB, params / GIB], what="your pair of sizes",
                       mistakes=mistakes, **tol)

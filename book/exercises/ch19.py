"""Checkers for chapter 19's exercises (what changed since 2017).

check_1: LLaMA's SwiGLU hidden width for d_model = 4096: 2/3 · 4 d_model, rounded up to
    a multiple of 256.
check_2: the bytes of key/value cache one token adds to a model with h = 32, h_kv = 8,
    d_k = 128 and 32 layers, in float16.
check_3: a function gqa_by_copies(q, k, v): grouped-query attention computed by copying
    each key/value head to its query heads and calling the package's
    ``scaled_dot_product_attention``.
check_4: a function unrotate(y, positions) that undoes ``rotary_embedding``.

The function checkers run the reader's function on NumPy arrays and refuse torch's
answer: a torch tensor returned, or torch's attention or normalisation called.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import sys

import numpy as np

import mini_transformer as mt
from exercises import (Mistake, UNANSWERED, check_function, check_value, right,
                       unanswered, wrong)


def check_1(d_ff):
    """d_ff: LLaMA's hidden width for d_model = 4096."""
    d_model = 4096
    exact = 2 * 4 * d_model / 3
    expected = 256 * math.ceil(int(exact) / 256)
    mistakes = [
        Mistake("relu-width", 4 * d_model, "that is 4 d_model, the ReLU network's width: "
                "the gated network has a third matrix, so its width shrinks by 2/3."),
        Mistake("not-rounded", lambda a: a.ndim == 0 and abs(float(a) - exact) < 1,
                "that is 2/3 · 4 d_model itself: LLaMA's code then rounds it up to a "
                "multiple of 256."),
        Mistake("rounded-down", 256 * math.floor(exact / 256),
                "that is rounded down: LLaMA's code rounds up to the next multiple of "
                "256."),
        Mistake("two-thirds-of-d", lambda a: a.ndim == 0 and float(a) in (
                    256 * math.ceil(2 * d_model / 3 / 256), round(2 * d_model / 3)),
                "that is 2/3 of d_model: the width being shrunk is the ReLU network's "
                "4 d_model."),
        Mistake("not-a-multiple", lambda a: a.ndim == 0 and float(a) % 256 != 0,
                "LLaMA's widths are multiples of 256: round 2/3 · 4 d_model up to one."),
    ]
    return check_value(d_ff, expected, what="your width", mistakes=mistakes, rtol=0,
                       atol=0.5)


def check_2(n_bytes):
    """n_bytes: cache bytes per token, all layers: h 32, h_kv 8, d_k 128, 32 layers, fp16."""
    h, h_kv, d_k, layers, size = 32, 8, 128, 32, 2
    expected = 2 * h_kv * d_k * size * layers
    mistakes = [
        Mistake("one-of-k-v", expected // 2, "that is half: the cache keeps a key row "
                "and a value row for each key/value head (or you counted numbers, and "
                "float16 numbers are 2 bytes each)."),
        Mistake("query-heads", 2 * h * d_k * size * layers, "that counts h = 32 heads: "
                "only the h_kv = 8 key/value heads are cached; the query heads share "
                "them."),
        Mistake("one-layer", 2 * h_kv * d_k * size, "that is one layer: every one of "
                "the 32 layers keeps its own keys and values."),
        Mistake("float32", 2 * h_kv * d_k * 4 * layers, "that is float32 (4 bytes): "
                "the model stores float16, 2 bytes a number."),
        Mistake("numbers", 2 * h_kv * d_k, "that counts the numbers of one layer, not "
                "bytes over all layers."),
    ]
    return check_value(n_bytes, expected, what="your count", mistakes=mistakes, rtol=0,
                       atol=0.5)


@contextlib.contextmanager
def _torch_watched():
    """Record the calls of torch's attention and normalisation while the block runs."""
    used = []
    torch = sys.modules.get("torch")
    if torch is None:
        yield used
        return
    F = torch.nn.functional
    names = ("scaled_dot_product_attention", "rms_norm", "multi_head_attention_forward")
    saved = {n: getattr(F, n) for n in names if hasattr(F, n)}

    def spy(name, original):
        def call(*args, **kwargs):
            used.append(name)
            return original(*args, **kwargs)
        return call

    for n, f in saved.items():
        setattr(F, n, spy(n, f))
    try:
        yield used
    finally:
        for n, f in saved.items():
            setattr(F, n, f)


TORCH_REFUSED = ("compute with mini_transformer on the NumPy arrays you are given: "
                 "torch's {what} is what the chapter checks the package against, not "
                 "an answer to this exercise.")


def _with_the_package(fn, cases):
    """None if fn computes with NumPy on every case, else the verdict that refuses it."""
    for args in cases:
        with _torch_watched() as used:
            try:
                got = fn(*args)
            except NotImplementedError:
                return UNANSWERED
            except Exception:   # check_function reports what it raised
                return None
        got = got[0] if isinstance(got, tuple) else got
        if used:
            return wrong(TORCH_REFUSED.format(what=f"F.{used[0]}"), "torch")
        if type(got).__module__.split(".")[0] == "torch":
            return wrong(TORCH_REFUSED.format(what="output"), "torch")
    return None


def _gqa_cases():
    rng = np.random.default_rng(19)
    cases = []
    for h, h_kv, n_q, n_k, d_k, d_v in ((4, 2, 3, 3, 2, 2), (6, 2, 2, 5, 4, 3),
                                        (4, 4, 3, 4, 2, 2), (4, 1, 3, 4, 2, 5)):
        cases.append((rng.normal(size=(h, n_q, d_k)), rng.normal(size=(h_kv, n_k, d_k)),
                      rng.normal(size=(h_kv, n_k, d_v))))
    return cases


def _tiled_heads(q, k, v):
    copies = q.shape[-3] // k.shape[-3]
    return mt.scaled_dot_product_attention(q, np.tile(k, (copies, 1, 1)),
                                           np.tile(v, (copies, 1, 1)))[0]


def _unscaled(q, k, v):
    copies = q.shape[-3] // k.shape[-3]
    k, v = np.repeat(k, copies, axis=0), np.repeat(v, copies, axis=0)
    return mt.softmax(q @ np.swapaxes(k, -1, -2), axis=-1) @ v


def _calls_grouped_query(fn, cases):
    """Whether fn runs the package's grouped-query attention (forward or backward), by
    whatever name it was imported: a profiler watches for their code objects."""
    module = sys.modules["mini_transformer.grouped_query"]
    targets = {inspect.unwrap(f).__code__ for f in (
        module.grouped_query_attention, module.grouped_query_attention_backward)}
    used = []

    def watch(frame, event, arg):
        if event == "call" and frame.f_code in targets:
            used.append(True)

    previous = sys.getprofile()
    sys.setprofile(watch)
    try:
        for args in cases:
            try:
                fn(*args)
            except Exception:   # check_function reports what it raised
                pass
    finally:
        sys.setprofile(previous)
    return bool(used)


def check_3(gqa_by_copies):
    """gqa_by_copies(q, k, v) -> output (h, n_q, d_v), q (h, n_q, d_k), k (h_kv, n_k, d_k)."""
    if unanswered(gqa_by_copies):
        return UNANSWERED
    if not callable(gqa_by_copies):
        return wrong(f"gqa_by_copies should be a function, got "
                     f"{type(gqa_by_copies).__name__}.")
    cases = _gqa_cases()
    refused = _with_the_package(gqa_by_copies, cases)
    if refused is not None:
        return refused
    if _calls_grouped_query(gqa_by_copies, cases):
        return wrong("your function calls the package's grouped_query_attention, the "
                     "function this exercise rebuilds: copy the key/value heads and "
                     "call mt.scaled_dot_product_attention instead.", "package-gqa")
    expected = [(args, mt.grouped_query_attention(*args)[0]) for args in cases]
    return check_function(gqa_by_copies, expected, what="gqa_by_copies", rtol=1e-9,
                          atol=1e-12, mistakes=[
        Mistake("tiled", _tiled_heads, "query head i read key/value head i mod h_kv: "
                "np.tile repeats the whole stack of heads, while each key/value head "
                "must be repeated h / h_kv times in place (np.repeat on the head axis)."),
        Mistake("no-scale", _unscaled, "the scores were not divided by √d_k: "
                "scaled_dot_product_attention does that for you."),
    ])


def _unrotate_cases():
    rng = np.random.default_rng(91)
    return [(mt.rotary_embedding(x, p), p) for x, p in (
        (rng.normal(size=(4, 6)), np.arange(4)),
        (rng.normal(size=(2, 3, 8)), np.array([5, 17, 300])),
    )]


def check_4(unrotate):
    """unrotate(y, positions) -> x with rotary_embedding(x, positions) = y."""
    if unanswered(unrotate):
        return UNANSWERED
    if not callable(unrotate):
        return wrong(f"unrotate should be a function, got {type(unrotate).__name__}.")
    cases = _unrotate_cases()
    refused = _with_the_package(unrotate, cases)
    if refused is not None:
        return refused
    # x, read off y pair by pair with complex numbers: x̃ = ỹ e^(−i pos ω)
    expected = []
    for y, p in cases:
        z = (y[..., 0::2] + 1j * y[..., 1::2]) * np.exp(-1j * mt.rotary_angles(
            p, y.shape[-1]))
        expected.append(((y, p), np.stack([z.real, z.imag], axis=-1).reshape(y.shape)))
    return check_function(unrotate, expected, what="unrotate", rtol=1e-9, atol=1e-12,
                          mistakes=[
        Mistake("unchanged", lambda y, p: y, "that returns y unchanged: each pair must "
                "turn back by its angle pos · ω_i."),
        Mistake("same-way", lambda y, p: mt.rotary_embedding(y, p),
                "that turns y once more the same way (the angle doubles): turn by "
                "−pos · ω_i instead."),
    ])

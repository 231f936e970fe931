"""What the benchmark scripts share: the machine's description, timing, and the
``torch.nn.Transformer`` reference trainer the package's training step is compared
with."""

from __future__ import annotations

import math
import os
import platform
import re
import statistics
import time
import tracemalloc
from pathlib import Path

import numpy as np

import mini_transformer as mt
from mini_transformer.optim import learning_rate
from mini_transformer.torch.convert import to_torch, transformer_from_torch


def load_average():
    return [round(x, 2) for x in os.getloadavg()]


def cpu_model():
    try:
        text = Path("/proc/cpuinfo").read_text()
        return re.search(r"model name\s*:\s*(.*)", text).group(1).strip()
    except (OSError, AttributeError):
        return platform.processor() or "unknown"


def peak_traced_bytes(fn):
    """Peak of NumPy (and Python) allocations during fn(), by tracemalloc."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = fn()
        del out
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def timed(fn, reps, sync=lambda: None):
    """The seconds of each of ``reps`` calls of fn (``sync`` waits for a device)."""
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return times


def median_time(fn, reps, untimed=1):
    """The median seconds of ``reps`` calls of fn after ``untimed`` calls (first
    touch of buffers, thread pools)."""
    for _ in range(untimed):
        fn()
    return statistics.median(timed(fn, reps))


class TorchNNTrainer:
    """The reference: ``torch.nn.Transformer`` built from the params
    (``mini_transformer.torch.convert.to_torch``: the same layers, final norms only where the
    params have them) with the same tied embedding, √d_model scale and sinusoidal
    encoding, ``torch.nn.functional.cross_entropy`` and ``torch.optim.Adam`` with the
    paper's β = (0.9, 0.98), ε = 1e-9; float32, autograd.

    step(src, tgt, step) trains on one batch (tgt holds BOS ... EOS: tgt[:, :-1] in,
    tgt[:, 1:] out) at ``lr`` or, when ``warmup`` is given, the paper's schedule
    ``learning_rate(step, d_model, warmup)``; ``pad_id`` masks padded keys and
    targets; ``p_drop`` is dropout on the embedded inputs and every sub-layer.
    """

    def __init__(self, params, *, pad_id=None, p_drop=0.0, label_smoothing=0.0,
                 lr=1e-4, warmup=None, seed=0):
        import torch

        self.torch = torch
        torch.manual_seed(seed)
        self.pad_id, self.smoothing, self.lr, self.warmup = (pad_id, label_smoothing,
                                                             lr, warmup)
        self.d_model = params.d_model
        self.model = to_torch(params, dtype=torch.float32).train()
        for module in self.model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = p_drop
        self.E = torch.nn.Parameter(torch.tensor(params.embedding, dtype=torch.float32))
        self.pe = torch.as_tensor(mt.positional_encoding(512, self.d_model),
                                  dtype=torch.float32)
        self.drop = torch.nn.Dropout(p_drop)
        self.opt = torch.optim.Adam([self.E, *self.model.parameters()], lr=lr,
                                    betas=(0.9, 0.98), eps=1e-9)

    def embed(self, ids):
        return self.drop(self.E[ids] * math.sqrt(self.d_model) + self.pe[: ids.shape[1]])

    def step(self, src, tgt, step=1):
        torch = self.torch
        if self.warmup is not None:
            for group in self.opt.param_groups:
                group["lr"] = learning_rate(step, self.d_model, self.warmup)
        src, tgt = torch.as_tensor(src), torch.as_tensor(tgt)
        tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
        n = tgt_in.shape[1]
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
        pad = None if self.pad_id is None else src == self.pad_id
        h = self.model(self.embed(src), self.embed(tgt_in), tgt_mask=causal,
                       src_key_padding_mask=pad, memory_key_padding_mask=pad)
        loss = torch.nn.functional.cross_entropy(
            (h @ self.E.T).reshape(-1, self.E.shape[0]), tgt_out.reshape(-1),
            ignore_index=-100 if self.pad_id is None else self.pad_id,
            label_smoothing=self.smoothing)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()

    def eval_params(self):
        """The weights now, as the package's float32 params."""
        return transformer_from_torch(self.model, embedding=self.E).map(
            lambda a: a.astype(np.float32))

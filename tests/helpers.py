"""Helpers shared by the test modules (imported as ``from helpers import ...``)."""

from __future__ import annotations

import numpy as np
import torch

# float64 agreement with an oracle, and float32 agreement.
TOL64 = 1e-10
TOL32 = 1e-5


def t64(a, **kwargs):
    """A NumPy array as a float64 torch tensor (a copy)."""
    return torch.tensor(np.asarray(a), dtype=torch.float64, **kwargs)


def to_numpy(t):
    """A torch tensor (any dtype/device, maybe requiring grad) as float64 NumPy."""
    return t.detach().to("cpu", torch.float64).numpy()


def max_abs(a, b) -> float:
    """max |a - b| after moving both to float64 NumPy."""
    a = to_numpy(a) if torch.is_tensor(a) else np.asarray(a, dtype=np.float64)
    b = to_numpy(b) if torch.is_tensor(b) else np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def refused(verdict, key, word):
    """A checker's verdict refuses the answer, naming mistake ``key`` with ``word``."""
    assert verdict.ok is False, verdict.message
    assert verdict.mistake == key, (verdict.mistake, verdict.message)
    assert word in verdict.message
    return True


class FixedMask(torch.nn.Module):
    """Stands in for a torch.nn.Dropout: multiplies by a mask drawn beforehand."""

    def __init__(self, mask):
        super().__init__()
        self.mask = mask

    def forward(self, x):
        return x * self.mask

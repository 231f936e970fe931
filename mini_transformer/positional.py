"""Sinusoidal positional encoding (chapter 6)."""

from __future__ import annotations

import numpy as np


def positional_encoding(n_positions: int, d_model: int, dtype=np.float64):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(same angle).

    Returns a NumPy array (n_positions, d_model), computed in float64 and then
    cast to ``dtype``. An odd ``d_model`` is allowed: the last column is a sine
    with no cosine partner, (d_model + 1) / 2 frequencies in all.
    Move it to torch with ``torch.as_tensor(pe, device=x.device, dtype=x.dtype)``.
    """
    for name, n in (("n_positions", n_positions), ("d_model", d_model)):
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
            raise ValueError(f"{name} must be a positive integer, got {n!r}")
    pos = np.arange(n_positions, dtype=np.float64)[:, None]      # (n, 1)
    two_i = (np.arange(d_model) // 2 * 2).astype(np.float64)     # 0, 0, 2, 2, ...
    angle = pos / 10000.0 ** (two_i / d_model)                   # (n, d_model)
    pe = np.where(np.arange(d_model) % 2 == 0, np.sin(angle), np.cos(angle))
    return pe.astype(dtype)

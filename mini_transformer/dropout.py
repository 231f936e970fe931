"""Residual dropout (the paper's §5.4): "We apply dropout to the output of each
sub-layer, before it is added to the sub-layer input and normalized. In addition, we
apply dropout to the sums of the embeddings and the positional encodings in both the
encoder and decoder stacks." P_drop = 0.1 for the base model.

Dropout(x) = x ⊙ M,  M = B / (1 − p),  B ~ Bernoulli(1 − p) elementwise

(inverted dropout, as ``torch.nn.functional.dropout``: the kept entries are scaled up
in training so that nothing changes at evaluation, where dropout is off). Its
backward is the same product: ∂L/∂x = ∂L/∂Dropout(x) ⊙ M, with the mask the forward
drew. A mask of None means no dropout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from array_api_compat import array_namespace, device, is_torch_array


def dropout(x, mask):
    """x ⊙ M; x unchanged when mask is None. The backward is the same call."""
    return x if mask is None else x * mask


def dropout_mask(rng, p_drop: float, shape, like):
    """M = B / (1 − p) with B ~ Bernoulli(1 − p), of ``shape``, in the library,
    dtype and device of ``like``; None when p_drop == 0.

    rng: a NumPy Generator (the mask is drawn on the CPU, at ``like``'s precision,
    and moved to ``like``'s device) or, for torch arrays, a ``torch.Generator`` on
    their device.
    """
    _check_rate(p_drop, rng)
    if p_drop == 0:
        return None
    xp = array_namespace(like)
    u = _uniform(rng, tuple(shape), like)               # U[0, 1), like's dtype
    keep = xp.astype(u >= p_drop, like.dtype)           # B: P(keep) = 1 − p
    return keep / (1 - p_drop)


def _uniform(rng, shape, like):
    """U[0, 1) of ``shape`` in one call of ``rng``, at ``like``'s precision (float32
    draws float32: no float64 array made and cast), on ``like``'s device."""
    xp = array_namespace(like)
    if is_torch_array(like) and type(rng).__name__ == "Generator" \
            and type(rng).__module__.startswith("torch"):
        import torch

        return torch.rand(shape, generator=rng, dtype=like.dtype, device=like.device)
    dtype = np.float32 if like.dtype == xp.float32 else np.float64
    return xp.asarray(rng.random(shape, dtype=dtype), dtype=like.dtype,
                      device=device(like))


@dataclass(frozen=True)
class DropoutMasks:
    """One mask per dropout site of the whole model, drawn before a forward pass so
    that its backward can use the same ones.

    src, tgt: (..., n, d_model), the embedded source and target (embedding + PE)
    encoder: one (attention, feed-forward) pair per encoder layer
    decoder: one (self-attention, cross-attention, feed-forward) triple per decoder
    layer
    """

    src: object
    tgt: object
    encoder: tuple
    decoder: tuple

    @classmethod
    def draw(cls, rng, p_drop, params, x, y):
        """Masks for a model ``params`` whose embedded source is x (..., n_src,
        d_model) and target y (..., n_tgt, d_model); None when p_drop == 0.
        One call of ``rng`` draws them all, at x's precision, laid out in this order:
        source, target, encoder layers (attention, feed-forward), decoder layers
        (self-attention, cross-attention, feed-forward); each mask is a view of it."""
        _check_rate(p_drop, rng)
        if p_drop == 0:
            return None
        n_enc, n_dec = len(params.encoder_layers), len(params.decoder_layers)
        sizes = [math.prod(x.shape), math.prod(y.shape)]
        sizes += [sizes[0]] * (2 * n_enc) + [sizes[1]] * (3 * n_dec)
        flat = dropout_mask(rng, p_drop, (sum(sizes),), x)
        xp, start, views = array_namespace(x), 0, []
        for i, n in enumerate(sizes):
            like = x if i == 0 or 2 <= i < 2 + 2 * n_enc else y
            views.append(xp.reshape(flat[start:start + n], like.shape))
            start += n
        src, tgt, rest = views[0], views[1], views[2:]
        encoder = tuple((rest[2 * i], rest[2 * i + 1]) for i in range(n_enc))
        rest = rest[2 * n_enc:]
        decoder = tuple(tuple(rest[3 * i:3 * i + 3]) for i in range(n_dec))
        return cls(src, tgt, encoder, decoder)


def _check_rate(p_drop, rng):
    if isinstance(p_drop, bool) or not isinstance(p_drop, (int, float)) \
            or not 0 <= p_drop < 1:
        raise ValueError(f"p_drop must be a number in [0, 1), got {p_drop!r}")
    if p_drop > 0 and rng is None:
        raise ValueError(f"p_drop={p_drop} needs an rng (a NumPy or torch Generator) "
                         f"to draw the dropout masks")

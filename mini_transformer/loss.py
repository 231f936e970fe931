"""The training loss: cross-entropy of the next token, with label smoothing (the
paper's §5.4, ε_ls = 0.1), and its gradient (chapter 13)."""

from __future__ import annotations

from array_api_compat import array_namespace, device

from . import _checks
from .softmax import log_softmax, softmax


def cross_entropy(logits, targets, label_smoothing: float = 0.0, ignore_index=None):
    """The mean over the counted positions of −Σ_ν ỹ_ν log p_ν, p = softmax(logits),
    ν a token of the vocabulary and ỹ = (1 − ε) one_hot(target) + ε / n_vocab (``q``
    below): the smoothed target of
    ``torch.nn.functional.cross_entropy(..., label_smoothing=ε)``.

    logits: (..., n_vocab)   targets: (...) integer ids in [0, n_vocab)
    ignore_index: positions whose target equals it are not counted (padding).
    With ε = 0 this is −mean log p_target, the negative log-likelihood.
    """
    xp, counted, n = _check(logits, targets, label_smoothing, ignore_index)
    log_p = log_softmax(logits, axis=-1)                               # (..., n_vocab)
    q = smoothed_targets(targets, logits.shape[-1], label_smoothing, logits)
    per_position = -xp.sum(q * log_p, axis=-1)                         # (...)
    return xp.sum(xp.where(counted, per_position, 0.0)) / n


def cross_entropy_backward(
    logits, targets, label_smoothing: float = 0.0, ignore_index=None
):
    """∂ cross_entropy / ∂ logits = (softmax(logits) − ỹ) / n at each counted position,
    0 at an ignored one; ỹ (``q`` below) is the smoothed target and n the number
    counted.

    (With o the logits and ν, ν′ tokens of the vocabulary: since Σ_ν ỹ_ν = 1, the
    derivative of −Σ_ν ỹ_ν (o_ν − log Σ_ν′ e^{o_ν′}) by o_ν is −ỹ_ν + p_ν.) Returns
    an array shaped like logits.
    """
    xp, counted, n = _check(logits, targets, label_smoothing, ignore_index)
    q = smoothed_targets(targets, logits.shape[-1], label_smoothing, logits)
    grad = (softmax(logits, axis=-1) - q) / n
    return xp.where(counted[..., None], grad, 0.0)


def cross_entropy_with_grad(logits, targets, label_smoothing: float = 0.0,
                            ignore_index=None):
    """(``cross_entropy(...)``, ``cross_entropy_backward(...)``) from one log-softmax,
    without the dense smoothed targets: what a training step calls.

    With p = softmax(logits), t the target and ε the smoothing, V = n_vocab:
    −Σ_ν ỹ_ν log p_ν = −(1 − ε) log p_t − ε mean_ν log p_ν, so the loss needs only
    log p_t (gathered) and each row's mean; the gradient (p − ỹ) / n is p / n less
    ε / (V n) everywhere and (1 − ε) / n at the target, the p computed once from
    the same log p. Returns (loss, grad_logits); grad_logits is 0 at an ignored
    position.
    """
    xp, counted, n = _check(logits, targets, label_smoothing, ignore_index)
    eps, vocab = label_smoothing, logits.shape[-1]
    log_p = log_softmax(logits, axis=-1)                               # (..., V)
    rows = xp.reshape(log_p, (-1, vocab))                              # (N, V)
    targets = xp.asarray(targets, device=device(logits))
    target = xp.reshape(xp.where(counted, targets, 0), (-1,))          # (N,)
    index = xp.arange(rows.shape[0], device=device(logits))
    log_p_target = rows[index, target]                                 # (N,)
    per_position = -(1 - eps) * log_p_target
    if eps:
        per_position = per_position - eps * xp.mean(rows, axis=-1)
    w = xp.reshape(xp.astype(counted, logits.dtype), (-1,)) / n        # 1/n or 0
    loss = xp.sum(per_position * w)
    p = xp.exp(rows)                                                   # softmax
    grad = (p - eps / vocab if eps else p) * w[:, None]
    grad[index, target] -= (1 - eps) * w
    return loss, xp.reshape(grad, logits.shape)


def smoothed_targets(targets, vocab_size: int, label_smoothing, like):
    """ỹ = (1 − ε) one_hot(targets) + ε / n_vocab, in ``like``'s dtype and on its
    device; (..., n_vocab). An ignored target (out of range) gives a row of
    ε / n_vocab, never used."""
    xp = array_namespace(like)
    classes = xp.arange(vocab_size, device=device(like))
    one_hot = xp.astype(targets[..., None] == classes, like.dtype)   # (..., n_vocab)
    return (1 - label_smoothing) * one_hot + label_smoothing / vocab_size


def _check(logits, targets, label_smoothing, ignore_index):
    """The namespace, the mask of counted positions and their number, after checks."""
    xp = _checks.namespace(logits, names=("logits",))
    _checks.rank_at_least(logits, 1, "logits", "(..., vocab_size)")
    vocab = _checks.axis_length(logits, -1, "logits")
    if not hasattr(targets, "shape"):
        raise ValueError(
            f"targets must be an array of token ids, got {type(targets).__name__}"
        )
    if array_namespace(targets) is not xp or device(targets) != device(logits):
        targets = xp.asarray(targets, device=device(logits))
    if not xp.isdtype(targets.dtype, "integral"):
        raise ValueError(
            f"targets must be integer token ids, got dtype {targets.dtype}"
        )
    _checks.same(tuple(targets.shape), tuple(logits.shape[:-1]),
                 f"targets must have the shape of logits without its last axis, "
                 f"{tuple(logits.shape[:-1])}, got {tuple(targets.shape)}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must lie in [0, 1], got {label_smoothing}")
    counted = (
        targets != ignore_index if ignore_index is not None else targets == targets
    )
    ids = targets[counted]
    if ids.shape[0] and (int(xp.min(ids)) < 0 or int(xp.max(ids)) >= vocab):
        raise ValueError(
            f"targets must lie in [0, vocab_size={vocab}) (or equal "
            f"ignore_index={ignore_index}), got ids from {int(xp.min(ids))} "
            f"to {int(xp.max(ids))}"
        )
    n = int(xp.sum(xp.astype(counted, xp.int64)))
    if n == 0:
        raise ValueError(
            "every target equals ignore_index: the mean is over no position "
            "(torch.nn.functional.cross_entropy returns nan)"
        )
    return xp, counted, n

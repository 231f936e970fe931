"""The training loss: cross-entropy of the next token, with label smoothing (the
paper's §5.4, ε_ls = 0.1), and its gradient (chapter 13)."""

from __future__ import annotations

from array_api_compat import array_namespace, device

from . import _checks
from .softmax import log_softmax


def check_targets(targets, shape, vocab: int, like, label_smoothing=0.0,
                  ignore_index=None, name="targets"):
    """Refuse ``targets`` that are not integer ids in [0, vocab) of ``shape`` (those
    equal to ignore_index aside), a smoothing outside [0, 1], and targets that are all
    ignored; ``like`` is an array of the library they must come in, ``name`` what the
    message calls them."""
    xp = array_namespace(like)
    if not hasattr(targets, "shape"):
        raise ValueError(
            f"{name} must be an array of token ids, got {type(targets).__name__}"
        )
    targets = _ids(targets, like)
    if not xp.isdtype(targets.dtype, "integral"):
        raise ValueError(f"{name} must be integer token ids, got dtype {targets.dtype}")
    _checks.same(tuple(targets.shape), tuple(shape),
                 f"{name} must have the shape of logits without its last axis, "
                 f"{tuple(shape)}, got {tuple(targets.shape)}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must lie in [0, 1], got {label_smoothing}")
    counted = targets == targets if ignore_index is None else targets != ignore_index
    ids = targets[counted]
    if ids.shape[0] == 0:
        raise ValueError(
            f"every target{'' if name == 'targets' else f' ({name})'} equals "
            "ignore_index: the mean is over no position "
            "(torch.nn.functional.cross_entropy returns nan)"
        )
    if int(xp.min(ids)) < 0 or int(xp.max(ids)) >= vocab:
        raise ValueError(
            f"{name} must lie in [0, vocab_size={vocab}) (or equal "
            f"ignore_index={ignore_index}), got ids from {int(xp.min(ids))} "
            f"to {int(xp.max(ids))}"
        )


def _check(logits, targets, label_smoothing=0.0, ignore_index=None, **_):
    """Logits a floating array with a vocabulary axis, and ``check_targets``."""
    _checks.namespace(logits, names=("logits",))
    _checks.rank_at_least(logits, 1, "logits", "(..., vocab_size)")
    vocab = _checks.axis_length(logits, -1, "logits")
    check_targets(targets, logits.shape[:-1], vocab, logits, label_smoothing,
                  ignore_index)


@_checks.at_door(_check)
def cross_entropy(logits, targets, label_smoothing: float = 0.0, ignore_index=None):
    """The mean over the counted positions of −Σ_ν ỹ_ν log p_ν, p = softmax(logits),
    ν a token of the vocabulary and ỹ = (1 − ε) one_hot(target) + ε / n_vocab
    (``smoothed_targets``): the smoothed target of
    ``torch.nn.functional.cross_entropy(..., label_smoothing=ε)``.

    logits: (..., n_vocab)   targets: (...) integer ids in [0, n_vocab)
    ignore_index: positions whose target equals it are not counted (padding).
    With ε = 0 this is −mean log p_target, the negative log-likelihood.
    """
    return cross_entropy_with_grad(logits, targets, label_smoothing, ignore_index,
                                   grad=False)[0]


@_checks.at_door(_check)
def cross_entropy_backward(
    logits, targets, label_smoothing: float = 0.0, ignore_index=None
):
    """∂ cross_entropy / ∂ logits = (softmax(logits) − ỹ) / n at each counted position,
    0 at an ignored one; ỹ is the smoothed target and n the number counted.

    (With o the logits and ν, ν′ tokens of the vocabulary: since Σ_ν ỹ_ν = 1, the
    derivative of −Σ_ν ỹ_ν (o_ν − log Σ_ν′ e^{o_ν′}) by o_ν is −ỹ_ν + p_ν.) Returns
    an array shaped like logits.
    """
    return cross_entropy_with_grad(logits, targets, label_smoothing, ignore_index)[1]


@_checks.at_door(_check)
def cross_entropy_with_grad(logits, targets, label_smoothing: float = 0.0,
                            ignore_index=None, *, grad=True):
    """(``cross_entropy(...)``, ``cross_entropy_backward(...)``) from one log-softmax,
    without the dense smoothed targets: what a training step calls.

    With p = softmax(logits), y the correct token and ε_ls the smoothing:
    −Σ_ν ỹ_ν log p_ν = −(1 − ε_ls) log p_y − ε_ls mean_ν log p_ν, so the loss needs
    only log p_y (gathered) and each row's mean; the gradient (p − ỹ) / n is p / n
    less ε_ls / (n_vocab n) everywhere and (1 − ε_ls) / n at y, the p computed once
    from the same log p. Returns (loss, grad_logits); grad_logits is 0 at an ignored
    position (None with grad=False).
    """
    xp, eps, vocab = array_namespace(logits), label_smoothing, logits.shape[-1]
    targets = _ids(targets, logits)
    counted = targets == targets if ignore_index is None else targets != ignore_index
    log_p = xp.reshape(log_softmax(logits, axis=-1), (-1, vocab))      # (rows, n_vocab)
    target = xp.reshape(xp.where(counted, targets, 0), (-1,))          # (rows,)
    index = xp.arange(log_p.shape[0], device=device(logits))
    w = xp.reshape(xp.astype(counted, logits.dtype), (-1,))
    w = w / xp.sum(w)                                                  # 1/n or 0
    per_position = -(1 - eps) * log_p[index, target]
    if eps:
        per_position = per_position - eps * xp.mean(log_p, axis=-1)
    loss = xp.sum(xp.where(w > 0, per_position, 0.0) * w)
    if not grad:
        return loss, None
    p = xp.exp(log_p)                                                  # softmax
    g = (p - eps / vocab if eps else p) * w[:, None]
    g[index, target] -= (1 - eps) * w
    return loss, xp.reshape(g, logits.shape)


def smoothed_targets(targets, vocab_size: int, label_smoothing, like):
    """ỹ = (1 − ε) one_hot(targets) + ε / n_vocab, in ``like``'s dtype and on its
    device; (..., n_vocab). An ignored target (out of range) gives a row of
    ε / n_vocab, never used."""
    xp = array_namespace(like)
    classes = xp.arange(vocab_size, device=device(like))
    one_hot = xp.astype(targets[..., None] == classes, like.dtype)   # (..., n_vocab)
    return (1 - label_smoothing) * one_hot + label_smoothing / vocab_size


def _ids(targets, logits):
    """The target ids in the library and on the device of ``logits``."""
    xp = array_namespace(logits)
    if array_namespace(targets) is not xp or device(targets) != device(logits):
        return xp.asarray(targets, device=device(logits))
    return targets

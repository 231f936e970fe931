"""The paper's optimiser (§5.3, chapter 15): Adam, β₁ = 0.9, β₂ = 0.98,
ε_Adam = 10⁻⁹, and its learning-rate schedule, eq. (3).

Adam works on any params container (``MultiHeadParams``, ``TransformerParams``, ...) and
the gradients returned for it in a container of the same layout; its moments are two
more
containers of that layout. Like the rest of the package, it runs on NumPy arrays and,
unchanged, on torch tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

from .tree import tree_map


def learning_rate(step: int, d_model: int, warmup_steps: int = 4000) -> float:
    """lrate = d_model^-0.5 · min(step^-0.5, step · warmup_steps^-1.5), paper eq. (3).

    It rises linearly for the first ``warmup_steps`` steps, peaks at step = warmup_steps
    with d_model^-0.5 · warmup_steps^-0.5, then decays as step^-0.5. ``step`` counts
    from 1 (the first update).
    """
    for name, n in (
        ("step", step),
        ("d_model", d_model),
        ("warmup_steps", warmup_steps),
    ):
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(
                f"learning_rate needs {name} to be an integer >= 1, got {n!r}"
            )
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@dataclass(frozen=True)
class AdamState:
    """Adam's step count t and its two moment estimates, containers like the params."""

    step: int
    m: object  # first moment, running mean of the gradients
    v: object  # second moment, running mean of the squared gradients

    @classmethod
    def zeros_like(cls, params) -> "AdamState":
        zeros = tree_map(lambda a: a * 0.0, params)  # same library, device and dtype
        return cls(step=0, m=zeros, v=zeros)


def adam_step(params, grads, state: AdamState, lr: float,
              beta1: float = 0.9, beta2: float = 0.98, eps: float = 1e-9):
    """One Adam update (Kingma & Ba 2015) with the paper's β₁, β₂, ε_Adam as defaults:

        m ← β₁ m + (1 − β₁) g,    v ← β₂ v + (1 − β₂) g²
        m̂ = m / (1 − β₁ᵗ),       v̂ = v / (1 − β₂ᵗ)
        θ ← θ − lr · m̂ / (√v̂ + ε_Adam)       (ε_Adam is ``eps``)

    Returns (new params, new state); nothing is changed in place.
    """
    if not (0 <= beta1 < 1 and 0 <= beta2 < 1) or not eps >= 0 or not lr >= 0:
        raise ValueError(
            "adam_step needs 0 <= beta1, beta2 < 1, "
            f"eps >= 0 and lr >= 0, got beta1={beta1}, "
            f"beta2={beta2}, eps={eps}, lr={lr}"
        )
    tree_map(_same_shape, params, grads)
    t = state.step + 1
    m = tree_map(lambda m, g: beta1 * m + (1 - beta1) * g, state.m, grads)
    v = tree_map(lambda v, g: beta2 * v + (1 - beta2) * g * g, state.v, grads)
    c1, c2 = 1 - beta1**t, 1 - beta2**t  # bias corrections

    def update(p, m, v):
        return p - lr * (m / c1) / ((v / c2) ** 0.5 + eps)

    return tree_map(update, params, m, v), AdamState(step=t, m=m, v=v)


def _same_shape(p, g):
    if tuple(p.shape) != tuple(g.shape):
        raise ValueError(
            f"a gradient of shape {tuple(g.shape)} for "
            f"a parameter of shape {tuple(p.shape)}"
        )
    return p

"""Checkers for chapter 14's exercises (what keeps the gradients in range).

check_1(residual_ffn_backward): a function (x, params, grad_output) -> dX for
    Y = X + FFN(X), written with the package's ``feed_forward_backward``.
check_2(pre_ln_backward): a function (x, gamma, beta, params, grad_output) -> dX for the
    pre-LN sub-layer Y = X + FFN(LN(X)), with ``layer_norm_backward`` and
    ``feed_forward_backward``.
check_3(stack_backward): a function (x, layers, grad_output, norm_first) -> dX for a
    stack of encoder layers, chaining ``encoder_layer_backward``.

Each expected value is torch's autograd through the package's forward on float64 tensors,
an oracle independent of the hand-written backward. The reader's function is called on
NumPy arrays with torch's autograd switched off: a function that asks autograd for the
gradient, or returns a torch tensor, is refused, since the exercise is to compute it with
the package's backward functions.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch

import mini_transformer as mt

from . import UNANSWERED, Mistake, Verdict, check_function, unanswered, wrong

N_POS, D_MODEL, D_FF, N_HEADS = 5, 8, 16, 2


class AutogradRefused(RuntimeError):
    """Raised inside the reader's function when it calls torch's autograd."""


@contextlib.contextmanager
def _autograd_refused():
    """torch's ways of asking for a gradient raise ``AutogradRefused`` for a while."""
    def refuse(*args, **kwargs):
        raise AutogradRefused("torch's autograd was called")

    targets = [(torch.Tensor, "backward"), (torch.autograd, "backward"),
               (torch.autograd, "grad"), (torch.autograd.functional, "vjp"),
               (torch.autograd.functional, "jacobian")]
    import torch.func as tfunc
    targets += [(tfunc, name) for name in ("vjp", "grad", "jacrev", "jacfwd")
                if hasattr(tfunc, name)]
    saved = [(obj, name, getattr(obj, name)) for obj, name in targets]
    for obj, name, _ in saved:
        setattr(obj, name, refuse)
    try:
        yield
    finally:
        for obj, name, original in saved:
            setattr(obj, name, original)


def _refusal(fn, args, what: str, functions: str) -> Verdict | None:
    """A verdict when ``fn(*args)`` uses torch's autograd or returns a torch tensor;
    None when it computes on NumPy (right or wrong: ``check_function`` says which)."""
    try:
        with _autograd_refused():
            got = fn(*args)
    except AutogradRefused:
        return wrong(f"{what} asks torch's autograd for the gradient. The exercise is to "
                     f"compute it with the package's backward functions ({functions}), "
                     "on the NumPy arrays it is given.", "torch")
    except NotImplementedError:
        return UNANSWERED
    except Exception:  # the reader's code: check_function reports what it raised
        return None
    parts = got if isinstance(got, tuple) else (got,)
    if any(torch.is_tensor(p) for p in parts):
        return wrong(f"{what} returns a torch tensor: it is given NumPy arrays, and "
                     f"the package's backward functions ({functions}) return NumPy "
                     "arrays too.", "torch")
    return None


def _t(a):
    return torch.tensor(np.asarray(a), dtype=torch.float64)


def _autograd(forward, x, grad_output):
    """dX of <forward(X), grad_output> by torch's autograd (the oracle)."""
    tx = _t(x).requires_grad_(True)
    forward(tx).backward(_t(grad_output))
    return tx.grad.numpy()


def _ffn_torch(params):
    return params.map(_t)


def _cases_ffn(seed: int = 14):
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(2):
        x = rng.normal(size=(N_POS, D_MODEL))
        p = mt.FeedForwardParams.random(rng, d_model=D_MODEL, d_ff=D_FF)
        g = rng.normal(size=(N_POS, D_MODEL))
        cases.append((x, p, g))
    return cases


# --- 1. Y = X + FFN(X) ----------------------------------------------------------------------

def check_1(residual_ffn_backward) -> Verdict:
    """residual_ffn_backward(x, params, grad_output) -> dX for Y = X + FFN(X)."""
    if unanswered(residual_ffn_backward):
        return UNANSWERED
    cases = []
    for x, p, g in _cases_ffn():
        tp = _ffn_torch(p)
        cases.append(((x, p, g),
                      _autograd(lambda tx: tx + mt.feed_forward(tx, tp), x, g)))
    functions = "mt.feed_forward_backward"
    if callable(residual_ffn_backward):
        refused = _refusal(residual_ffn_backward, cases[0][0], "your function", functions)
        if refused is not None:
            return refused

    def branch(x, p, g):
        return mt.feed_forward_backward(x, p, g)[0]

    mistakes = [
        Mistake("no-identity", branch,
                "your dX is the branch's term J_Fᵀ dY alone. The residual sum passes "
                "dY to X directly as well: dX = dY + J_Fᵀ dY."),
        Mistake("identity-only", lambda x, p, g: g,
                "your dX is dY alone, the residual path. F(X) depends on X too, and "
                "its backward adds J_Fᵀ dY."),
        Mistake("minus", lambda x, p, g: g - branch(x, p, g),
                "your dX is dY − J_Fᵀ dY: the two terms of a sum's gradient add."),
        Mistake("at-output",
                lambda x, p, g: g + mt.feed_forward_backward(
                    x + mt.feed_forward(x, p), p, g)[0],
                "you called feed_forward_backward at the sum Y = X + FFN(X). A "
                "backward is taken at the input its forward saw: X."),
    ]
    return check_function(residual_ffn_backward, cases, mistakes=mistakes,
                          what="your function", atol=1e-10,
                          praise="The first term is why a residual stack passes "
                                 "its gradient down whatever the branches do.")


# --- 2. the pre-LN sub-layer Y = X + FFN(LN(X)) ------------------------------------------------

def check_2(pre_ln_backward) -> Verdict:
    """pre_ln_backward(x, gamma, beta, params, grad_output) -> dX for
    Y = X + FFN(LN(X))."""
    if unanswered(pre_ln_backward):
        return UNANSWERED
    rng = np.random.default_rng(1414)
    cases = []
    for x, p, g in _cases_ffn(41):
        x = 2.0 * x + 0.5                       # not already normalised
        gamma = 1 + 0.1 * rng.normal(size=D_MODEL)
        beta = 0.1 * rng.normal(size=D_MODEL)
        tp, tgam, tbet = _ffn_torch(p), _t(gamma), _t(beta)
        expected = _autograd(
            lambda tx: tx + mt.feed_forward(mt.layer_norm(tx, tgam, tbet), tp), x, g)
        cases.append(((x, gamma, beta, p, g), expected))
    functions = "mt.layer_norm_backward, mt.feed_forward_backward"
    if callable(pre_ln_backward):
        refused = _refusal(pre_ln_backward, cases[0][0], "your function", functions)
        if refused is not None:
            return refused

    def through_ln(x, gamma, beta, p, g):
        n = mt.layer_norm(x, gamma, beta)
        return mt.layer_norm_backward(x, gamma, mt.feed_forward_backward(n, p, g)[0])[0]

    def post_ln(x, gamma, beta, p, g):
        # the post-LN sub-layer Y = LN(X + FFN(X)): the other placement's backward
        r = x + mt.feed_forward(x, p)
        g_r = mt.layer_norm_backward(r, gamma, g)[0]
        return g_r + mt.feed_forward_backward(x, p, g_r)[0]

    mistakes = [
        Mistake("no-identity", through_ln,
                "your dX is the branch's term alone. In pre-LN the residual path goes "
                "around the LayerNorm: dX = dY + J_LNᵀ(J_FFNᵀ dY)."),
        Mistake("no-ln-backward",
                lambda x, gamma, beta, p, g: g + mt.feed_forward_backward(
                    mt.layer_norm(x, gamma, beta), p, g)[0],
                "the gradient that reaches LN(X) must still go through LayerNorm's "
                "backward, J_LNᵀ (mt.layer_norm_backward), to reach X."),
        Mistake("ffn-at-x",
                lambda x, gamma, beta, p, g: g + mt.layer_norm_backward(
                    x, gamma, mt.feed_forward_backward(x, p, g)[0])[0],
                "you took the FFN's backward at X. The FFN's forward saw LN(X): its "
                "backward must be taken there."),
        Mistake("ln-at-output",
                lambda x, gamma, beta, p, g: g + mt.layer_norm_backward(
                    mt.layer_norm(x, gamma, beta), gamma,
                    mt.feed_forward_backward(mt.layer_norm(x, gamma, beta), p, g)[0])[0],
                "you called layer_norm_backward at LN(X), the LayerNorm's output. A "
                "backward is taken at the input its forward saw: X."),
        Mistake("ln-without-gamma",
                lambda x, gamma, beta, p, g: g + mt.layer_norm_backward(
                    x, np.ones_like(gamma),
                    mt.feed_forward_backward(mt.layer_norm(x, gamma, beta), p, g)[0])[0],
                "your LayerNorm backward leaves out γ: pass the gain to "
                "layer_norm_backward, whose gradient reaching x̂ is γ ∘ g."),
        Mistake("post-ln", post_ln,
                "that is the backward of the post-LN sub-layer LN(X + FFN(X)), where "
                "the LayerNorm comes first on the way down. Here it sits inside the "
                "branch."),
    ]
    return check_function(pre_ln_backward, cases, mistakes=mistakes,
                          what="your function", atol=1e-10,
                          praise="The dY term reaches X whatever the LayerNorm does.")


# --- 3. a stack of encoder layers --------------------------------------------------------------

def _stack_cases():
    rng = np.random.default_rng(1403)
    cases = []
    for norm_first in (False, True):
        layers = [mt.EncoderLayerParams.random(rng, d_model=D_MODEL, n_heads=N_HEADS,
                                               d_ff=D_FF) for _ in range(3)]
        x = rng.normal(size=(N_POS, D_MODEL))
        g = rng.normal(size=(N_POS, D_MODEL))
        t_layers = [layer.map(_t) for layer in layers]

        def forward(tx, t_layers=t_layers, norm_first=norm_first):
            for layer in t_layers:
                tx = mt.encoder_layer(tx, layer, norm_first=norm_first)
            return tx

        cases.append(((x, layers, g, norm_first), _autograd(forward, x, g)))
    return cases


def check_3(stack_backward) -> Verdict:
    """stack_backward(x, layers, grad_output, norm_first) -> dX of a stack of
    encoder layers (no final LayerNorm)."""
    if unanswered(stack_backward):
        return UNANSWERED
    cases = _stack_cases()
    functions = "mt.encoder_layer, mt.encoder_layer_backward"
    if callable(stack_backward):
        refused = _refusal(stack_backward, cases[0][0], "your function", functions)
        if refused is not None:
            return refused

    def inputs_of(x, layers, norm_first):
        inputs = []
        for layer in layers:
            inputs.append(x)
            x = mt.encoder_layer(x, layer, norm_first=norm_first)
        return inputs

    def all_at_x(x, layers, g, norm_first):
        for layer in reversed(layers):
            g = mt.encoder_layer_backward(x, layer, g, norm_first=norm_first)[0]
        return g

    def forward_order(x, layers, g, norm_first):
        for h, layer in zip(inputs_of(x, layers, norm_first), layers):
            g = mt.encoder_layer_backward(h, layer, g, norm_first=norm_first)[0]
        return g

    def other_placement(x, layers, g, norm_first):
        inputs = inputs_of(x, layers, not norm_first)
        for h, layer in zip(reversed(inputs), reversed(layers)):
            g = mt.encoder_layer_backward(h, layer, g, norm_first=not norm_first)[0]
        return g

    def placement_in_backward(x, layers, g, norm_first):
        # the forward with norm_first, the backward with the default (post-LN)
        for h, layer in zip(reversed(inputs_of(x, layers, norm_first)), reversed(layers)):
            g = mt.encoder_layer_backward(h, layer, g)[0]
        return g

    def last_layer_only(x, layers, g, norm_first):
        h = inputs_of(x, layers, norm_first)[-1]
        return mt.encoder_layer_backward(h, layers[-1], g, norm_first=norm_first)[0]

    mistakes = [
        Mistake("all-at-x", all_at_x,
                "you called every layer's backward at the stack's input x. Each "
                "layer's backward needs the input that layer saw in the forward: run "
                "the forward first and keep each layer's input."),
        Mistake("forward-order", forward_order,
                "you passed the gradient through the layers in the forward's order. "
                "The backward runs them in reverse: the last layer first."),
        Mistake("placement", other_placement,
                "your stack uses the other LayerNorm placement: pass norm_first to "
                "both encoder_layer and encoder_layer_backward."),
        Mistake("placement-backward", placement_in_backward,
                "your backward runs the post-LN layer whatever norm_first says: pass "
                "norm_first to encoder_layer_backward as well."),
        Mistake("one-layer", last_layer_only,
                "your dX is the gradient at the last layer's input only: keep passing "
                "it down through every layer."),
    ]
    return check_function(stack_backward, cases, mistakes=mistakes,
                          what="your function", atol=1e-9,
                          praise="This is what loss_and_grads does for each stack.")

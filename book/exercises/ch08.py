"""Checkers for chapter 8's exercises (the encoder layer).

check_1: the parameters of one encoder layer of the big model and of its stack of six,
    a pair of ints (d_model = 1024, h = 16, d_ff = 4096).
check_4: a function (x, stack) -> array that reproduces a pre-LN
    ``torch.nn.TransformerEncoder`` with a final LayerNorm with ``mt.encoder`` and
    ``mt.layer_norm``; compared with torch's own output on two stacks of its own.

Exercises 2 (a proof) and 3 (an observation about random dropout masks) have no checker.
"""

from __future__ import annotations

import numpy as np

import mini_transformer as mt

from . import (
    UNANSWERED, Mistake, Verdict, check_function, check_value, unanswered, wrong,
)

D_BIG, H_BIG, D_FF_BIG, N_LAYERS = 1024, 16, 4096, 6


def _layer_count(d, d_ff, *, biases=True, norms=2, heads=1, head_biases=False):
    attention = heads * 4 * d * d + (4 * d if biases else 0) * (
        heads if head_biases else 1)
    ffn = 2 * d * d_ff + (d_ff + d if biases else 0)
    return attention + ffn + norms * 2 * d


def _pair_entry(i, *values):
    """A predicate: the answer is a pair whose entry i equals one of values."""
    def matches(a):
        return a.shape == (2,) and any(abs(float(a[i]) - v) < 0.5 for v in values)
    return matches


def _pair_entry_not(i, value):
    def differs(a):
        return a.shape == (2,) and abs(float(a[i]) - value) >= 0.5
    return differs


def check_1(counts) -> Verdict:
    """counts: (parameters of one big encoder layer, parameters of the stack of six)."""
    if unanswered(counts):
        return UNANSWERED
    layer = _layer_count(D_BIG, D_FF_BIG)
    no_bias = _layer_count(D_BIG, D_FF_BIG, biases=False)
    bare = _layer_count(D_BIG, D_FF_BIG, biases=False, norms=0)
    mistakes = [
        Mistake("weights-only", _pair_entry(0, bare),
                "your layer count has the weight matrices only: the four projections "
                "and the two FFN layers have biases, and each LayerNorm has γ and β."),
        Mistake("no-biases", _pair_entry(0, no_bias),
                "your layer count has no biases: each of the four projections and each "
                "FFN layer adds a bias vector."),
        # at the big sizes d_ff = 4 d_model: the two LayerNorms (4 d_model numbers) and
        # the FFN's first bias b_1 (d_ff numbers) are the same count, 4,096
        Mistake("no-layernorm", _pair_entry(0, _layer_count(D_BIG, D_FF_BIG, norms=0)),
                "your layer count is 4,096 short. That is the two LayerNorms (γ and β "
                "each, d_model = 1024 numbers apiece), or the FFN's first bias b_1 "
                "(d_ff = 4096 numbers): which did you leave out?"),
        Mistake("layernorm-half", _pair_entry(0, layer - 2 * D_BIG),
                "your layer count gives each LayerNorm d_model parameters: it has two "
                "vectors, γ and β."),
        Mistake("per-head", _pair_entry(
                    0, _layer_count(D_BIG, D_FF_BIG, heads=H_BIG),
                    _layer_count(D_BIG, D_FF_BIG, heads=H_BIG, head_biases=True)),
                "your layer count gives every head its own d_model × d_model "
                "projections: the heads split d_model, they do not add weights."),
        Mistake("no-W_O", _pair_entry(0, layer - D_BIG * D_BIG - D_BIG,
                                      layer - D_BIG * D_BIG, layer - D_BIG),
                "your attention count has three projections, W^Q, W^K and W^V: the "
                "heads' outputs are concatenated and projected once more by the "
                "output projection W^O (d_model × d_model, with its bias)."),
        Mistake("swapped", np.array([N_LAYERS * layer, layer]),
                "the two numbers are swapped: one layer first, then the stack."),
        Mistake("stack", lambda a: _pair_entry(0, layer)(a)
                and _pair_entry_not(1, N_LAYERS * layer)(a),
                "your layer count is right, your stack is not: the encoder stacks "
                "N = 6 identical layers and nothing else."),
    ]
    return check_value(counts, [layer, N_LAYERS * layer], what="your pair of counts",
                       mistakes=mistakes, rtol=0, atol=0.5)


def _stack(seed, d_model, n_heads, d_ff, n_layers, eps):
    """A float64 pre-LN torch stack with a final norm, random biases and norms."""
    import torch

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        layer = torch.nn.TransformerEncoderLayer(
            d_model, n_heads, d_ff, dropout=0.0, batch_first=True, norm_first=True,
            dtype=torch.float64)
        final = torch.nn.LayerNorm(d_model, eps=eps, dtype=torch.float64)
        stack = torch.nn.TransformerEncoder(layer, n_layers, norm=final,
                                            enable_nested_tensor=False).eval()
        with torch.no_grad():
            for name, param in stack.named_parameters():
                if name.endswith("bias"):
                    param.normal_(0.0, 0.1)
                elif "norm" in name:
                    param.normal_(1.0, 0.1)
                else:
                    param.add_(0.05 * torch.randn_like(param))
    return stack


def _cases():
    import torch

    rng = np.random.default_rng(8)
    cases = []
    for seed, (d, h, d_ff, n_layers, eps), shape in (
        (0, (64, 8, 256, 2, 1e-5), (2, 10, 64)),
        (1, (16, 2, 32, 3, 1e-3), (1, 5, 16)),
    ):
        stack = _stack(seed, d, h, d_ff, n_layers, eps)
        x = rng.normal(size=shape)
        with torch.no_grad():
            expected = stack(torch.as_tensor(x)).numpy()
        cases.append(((x, stack), expected))
    return cases


def _ours(x, stack, *, norm_first=True, final="full"):
    from mini_transformer.torch.convert import encoder_layer_from_torch

    layers = [encoder_layer_from_torch(l) for l in stack.layers]
    h = mt.encoder(x, layers, norm_first=norm_first)
    norm = stack.norm
    gamma, beta = norm.weight.detach().numpy(), norm.bias.detach().numpy()
    if final == "none":
        return h
    if final == "ones":
        return mt.layer_norm(h, np.ones_like(gamma), np.zeros_like(beta), norm.eps)
    if final == "default-eps":
        return mt.layer_norm(h, gamma, beta)
    return mt.layer_norm(h, gamma, beta, norm.eps)


def _watched(stack):
    """The stack with every module's forward replaced by a recorder (read-only use)."""
    calls = []
    for module in stack.modules():
        def forward(*args, _name=type(module).__name__, **kwargs):
            calls.append(_name)
            raise RuntimeError(f"the check does not run torch's own {_name}: compute "
                               "with mt.encoder and mt.layer_norm")
        module.forward = forward
    return calls


def check_4(fn) -> Verdict:
    """fn(x, stack): the output of the pre-LN stack with its final norm, as an array.

    The stack handed to fn cannot run itself: a function that returns torch's own
    output (stack(x), a layer's forward, the final nn.LayerNorm) is refused.
    """
    if unanswered(fn):
        return UNANSWERED
    if not callable(fn):
        return wrong(f"your answer should be a function, got {type(fn).__name__}.")
    cases = _cases()
    records = [_watched(stack) for (x, stack), _ in cases]
    mistakes = [
        Mistake("no-final-norm", lambda x, s: _ours(x, s, final="none"),
                "your output is the stack without its final LayerNorm: pre-LN leaves "
                "the residual stream un-normalised, the stack's `norm` is applied "
                "last."),
        Mistake("post-ln", lambda x, s: _ours(x, s, norm_first=False),
                "your layers are post-LN: these layers normalise before each sub-layer "
                "(`norm_first=True`)."),
        Mistake("post-ln-no-final", lambda x, s: _ours(x, s, norm_first=False,
                                                        final="none"),
                "your layers are post-LN and the final LayerNorm is missing."),
        Mistake("final-norm-ones", lambda x, s: _ours(x, s, final="ones"),
                "your final LayerNorm ignores its weight and bias (γ and β of the "
                "stack's `norm`)."),
        Mistake("final-eps", lambda x, s: _ours(x, s, final="default-eps"),
                "your final LayerNorm uses the default ε: take the stack's "
                "`norm.eps`."),
    ]
    verdict = check_function(fn, cases, what="your function", mistakes=mistakes,
                             rtol=1e-7, atol=1e-9,
                             own_work="the package's mt.encoder and mt.layer_norm",
                             tensors_ok=True)
    calls = [name for record in records for name in record]
    if calls:
        return wrong(f"your function runs torch's own {calls[0]} (its forward): the "
                     "exercise is to compute the stack with mt.encoder and "
                     "mt.layer_norm from the weights, not to hand back torch's output.",
                     "reference-library")
    return verdict

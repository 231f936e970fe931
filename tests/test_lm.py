"""The decoder-only language model (``mt.lm_params``, ``mt.language_model``,
``mt.lm_loss_and_grads``, ``mt.generate``). Oracles: the same model written here
from its equations in torch (embedding · √d_model + sinusoids, pre-LN layers of
masked self-attention and ReLU feed-forward, a final LayerNorm, tied output,
``torch.nn.functional.cross_entropy`` of the shifted tokens) with torch.autograd
for the gradients; causality (a later token cannot move an earlier score); and
generation with the cache equal to running the whole prefix again."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mini_transformer as mt
from mini_transformer.tree import named_leaves

from helpers import TOL64, max_abs


def small(seed=0, vocab=13, d_model=8, n_heads=2, n_layers=2):
    return mt.lm_params(np.random.default_rng(seed), vocab_size=vocab,
                        d_model=d_model, n_heads=n_heads, n_layers=n_layers)


def torch_lm(w, tokens):
    """The model from its equations, on the float64 tensors ``w`` ({name: tensor})."""
    E = w["embedding"]
    n, d = tokens.shape[-1], E.shape[1]
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(0, d, 2, dtype=torch.float64)
    angle = pos / 10000 ** (i / d)
    pe = torch.stack([torch.sin(angle), torch.cos(angle)], -1).reshape(n, d)
    x = E[tokens] * math.sqrt(d) + pe
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    layers = sorted({k.split(".")[1] for k in w if k.startswith("decoder_layers.")})
    for li in layers:
        def g(name):
            return w[f"decoder_layers.{li}.{name}"]
        h = F.layer_norm(x, (d,), g("norm1.gamma"), g("norm1.beta"), 1e-5)
        q, k, v = (torch.einsum("bnd,hdk->bhnk", h, g(f"self_attn.W_{m}"))
                   + g(f"self_attn.b_{m}")[:, None] for m in "QKV")
        s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        s = s.masked_fill(~causal, -math.inf)
        heads = torch.softmax(s, -1) @ v                       # (b, h, n, d_v)
        concat = heads.transpose(1, 2).reshape(*heads.shape[:1], n, -1)
        x = x + concat @ g("self_attn.W_O") + g("self_attn.b_O")
        h = F.layer_norm(x, (d,), g("norm2.gamma"), g("norm2.beta"), 1e-5)
        hidden = torch.relu(h @ g("ffn.W_1") + g("ffn.b_1"))
        x = x + hidden @ g("ffn.W_2") + g("ffn.b_2")
    h = F.layer_norm(x, (d,), w["decoder_norm.gamma"], w["decoder_norm.beta"], 1e-5)
    return h @ E.T


def test_the_params_have_no_cross_attention_and_a_final_norm():
    p = small()
    assert p.encoder_layers == () and p.norm_first
    assert all(layer.cross_attn is None for layer in p.decoder_layers)
    assert p.decoder_norm.gamma.shape == (8,)
    assert all(layer.norm3 is None for layer in p.decoder_layers)


def test_logits_loss_and_gradients_equal_torch_autograd():
    p = small()
    tokens = np.random.default_rng(1).integers(0, 13, (3, 7))
    w = {k: torch.tensor(a, requires_grad=True) for k, a in named_leaves(p).items()}
    logits = torch_lm(w, torch.tensor(tokens[:, :-1]))
    assert max_abs(mt.language_model(tokens[:, :-1], p), logits) < TOL64
    loss_ref = F.cross_entropy(logits.reshape(-1, 13),
                               torch.tensor(tokens[:, 1:]).reshape(-1))
    loss_ref.backward()
    loss, grads = mt.lm_loss_and_grads(p, tokens)
    assert abs(float(loss) - loss_ref.item()) < TOL64
    got = named_leaves(grads)
    assert set(got) == set(w)
    for name, t in w.items():
        assert max_abs(got[name], t.grad) < TOL64, name


def test_a_later_token_does_not_move_an_earlier_score():
    p = small(seed=3)
    a = np.array([1, 5, 7, 2, 9, 4])
    b = a.copy()
    b[4] = 11
    la, lb = mt.language_model(a, p), mt.language_model(b, p)
    assert max_abs(la[:4], lb[:4]) < TOL64 and max_abs(la[4:], lb[4:]) > 1e-3


@pytest.mark.parametrize("kw", [{"temperature": 0}, {"temperature": 1.0},
                                {"temperature": 0.8, "top_k": 5, "top_p": 0.9}])
def test_generation_with_the_cache_equals_running_the_prefix_again(kw):
    p = small(seed=4, n_layers=3)
    rng = None if kw["temperature"] == 0 else np.random.default_rng(7)
    rng2 = None if kw["temperature"] == 0 else np.random.default_rng(7)
    t1, l1 = mt.generate(p, [3, 1, 4], 12, rng=rng, **kw)
    t2, l2 = mt.generate(p, [3, 1, 4], 12, rng=rng2, cache=False, **kw)
    assert t1.tolist() == t2.tolist()
    assert l1.shape == (12, 13) and max_abs(l1, l2) < 1e-12
    # the logits of each step are the whole sequence's last row, run again
    full = mt.language_model(t1[:-1], p)
    assert max_abs(l1, full[2:]) < 1e-12


def test_greedy_generation_takes_the_argmax():
    p = small(seed=5)
    tokens, logits = mt.generate(p, [2], 6, temperature=0)
    assert tokens[1:].tolist() == np.argmax(logits, axis=-1).tolist()


def test_generate_on_torch_tensors_equals_numpy():
    p = small(seed=6)
    pt = p.map(lambda a: torch.tensor(a))
    t1, l1 = mt.generate(p, [1, 2], 5, temperature=0)
    t2, l2 = mt.generate(pt, [1, 2], 5, temperature=0)
    assert t1.tolist() == t2.tolist() and max_abs(l1, l2) < TOL64


@pytest.mark.parametrize("args, kw, words", [
    (([], 3), {"temperature": 0}, "prompt must hold at least one token"),
    (([1], -1), {"temperature": 0}, "max_new_tokens must be an integer >= 0"),
    (([1], 2), {"temperature": 0, "context": 1}, "context must be an integer >= 2"),
    (([1], 3), {}, "sampling needs rng"),
    (([1], 3), {"top_p": 2.0, "rng": np.random.default_rng(0)}, "top_p"),
    (([99], 3), {"temperature": 0}, "prompt must lie in [0, vocab_size=13)"),
])
def test_generate_refuses_bad_arguments(args, kw, words):
    with pytest.raises(ValueError) as e:
        mt.generate(small(), *args, **kw)
    assert words in str(e.value)


@pytest.mark.parametrize("context", [4, 5, 8])
def test_a_window_gives_the_same_tokens_with_and_without_the_cache(context):
    p = small(seed=8)
    kw = dict(temperature=0.9, top_p=0.95, context=context)
    t1, l1 = mt.generate(p, [3, 1, 4, 1, 5, 9], 15, rng=np.random.default_rng(2), **kw)
    t2, l2 = mt.generate(p, [3, 1, 4, 1, 5, 9], 15, rng=np.random.default_rng(2),
                         cache=False, **kw)
    assert t1.tolist() == t2.tolist() and max_abs(l1, l2) < 1e-12
    # the window rule, replayed: the last `context` tokens of the prompt, then a new
    # window of context // 2 tokens whenever one is full
    first, n = max(0, 6 - context), 6
    for step in range(15):
        window = t1[first:n]
        assert max_abs(l1[step], mt.language_model(window, p)[-1]) < 1e-12
        n += 1
        if n - first > context:
            first = n - context // 2


def test_the_ablation_script_2017_block_is_the_package_model():
    """benchmarks/lm_ablation.py's 2017 block, given the package model's weights
    (attention biases zero: the script's blocks have none), computes its logits."""
    import dataclasses
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "lm_ablation.py"
    spec = importlib.util.spec_from_file_location("lm_ablation", path)
    ablation = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ablation)
    p = small(seed=9, vocab=256, d_model=8, n_heads=2)
    p = dataclasses.replace(p, decoder_layers=tuple(
        dataclasses.replace(layer, self_attn=dataclasses.replace(
            layer.self_attn, b_Q=0 * layer.self_attn.b_Q, b_K=0 * layer.self_attn.b_K,
            b_V=0 * layer.self_attn.b_V, b_O=0 * layer.self_attn.b_O))
        for layer in p.decoder_layers))
    w = {"E": p.embedding, "nf_g": p.decoder_norm.gamma, "nf_b": p.decoder_norm.beta}
    for i, layer in enumerate(p.decoder_layers):
        a = layer.self_attn
        w |= {f"{i}.n1_g": layer.norm1.gamma, f"{i}.n1_b": layer.norm1.beta,
              f"{i}.n2_g": layer.norm2.gamma, f"{i}.n2_b": layer.norm2.beta,
              f"{i}.Wo": a.W_O, f"{i}.W1": layer.ffn.W_1, f"{i}.b1": layer.ffn.b_1,
              f"{i}.W2": layer.ffn.W_2, f"{i}.b2": layer.ffn.b_2}
        for m, W in (("q", a.W_Q), ("k", a.W_K), ("v", a.W_V)):   # (h, d, d_k) -> (d, h d_k)
            w[f"{i}.W{m}"] = W.transpose(1, 0, 2).reshape(W.shape[1], -1)
    tokens = np.random.default_rng(3).integers(0, 256, (2, 9))
    got = ablation.forward({k: torch.tensor(v) for k, v in w.items()},
                           torch.tensor(tokens), (), 2, 2)
    assert max_abs(got, mt.language_model(tokens, p)) < TOL64


@pytest.mark.parametrize("tokens, words", [
    (np.array([[3]]), "windows of at least 2 ids"),
    (np.array([[1, 99]]), "tokens must lie in [0, vocab_size=13)"),
    (np.array([[1.0, 2.0]]), "tokens must be integer token ids"),
])
def test_the_training_step_refuses_bad_windows_at_its_door(tokens, words):
    with pytest.raises(ValueError) as e:
        mt.lm_loss_and_grads(small(), tokens)
    assert words in str(e.value)


def test_the_training_step_checks_its_arrays_once(monkeypatch):
    """Behind the door, the layers, the loss and the embedding run unchecked: one
    check of the params' arrays per step, not one per inner call."""
    import mini_transformer._checks as checks

    calls = []
    real = checks.namespace
    monkeypatch.setattr(checks, "namespace",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    mt.lm_loss_and_grads(small(), np.array([[1, 2, 3, 4], [4, 3, 2, 1]]))
    assert len(calls) == 1


def test_generation_checks_its_arrays_once(monkeypatch):
    """generate checks the params and the prompt at its door; its steps run unchecked."""
    import mini_transformer._checks as checks

    calls = []
    real = checks.namespace
    monkeypatch.setattr(checks, "namespace",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    mt.generate(small(), [1, 2, 3], 10, temperature=0)
    assert len(calls) == 1


@pytest.mark.parametrize("kw, words", [
    ({"caches": [mt.KVCache()]}, "caches must hold one KVCache per layer (2), got 1"),
    ({"start": -1}, "start must be an integer >= 0, got -1"),
    ({"caches": [mt.KVCache(), mt.KVCache()], "start": 2},
     "with caches, several new tokens are taken only at the start"),
])
def test_the_language_model_refuses_bad_caches_at_its_door(kw, words):
    with pytest.raises(ValueError) as e:
        mt.language_model(np.array([1, 2]), small(), **kw)
    assert words in str(e.value)

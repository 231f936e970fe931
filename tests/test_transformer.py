"""The whole model: torch.nn.Transformer (with its final norms) as oracle for
encoder_decoder, torch.nn.Embedding + torch.nn.Transformer for the logits,
count_parameters against torch's parameter count, and greedy decoding with the
key/value cache against recomputing the whole prefix at every step.

torch's bool masks are True where a key is *ignored*; ours are True where a query
may attend, so the oracle gets ``~mask``.
"""

import math

import numpy as np
import pytest
import torch

from helpers import TOL32, TOL64, max_abs, t64, to_numpy
from mini_transformer import (TransformerParams, causal_mask, count_parameters, embed,
                              encoder_decoder, greedy_decode, loss_and_grads, padding_mask,
                              transformer)
from mini_transformer.torch.convert import to_torch, transformer_from_torch

# torch's warnings about its own nested-tensor fast path, which these tests exercise
pytestmark = [pytest.mark.filterwarnings("ignore:enable_nested_tensor is True"),
              pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")]

CASES = [  # d_model, n_heads, d_ff, n_enc, n_dec, batch, n_src, n_tgt
    (8, 2, 16, 2, 2, 2, 5, 3),
    (12, 3, 7, 1, 3, 3, 2, 4),
    (6, 1, 24, 2, 1, 1, 4, 1),
]


def torch_transformer(d_model, n_heads, d_ff, n_enc, n_dec, norm_first, dtype=torch.float64,
                      seed=0):
    """A torch.nn.Transformer with torch's own initialisation, its LayerNorms (the
    final ones too) and biases made non-trivial."""
    torch.manual_seed(seed)
    model = torch.nn.Transformer(d_model, n_heads, n_enc, n_dec, d_ff, dropout=0.0,
                                 batch_first=True, norm_first=norm_first, dtype=dtype)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.normal_(1, 0.2)
                m.bias.normal_(0, 0.2)
            if isinstance(m, torch.nn.MultiheadAttention):
                m.in_proj_bias.normal_(0, 0.2)
    return model.eval()


def sinusoids(n, d):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same), in torch."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    two_i = torch.arange(d) // 2 * 2
    angle = pos / 10000 ** (two_i / d)
    return torch.where(torch.arange(d) % 2 == 0, torch.sin(angle), torch.cos(angle))


# --- encoder_decoder against torch.nn.Transformer ------------------------------------

@pytest.mark.parametrize("d_model,n_heads,d_ff,n_enc,n_dec,batch,n_src,n_tgt", CASES)
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_encoder_decoder_matches_torch_transformer(d_model, n_heads, d_ff, n_enc, n_dec,
                                                   batch, n_src, n_tgt, norm_first, rng):
    model = torch_transformer(d_model, n_heads, d_ff, n_enc, n_dec, norm_first)
    p = transformer_from_torch(model)
    assert p.encoder_norm is not None and p.decoder_norm is not None
    src = rng.normal(size=(batch, n_src, d_model))
    tgt = rng.normal(size=(batch, n_tgt, d_model))
    src_pad = padding_mask(rng.integers(1, n_src + 1, size=batch), n_src)
    tgt_pad = padding_mask(rng.integers(1, n_tgt + 1, size=batch), n_tgt)
    causal = causal_mask(n_tgt)
    torch_masks = dict(tgt_mask=torch.as_tensor(~causal),
                       src_key_padding_mask=torch.as_tensor(~src_pad[:, 0]),
                       tgt_key_padding_mask=torch.as_tensor(~tgt_pad[:, 0]),
                       memory_key_padding_mask=torch.as_tensor(~src_pad[:, 0]))
    # with gradients on, torch's encoder takes the plain path (no nested tensors)
    expected = model(t64(src), t64(tgt), **torch_masks)
    out = encoder_decoder(src, tgt, p, src_mask=src_pad, tgt_mask=causal & tgt_pad,
                          memory_mask=src_pad, norm_first=norm_first)
    assert out.shape == (batch, n_tgt, d_model)
    assert max_abs(out, expected) < TOL64
    # without gradients, post-LN: torch's fast path (nested tensors) gives zeros at
    # padded source positions; the decoder never looks at them, so it agrees
    with torch.no_grad():
        assert max_abs(out, model(t64(src), t64(tgt), **torch_masks)) < TOL64
    # no masks at all
    assert max_abs(encoder_decoder(src, tgt, p, norm_first=norm_first),
                   model(t64(src), t64(tgt))) < TOL64
    # float32, on torch tensors and on NumPy
    model32 = torch_transformer(d_model, n_heads, d_ff, n_enc, n_dec, norm_first,
                                dtype=torch.float32)
    p32 = transformer_from_torch(model32).map(
        lambda a: torch.as_tensor(a, dtype=torch.float32))
    src32, tgt32 = torch.as_tensor(src, dtype=torch.float32), torch.as_tensor(
        tgt, dtype=torch.float32)
    expected32 = model32(src32, tgt32, **torch_masks)
    out32 = encoder_decoder(src32, tgt32, p32, src_pad, causal & tgt_pad, src_pad,
                            norm_first=norm_first)
    assert out32.dtype == torch.float32 and max_abs(out32, expected32) < TOL32
    out32 = encoder_decoder(src32.numpy(), tgt32.numpy(), p32.map(lambda a: a.numpy()),
                            src_pad, causal & tgt_pad, src_pad, norm_first=norm_first)
    assert out32.dtype == np.float32 and max_abs(out32, expected32) < TOL32


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_paper_model_to_torch_has_no_final_norms(norm_first, rng):
    p = TransformerParams.random(rng, vocab_size=7, d_model=8, n_heads=2, d_ff=16, n_layers=2)
    assert p.encoder_norm is None and p.decoder_norm is None
    model = to_torch(p, norm_first=norm_first)
    assert model.encoder.norm is None and model.decoder.norm is None
    src, tgt = rng.normal(size=(2, 4, 8)), rng.normal(size=(2, 3, 8))
    src_pad = padding_mask([4, 1], 4)
    expected = model(t64(src), t64(tgt), tgt_mask=torch.as_tensor(~causal_mask(3)),
                     src_key_padding_mask=torch.as_tensor(~src_pad[:, 0]),
                     memory_key_padding_mask=torch.as_tensor(~src_pad[:, 0]))
    out = encoder_decoder(src, tgt, p, src_pad, causal_mask(3), src_pad, norm_first=norm_first)
    assert max_abs(out, expected) < TOL64
    # and back: the same weights
    back = transformer_from_torch(model, embedding=p.embedding)
    assert back.encoder_norm is None
    np.testing.assert_array_equal(back.decoder_layers[1].cross_attn.W_V,
                                  p.decoder_layers[1].cross_attn.W_V)
    np.testing.assert_array_equal(back.embedding, p.embedding)


def test_round_trip_keeps_final_norms_and_eps():
    model = torch_transformer(8, 2, 16, 1, 1, False)
    for norm in (model.encoder.norm, model.decoder.norm):
        norm.eps = 1e-6
    p = transformer_from_torch(model)
    assert p.eps == 1e-6
    back = to_torch(p)
    assert back.decoder.norm.eps == 1e-6
    assert max_abs(back.decoder.norm.weight, model.decoder.norm.weight) == 0


# --- count_parameters --------------------------------------------------------------

@pytest.mark.parametrize("norm_first", [False, True])
def test_count_parameters_equals_torch(norm_first, rng):
    # torch.nn.Transformer has no embedding: add the nn.Embedding's weight once
    model = torch_transformer(12, 3, 20, 2, 3, norm_first)
    emb = torch.nn.Embedding(50, 12, dtype=torch.float64)
    p = transformer_from_torch(model, embedding=emb)
    expected = sum(q.numel() for q in model.parameters()) + emb.weight.numel()
    assert count_parameters(p) == expected
    # the paper's model: no final norms, the tied embedding counted once
    p = TransformerParams.random(rng, vocab_size=50, d_model=12, n_heads=3, d_ff=20,
                                 n_layers=2)
    model = to_torch(p)
    assert count_parameters(p) == sum(q.numel() for q in model.parameters()) + 50 * 12
    # the same count on torch tensors, on a layer and on a list of layers
    assert count_parameters(p.map(torch.as_tensor)) == count_parameters(p)
    layer = p.decoder_layers[0]
    assert count_parameters(layer) == sum(
        q.numel() for q in to_torch(layer).parameters())
    assert count_parameters(list(p.encoder_layers)) == 2 * count_parameters(
        p.encoder_layers[0])
    # a layer used twice counts once, as in torch.nn.Module.parameters()
    assert count_parameters([layer, layer]) == count_parameters(layer)


def test_count_parameters_by_hand():
    # per encoder layer: attention 4 d² + 4 d (W_Q, W_K, W_V, W_O and their biases),
    # FFN 2 d d_ff + d_ff + d, two LayerNorms 2 · 2d; a decoder layer has a second
    # attention and a third LayerNorm; the tied embedding vocab · d, once
    d, d_ff, n, vocab = 16, 64, 6, 37
    encoder_layer = 4 * d * d + 4 * d + 2 * d * d_ff + d_ff + d + 4 * d
    decoder_layer = encoder_layer + 4 * d * d + 4 * d + 2 * d
    p = TransformerParams.random(np.random.default_rng(0), vocab_size=vocab, d_model=d,
                                 n_heads=8, d_ff=d_ff, n_layers=n)
    assert count_parameters(p) == n * (encoder_layer + decoder_layer) + vocab * d


# --- transformer: embeddings, logits --------------------------------------------------

def test_embed_by_hand():
    # position 0: PE = [sin 0, cos 0, sin 0, cos 0] = [0, 1, 0, 1]; position 1:
    # [sin 1, cos 1, sin(1/100), cos(1/100)] (d_model = 4: 10000^(2/4) = 100)
    E = np.arange(12.0).reshape(3, 4)
    out = embed(np.array([2, 0]), E)
    np.testing.assert_allclose(out[0], E[2] * 2 + [0, 1, 0, 1], rtol=1e-15)
    np.testing.assert_allclose(
        out[1], E[0] * 2 + [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)],
        rtol=1e-15, atol=1e-15)
    # start=1 gives the second position's encoding to the first token
    np.testing.assert_allclose(embed(np.array([0]), E, start=1), out[1:], rtol=1e-15)


def torch_logits(model, emb, src, tgt, src_pad=None, tgt_mask=None, tgt_pad=None):
    """torch.nn.Embedding × √d_model + PE, torch.nn.Transformer, then x @ emb.weightᵀ."""
    d = emb.embedding_dim
    x = emb(torch.as_tensor(src)) * math.sqrt(d) + sinusoids(src.shape[-1], d)
    y = emb(torch.as_tensor(tgt)) * math.sqrt(d) + sinusoids(tgt.shape[-1], d)
    n = tgt.shape[-1]
    causal = torch.nn.Transformer.generate_square_subsequent_mask(n, dtype=torch.float64)
    kpm = None if src_pad is None else torch.as_tensor(~src_pad[:, 0])
    tgt_kpm = None  # a float mask, as the float causal mask (torch warns on a mix)
    if tgt_pad is not None:
        tgt_kpm = torch.zeros(tgt_pad[:, 0].shape, dtype=torch.float64).masked_fill(
            torch.as_tensor(~tgt_pad[:, 0]), -math.inf)
    h = model(x, y, tgt_mask=causal if tgt_mask is None else tgt_mask,
              src_key_padding_mask=kpm, memory_key_padding_mask=kpm,
              tgt_key_padding_mask=tgt_kpm)
    return h @ emb.weight.T


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_logits_match_torch(norm_first, rng):
    model = torch_transformer(8, 2, 16, 2, 2, norm_first)
    torch.manual_seed(3)
    emb = torch.nn.Embedding(11, 8, dtype=torch.float64)
    p = transformer_from_torch(model, embedding=emb)
    src, tgt = rng.integers(0, 11, size=(3, 5)), rng.integers(0, 11, size=(3, 4))
    src_pad = padding_mask([5, 2, 4], 5)
    logits = transformer(src, tgt, p, src_mask=src_pad, norm_first=norm_first)
    assert logits.shape == (3, 4, 11)
    assert max_abs(logits, torch_logits(model, emb, src, tgt, src_pad)) < TOL64
    # the target padding combined with the causal mask
    tgt_pad = padding_mask([4, 1, 3], 4)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    expected = torch_logits(model, emb, src, tgt, src_pad, tgt_pad=tgt_pad)
    assert max_abs(transformer(src, tgt, p, src_pad, tgt_pad, norm_first=norm_first),
                   expected) < TOL64
    # a float tgt_mask is added below the diagonal, -inf above it stays
    f = rng.normal(size=(4, 4))
    expected = torch_logits(model, emb, src, tgt, src_pad, causal + t64(f))
    assert max_abs(transformer(src, tgt, p, src_pad, f, norm_first=norm_first),
                   expected) < TOL64
    # torch tensors (ids and weights) give the same logits; float32 within 1e-5
    pt = p.map(t64)
    out = transformer(torch.as_tensor(src), torch.as_tensor(tgt), pt, src_pad,
                      norm_first=norm_first)
    assert out.dtype == torch.float64 and max_abs(out, logits) < 1e-12
    p32 = p.map(lambda a: torch.as_tensor(a, dtype=torch.float32))
    out32 = transformer(src, tgt, p32, src_pad, norm_first=norm_first)
    assert out32.dtype == torch.float32 and max_abs(out32, logits) < TOL32


def test_the_embedding_is_tied(rng):
    # one matrix: changing it changes source, target and the output projection
    p = TransformerParams.random(rng, vocab_size=6, d_model=4, n_heads=2, n_layers=1)
    src, tgt = np.array([[1, 2]]), np.array([[3]])
    E = t64(p.embedding, requires_grad=True)
    pt = p.map(t64)
    pt = type(pt)(**{**vars(pt), "embedding": E})
    transformer(src, tgt, pt)[0, 0, 5].backward()
    rows = (E.grad.abs().sum(1) > 0).numpy()
    # rows 1, 2 (source), 3 (target) and 5 (the output row) get gradient
    assert rows[[1, 2, 3, 5]].all() and not rows[[0, 4]].any()


# --- greedy decoding ------------------------------------------------------------------

def greedy_by_recomputation(src, p, max_len, bos, eos, src_mask=None, norm_first=False):
    """The oracle: at every step run the whole prefix through ``transformer`` and
    take the last position's logits (no cache)."""
    tokens = np.full((src.shape[0], 1), bos)
    done = np.zeros(src.shape[0], bool)
    steps = []
    while tokens.shape[1] < max_len and not done.all():
        logits = transformer(src, tokens, p, src_mask, norm_first=norm_first)[:, -1]
        steps.append(logits)
        new = np.where(done, eos, logits.argmax(-1))
        tokens = np.concatenate([tokens, new[:, None]], axis=1)
        done |= new == eos
    return tokens, np.stack(steps, axis=1) if steps else np.zeros((src.shape[0], 0, 0))


@pytest.mark.parametrize("source", ["paper", "torch-pre-LN", "torch-post-LN"])
def test_greedy_decode_with_the_cache_equals_recomputation(source, rng):
    if source == "paper":
        p, norm_first = TransformerParams.random(rng, vocab_size=9, d_model=8, n_heads=2,
                                                 d_ff=16, n_layers=2), False
    else:
        norm_first = source == "torch-pre-LN"
        emb = torch.nn.Embedding(9, 8, dtype=torch.float64)
        p = transformer_from_torch(torch_transformer(8, 2, 16, 2, 3, norm_first),
                                         embedding=emb)
    src = rng.integers(0, 9, size=(4, 6))
    src_pad = padding_mask([6, 3, 1, 5], 6)
    tokens, logits = greedy_decode(src, p, 8, bos=0, eos=1, src_mask=src_pad,
                                   norm_first=norm_first, return_logits=True)
    expected, expected_logits = greedy_by_recomputation(src, p, 8, 0, 1, src_pad, norm_first)
    np.testing.assert_array_equal(tokens, expected)
    assert logits.shape == expected_logits.shape
    assert max_abs(logits, expected_logits) < 1e-12
    # on torch tensors: the same tokens, logits within 1e-12 (float64), 1e-5 (float32)
    toks_t, logits_t = greedy_decode(torch.as_tensor(src), p.map(t64), 8, 0, 1, src_pad,
                                     norm_first=norm_first, return_logits=True)
    assert toks_t.dtype == torch.int64
    np.testing.assert_array_equal(toks_t.numpy(), tokens)
    assert max_abs(logits_t, logits) < 1e-12
    p32 = p.map(lambda a: torch.as_tensor(a, dtype=torch.float32))
    toks32, logits32 = greedy_decode(src, p32, 8, 0, 1, src_pad, norm_first=norm_first,
                                     return_logits=True)
    np.testing.assert_array_equal(toks32.numpy(), tokens)
    assert max_abs(logits32, logits) < TOL32


@pytest.mark.parametrize("eos", range(6))
def test_greedy_decode_stops_at_eos_and_pads_with_it(eos):
    # a small model (seed chosen) whose greedy outputs differ from row to row:
    # rows [0, 1, 1, ...], [0, 3, 3, ...], [0, 3, 3, 5, 5, 1, 1], ...
    p = TransformerParams.random(np.random.default_rng(7), vocab_size=6, d_model=8,
                                 n_heads=2, d_ff=16, n_layers=1)
    src = np.random.default_rng(107).integers(0, 6, size=(6, 4))
    tokens = greedy_decode(src, p, 7, bos=0, eos=eos)
    expected, _ = greedy_by_recomputation(src, p, 7, 0, eos)
    np.testing.assert_array_equal(tokens, expected)
    assert tokens.shape[1] <= 7 and (tokens[:, 0] == 0).all()
    for row in tokens:
        hits = np.flatnonzero(row[1:] == eos)
        if hits.size:  # after the first eos, only eos
            assert (row[1 + hits[0]:] == eos).all()
    # rows 0 and 2 finish with eos = 1 at steps 1 and 5: six tokens, not seven
    if eos == 1:
        assert greedy_decode(src[[0, 2]], p, 7, bos=0, eos=1).shape == (2, 6)
    # row 2 meets eos = 5 at step 3 and is padded: the 1s it would produce are gone
    if eos == 5:
        np.testing.assert_array_equal(tokens[2], [0, 3, 3, 5, 5, 5, 5])


def test_greedy_decode_of_one_token_is_bos(rng):
    p = TransformerParams.random(rng, vocab_size=5, d_model=4, n_heads=1, n_layers=1)
    tokens, logits = greedy_decode(np.array([[1, 2]]), p, 1, bos=3, eos=4,
                                   return_logits=True)
    np.testing.assert_array_equal(tokens, [[3]])
    assert logits.shape == (1, 0, 5)
    # an unbatched source gives an unbatched result
    assert greedy_decode(np.array([1, 2]), p, 3, bos=3, eos=4).shape[0] <= 3


def test_refusals_name_the_argument_passed(rng):
    """A bad target is called by the name the caller gave it: ``tgt_tokens`` in
    ``transformer``, ``tgt_in`` in ``loss_and_grads``; a target mask of the wrong
    shape is refused before any layer runs."""
    p = TransformerParams.random(rng, vocab_size=10, d_model=8, n_heads=2, d_ff=16,
                                 n_layers=1)
    src = np.array([[1, 2, 3]])
    with pytest.raises(ValueError, match=r"^tgt_tokens must lie in \[0, vocab_size=10\)"):
        transformer(src, src + 7, p)
    with pytest.raises(ValueError, match=r"^tgt_in must lie in \[0, vocab_size=10\)"):
        loss_and_grads(p, src, src + 7, src)
    with pytest.raises(ValueError, match=r"^tgt_in must be integer token ids"):
        loss_and_grads(p, src, src * 1.0, src)
    bad = np.ones((2, 2), dtype=bool)
    for call in (lambda: transformer(src, src, p, tgt_mask=bad),
                 lambda: loss_and_grads(p, src, src, src, tgt_mask=bad)):
        with pytest.raises(ValueError, match=r"tgt_mask of shape \(2, 2\) does not "
                           r"broadcast to \(batch, n_tgt, n_tgt\) = \(1, 3, 3\)"):
            call()

"""Checkpoints: an exact .npz round trip, files refused with a message naming the
problem, and §6.1's averaging checked by hand."""

from __future__ import annotations

import dataclasses
import json
import zipfile

import numpy as np
import pytest

import mini_transformer as mt
from mini_transformer.tree import tree_leaves


def params(seed=0, **kw):
    sizes = dict(vocab_size=11, d_model=8, n_heads=2, d_ff=16, n_layers=2) | kw
    return mt.TransformerParams.random(np.random.default_rng(seed), **sizes)


def test_save_load_is_exact(tmp_path):
    p = params()
    p = dataclasses.replace(  # final norms and another eps, to round-trip too
        p, encoder_norm=mt.LayerNormParams(np.ones(8), np.zeros(8)),
        decoder_norm=mt.LayerNormParams(np.ones(8), np.zeros(8)), eps=1e-6)
    p.save(tmp_path / "m.npz")
    q = mt.TransformerParams.load(tmp_path / "m.npz")
    assert len(tree_leaves(q)) == len(tree_leaves(p)) == 1 + 2 * 16 + 2 * 26 + 4
    for a, b in zip(tree_leaves(p), tree_leaves(q)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert q.eps == 1e-6 and q.decoder_layers[1].eps == p.decoder_layers[1].eps
    # the model computes the same thing
    src, tgt = np.array([[3, 4, 5]]), np.array([[1, 6]])
    assert np.array_equal(mt.transformer(src, tgt, p), mt.transformer(src, tgt, q))


def test_float32_stays_float32(tmp_path):
    p = params().map(lambda a: a.astype(np.float32))
    p.save(tmp_path / "m.npz")
    q = mt.TransformerParams.load(tmp_path / "m.npz")
    assert all(a.dtype == np.float32 and np.array_equal(a, b)
               for a, b in zip(tree_leaves(q), tree_leaves(p)))


def test_no_final_norms_stay_none(tmp_path):
    p = params(n_layers=1)
    p.save(tmp_path / "m.npz")
    q = mt.TransformerParams.load(tmp_path / "m.npz")
    assert q.encoder_norm is None and q.decoder_norm is None


def test_load_refuses_bad_files(tmp_path):
    path = tmp_path / "m.npz"
    params().save(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])                 # truncated
    with pytest.raises(ValueError, match="not a readable .npz checkpoint"):
        mt.TransformerParams.load(path)
    path.write_bytes(data[:100] + b"\0" * 50 + data[150:])  # corrupted
    with pytest.raises(ValueError, match="not a readable .npz checkpoint"):
        mt.TransformerParams.load(path)
    np.savez(path, x=np.zeros(3))                            # another npz
    with pytest.raises(ValueError, match="no mini_transformer header"):
        mt.TransformerParams.load(path)
    # mismatched: one array of another shape, one array missing
    with np.load(_saved(tmp_path)) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["decoder_layers.1.ffn.W_2"] = np.zeros((16, 9))
    np.savez(path, **arrays)
    msg = r"decoder_layers.1.ffn.W_2 has shape \(16, 9\), expected \(16, 8\)"
    with pytest.raises(ValueError, match=msg):
        mt.TransformerParams.load(path)
    del arrays["encoder_layers.0.attn.b_V"]
    arrays["decoder_layers.1.ffn.W_2"] = np.zeros((16, 8))
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=r"missing \['encoder_layers.0.attn.b_V'\]"):
        mt.TransformerParams.load(path)


def _saved(tmp_path):
    path = tmp_path / "good.npz"
    params().save(path)
    return path


def test_saved_file_needs_no_pickle(tmp_path):
    params().save(tmp_path / "m.npz")
    with zipfile.ZipFile(tmp_path / "m.npz") as z:
        assert "__header__.npy" in z.namelist()
    with np.load(tmp_path / "m.npz", allow_pickle=False) as f:
        assert all(f[k].dtype != object for k in f.files)


def test_average_params_by_hand():
    a, b, c = params(0), params(1), params(2)
    avg = mt.average_params([a, b, c])
    for x, y, z, m in zip(*(tree_leaves(p) for p in (a, b, c, avg))):
        np.testing.assert_allclose(m, (x + y + z) / 3, rtol=0, atol=1e-15)
    # one checkpoint averages to itself
    assert all(np.array_equal(x, y)
               for x, y in zip(tree_leaves(mt.average_params([a])), tree_leaves(a)))


def test_average_params_refuses_other_layouts():
    with pytest.raises(ValueError, match="one layout"):
        mt.average_params([params(0), params(1, d_ff=32)])
    with pytest.raises(ValueError, match="one layout"):
        mt.average_params([params(0), params(1, n_layers=1)])
    with pytest.raises(ValueError, match="at least one"):
        mt.average_params([])


def test_pre_ln_checkpoint_runs_pre_ln(tmp_path):
    """norm_first is stored: a pre-LN model saved and loaded computes what the pre-LN
    model computes, not what the same weights compute post-LN."""
    p = dataclasses.replace(params(), norm_first=True)
    p.save(tmp_path / "pre.npz")
    q = mt.TransformerParams.load(tmp_path / "pre.npz")
    assert q.norm_first is True
    src, tgt = np.array([[3, 4, 5]]), np.array([[1, 6]])
    pre = mt.transformer(src, tgt, p, norm_first=True)
    post = mt.transformer(src, tgt, p, norm_first=False)
    assert np.max(np.abs(pre - post)) > 1e-3
    np.testing.assert_array_equal(mt.transformer(src, tgt, q), pre)
    np.testing.assert_array_equal(mt.greedy_decode(src, q, 5, 1, 2),
                                  mt.greedy_decode(src, p, 5, 1, 2, norm_first=True))


def test_load_draws_no_weights(tmp_path, monkeypatch):
    params().save(tmp_path / "m.npz")

    def refuse(*args, **kwargs):
        raise AssertionError("load drew random weights")

    for cls in (mt.TransformerParams, mt.EncoderLayerParams, mt.DecoderLayerParams,
                mt.MultiHeadParams, mt.FeedForwardParams):
        monkeypatch.setattr(cls, "random", refuse)
    monkeypatch.setattr(np.random, "default_rng", refuse)
    q = mt.TransformerParams.load(tmp_path / "m.npz")
    assert q.vocab_size == 11 and len(q.encoder_layers) == 2


def test_version_2_file_refused_then_converted(tmp_path):
    """A version-2 file (flat LayerNorm names, norm1_gamma, encoder_norm_gamma) is
    refused with the conversion command in the message; convert gives a file that
    loads to the same params, bit for bit."""
    import json

    from mini_transformer.checkpoint import convert

    p = dataclasses.replace(params(), norm_first=True, eps=1e-6,
                            decoder_norm=mt.LayerNormParams(np.ones(8), np.zeros(8)))
    p.save(tmp_path / "v3.npz")
    with np.load(tmp_path / "v3.npz") as f:
        arrays = {k: f[k] for k in f.files}
    header = json.loads(str(arrays.pop("__header__")))
    assert header["version"] == 3 and "decoder_norm.gamma" in arrays
    flat = {k.replace(".gamma", "_gamma").replace(".beta", "_beta"): a
            for k, a in arrays.items()}          # version 2's names
    assert "encoder_layers.1.norm2_beta" in flat and "decoder_norm_gamma" in flat
    np.savez(tmp_path / "v2.npz", __header__=np.array(json.dumps(header | {"version": 2})),
             **flat)
    with pytest.raises(ValueError, match="version 2 .* python -m "
                                         "mini_transformer.checkpoint convert"):
        mt.TransformerParams.load(tmp_path / "v2.npz")
    convert(tmp_path / "v2.npz", tmp_path / "new.npz")
    q = mt.TransformerParams.load(tmp_path / "new.npz")
    assert q.norm_first is True and q.eps == 1e-6 and q.encoder_norm is None
    assert all(np.array_equal(a, b) for a, b in zip(tree_leaves(p), tree_leaves(q),
                                                      strict=True))


def test_shipped_checkpoints_are_version_3():
    """Every checkpoint the project ships loads (format version 3)."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    files = [*sorted((root / "book" / "data").glob("*.npz")),
             root / "mini_transformer" / "number_words" / "model" / "numbers_en_de.npz"]
    assert len(files) == 4
    for f in files:
        assert mt.TransformerParams.load(f).decoder_layers[0].norm3 is not None


def test_named_leaves_and_from_named_are_inverse():
    from mini_transformer.tree import from_named, named_leaves, named_settings

    p = dataclasses.replace(params(), norm_first=True, eps=1e-6)
    names = named_leaves(p)
    assert list(names)[:3] == ["embedding", "encoder_layers.0.attn.W_Q",
                               "encoder_layers.0.attn.W_K"]
    assert named_settings(p)["norm_first"] is True
    q = from_named(mt.TransformerParams, names | named_settings(p))
    assert q.norm_first is True and q.eps == 1e-6 and q.encoder_norm is None
    assert all(a is b for a, b in zip(tree_leaves(p), tree_leaves(q)))


def test_each_loading_error_has_its_own_one_line_message(tmp_path):
    """Missing, a folder, random bytes, another format, another version, NaN or Inf
    weights: each its own message, one line, naming the file; never a hint to load
    pickled data."""
    good = _saved(tmp_path)
    with np.load(good) as f:
        arrays = {k: f[k] for k in f.files}
    path = tmp_path / "m.npz"
    messages = []

    def refused(error, pattern):
        with pytest.raises(error, match=pattern) as e:
            mt.TransformerParams.load(path)
        message = str(e.value)
        assert "\n" not in message and str(path) in message, message
        assert "pickle" not in message, message
        messages.append(message)

    refused(FileNotFoundError, "no such file")
    path.mkdir()
    refused(IsADirectoryError, "is a folder, not a checkpoint file")
    path.rmdir()
    path.write_bytes(np.random.default_rng(0).bytes(5000))          # random bytes
    refused(ValueError, "is not a checkpoint: not an .npz archive")
    path.write_bytes(b"")
    refused(ValueError, "is not a checkpoint: not an .npz archive")
    np.save(path.with_suffix(".npy"), np.arange(3))                 # an .npy file
    path.write_bytes(path.with_suffix(".npy").read_bytes())
    refused(ValueError, "is not a checkpoint: not an .npz archive")
    np.savez(path, x=np.array([{"a": 1}], dtype=object))            # pickled objects
    refused(ValueError, "holds Python objects, which are never loaded")
    header = json.loads(str(arrays["__header__"]))
    for key, value, pattern in (("format", "keras", "its format is 'keras'"),
                                ("version", 7, "version 7; this mini_transformer "
                                               "reads version 3")):
        np.savez(path, **arrays | {"__header__": np.array(json.dumps(
            header | {key: value}))})
        refused(ValueError, pattern)
    for bad in (np.nan, np.inf, -np.inf):
        w = arrays["decoder_layers.1.ffn.W_2"].copy()
        w[3, 4] = bad
        np.savez(path, **arrays | {"decoder_layers.1.ffn.W_2": w})
        refused(ValueError, r"holds NaN or Inf weights \(in decoder_layers.1.ffn.W_2\)")
    kinds = {m.removeprefix(str(path)).split("(")[0] for m in messages}
    assert len(kinds) == 7, kinds                   # one message per kind of problem


def test_save_is_atomic(tmp_path, monkeypatch):
    """A save that fails half way leaves the old file as it was and no temporary
    file beside it."""
    path = _saved(tmp_path)
    before = path.read_bytes()

    def fail(f, **arrays):
        f.write(b"PK\x03\x04 half a file")
        raise OSError("No space left on device")

    monkeypatch.setattr(np, "savez", fail)
    with pytest.raises(OSError, match="No space left"):
        params(1).save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]

"""Checkpoints: ``TransformerParams`` to and from ``.npz`` files, and §6.1's
checkpoint averaging ("we used a single model obtained by averaging the last 5
checkpoints, which were written at 10-minute intervals")."""

from __future__ import annotations

import dataclasses
import json
import zipfile

import numpy as np

from .optim import tree_map

FORMAT = "mini_transformer.TransformerParams"


def average_params(params_list):
    """θ̄ = (1/N) Σ_i θ_i, array by array, over N params of one layout."""
    params_list = list(params_list)
    if not params_list:
        raise ValueError("average_params needs at least one params container")

    layout = _layout(params_list[0])
    for i, p in enumerate(params_list[1:], 1):
        if _layout(p) != layout:
            differ = sorted(set(layout.items()) ^ set(_layout(p).items()))[:2]
            raise ValueError(f"average_params needs params of one layout: params 0 "
                             f"and {i} differ in (array, shape) {differ}")

    def mean(*arrays):
        return sum(arrays[1:], arrays[0]) / len(arrays)

    return tree_map(mean, *params_list)


def _layout(params) -> dict:
    """{path: shape} of every array."""
    return {k: tuple(a.shape) for k, a in _flatten(params, as_numpy=False).items()}


def _flatten(params, as_numpy=True) -> dict:
    """{"encoder_layers.0.attn.W_Q": array, ...}: every array under its path."""
    out = {}

    def walk(obj, prefix):
        if dataclasses.is_dataclass(obj):
            for field in dataclasses.fields(obj):
                walk(getattr(obj, field.name), f"{prefix}{field.name}.")
        elif isinstance(obj, tuple):
            for i, item in enumerate(obj):
                walk(item, f"{prefix}{i}.")
        elif hasattr(obj, "shape"):
            out[prefix[:-1]] = np.asarray(obj) if as_numpy else obj
    walk(params, "")
    return out


def save_params(params, path) -> None:
    """Write every array of a ``TransformerParams`` (NumPy arrays) to an ``.npz``,
    with a header naming the layout: layer counts, final norms, eps."""
    header = {"format": FORMAT, "version": 1,
              "encoder_layers": len(params.encoder_layers),
              "decoder_layers": len(params.decoder_layers),
              "final_norms": params.encoder_norm_gamma is not None,
              "eps": [params.eps] + [layer.eps for layer in (*params.encoder_layers,
                                                             *params.decoder_layers)]}
    arrays = _flatten(params)
    with open(path, "wb") as f:
        np.savez(f, __header__=np.array(json.dumps(header)), **arrays)


def load_params(path, cls):
    """The ``TransformerParams`` ``save_params`` wrote, array for array; a truncated,
    corrupted or mismatched file raises ValueError saying what is wrong."""
    from .params import DecoderLayerParams, EncoderLayerParams

    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as e:
        raise ValueError(f"{path} is not a readable .npz checkpoint (truncated or "
                         f"corrupted?): {type(e).__name__}: {e}") from None
    try:
        header = json.loads(str(arrays.pop("__header__")))
    except (KeyError, json.JSONDecodeError):
        raise ValueError(f"{path} has no mini_transformer header: not a checkpoint "
                         f"written by TransformerParams.save") from None
    if header.get("format") != FORMAT or header.get("version") != 1:
        raise ValueError(f"{path}: unknown checkpoint format {header.get('format')!r} "
                         f"version {header.get('version')!r}")
    n_enc, n_dec = header.get("encoder_layers"), header.get("decoder_layers")
    if not (isinstance(n_enc, int) and isinstance(n_dec, int) and n_enc + n_dec > 0
            and isinstance(header.get("eps"), list)
            and len(header["eps"]) == 1 + n_enc + n_dec):
        raise ValueError(f"{path}: a corrupted header: {header}")
    emb = arrays.get("embedding")
    stack, attn = ("encoder_layers", "attn") if n_enc else ("decoder_layers",
                                                            "self_attn")
    W_Q, W_1 = arrays.get(f"{stack}.0.{attn}.W_Q"), arrays.get(f"{stack}.0.ffn.W_1")
    if emb is None or W_Q is None or W_1 is None or emb.ndim != 2 or W_Q.ndim != 3:
        raise ValueError(f"{path}: the embedding or the first layer's weights are "
                         f"missing or of the wrong rank")
    (vocab, d_model), (n_heads, d_ff) = emb.shape, (W_Q.shape[0], W_1.shape[-1])
    rng = np.random.default_rng(0)  # a template of the expected shapes
    sizes = dict(d_model=d_model, n_heads=n_heads, d_ff=d_ff)
    try:
        template = cls(
            embedding=np.zeros((vocab, d_model)),
            encoder_layers=tuple(EncoderLayerParams.random(rng, **sizes)
                                 for _ in range(n_enc)),
            decoder_layers=tuple(DecoderLayerParams.random(rng, **sizes)
                                 for _ in range(n_dec)),
            **({f"{s}_norm_{w}": np.zeros(d_model) for s in ("encoder", "decoder")
                for w in ("gamma", "beta")} if header["final_norms"] else {}))
    except ValueError as e:
        raise ValueError(f"{path}: inconsistent sizes: {e}") from None
    expected = _flatten(template)
    missing = sorted(set(expected) - set(arrays))
    extra = sorted(set(arrays) - set(expected))
    if missing or extra:
        raise ValueError(f"{path} does not match its header's layout: missing "
                         f"{missing[:4]}, unexpected {extra[:4]}")
    for key, want in expected.items():
        if arrays[key].shape != want.shape:
            raise ValueError(f"{path}: {key} has shape {arrays[key].shape}, expected "
                             f"{want.shape} (d_model={d_model}, n_heads={n_heads}, "
                             f"d_ff={d_ff})")
    eps = iter(header["eps"])
    params = dataclasses.replace(template, eps=next(eps))
    params = dataclasses.replace(params, **{
        stack: tuple(dataclasses.replace(layer, eps=next(eps))
                     for layer in getattr(params, stack))
        for stack in ("encoder_layers", "decoder_layers")})
    return _fill(params, arrays, "")


def _fill(obj, arrays, prefix):
    """``obj`` with each array replaced by ``arrays[its path]``."""
    if dataclasses.is_dataclass(obj):
        return dataclasses.replace(obj, **{
            f.name: _fill(getattr(obj, f.name), arrays, f"{prefix}{f.name}.")
            for f in dataclasses.fields(obj)})
    if isinstance(obj, tuple):
        return tuple(_fill(item, arrays, f"{prefix}{i}.") for i, item in enumerate(obj))
    if hasattr(obj, "shape"):
        return arrays[prefix[:-1]]
    return obj

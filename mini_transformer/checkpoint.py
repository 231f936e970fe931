"""Checkpoints: params containers to and from ``.npz`` files, and §6.1's
checkpoint averaging ("we used a single model obtained by averaging the last 5
checkpoints, which were written at 10-minute intervals").

The format (version 3). A checkpoint is an ``.npz`` archive (``numpy.savez``, no
pickled objects) holding:

- one array per weight, named by its path in the ``TransformerParams`` tree
  (``tree.named_leaves``): ``embedding``, ``encoder_layers.0.attn.W_Q``, ...,
  ``encoder_layers.0.norm1.gamma``, ``decoder_layers.1.cross_attn.b_O``,
  ``decoder_norm.beta``; an absent part (a final LayerNorm, a decoder-only
  layer's cross-attention) has no arrays;
- ``__header__``, a JSON string: ``format`` ("mini_transformer.TransformerParams"),
  ``version`` (3), ``encoder_layers`` and ``decoder_layers`` (the layer counts) and
  ``settings``, every non-array field under its path (``eps``,
  ``encoder_layers.0.eps``, ..., ``norm_first``).

Versions 1 and 2 named LayerNorm weights flat (``norm1_gamma``,
``encoder_norm_gamma``); ``load`` refuses them, and
``python -m mini_transformer.checkpoint convert OLD.npz NEW.npz`` (``convert``)
rewrites a version-2 file as version 3, weights unchanged.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np

from .tree import from_named, named_leaves, named_settings, tree_map

FORMAT = "mini_transformer.TransformerParams"
VERSION = 3


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
    return {k: tuple(a.shape) for k, a in named_leaves(params).items()}


def save_params(params, path) -> None:
    """Write every array of a ``TransformerParams`` (NumPy arrays) to an ``.npz``
    under its name, with a header holding the layer counts and every setting
    (eps, norm_first) under its name."""
    header = {"format": FORMAT, "version": VERSION,
              "encoder_layers": len(params.encoder_layers),
              "decoder_layers": len(params.decoder_layers),
              "settings": named_settings(params)}
    arrays = {k: np.asarray(a) for k, a in named_leaves(params).items()}
    _write(path, header, arrays)


def write_atomic(path, write) -> None:
    """``write(tmp)`` on a temporary file beside ``path``, then ``os.replace`` it to
    ``path`` (one rename: the file is whole or absent, never half); the temporary file
    is removed if ``write`` fails."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _write(path, header, arrays) -> None:
    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, __header__=np.array(json.dumps(header)), **arrays)

    write_atomic(path, write)


def load_params(path, cls):
    """The ``cls`` container ``save_params`` wrote, array for array, with its
    settings; built from the names, no weights drawn. A file that is missing, not a
    checkpoint, of another version, truncated, corrupted, mismatched or holding NaN
    or Inf weights raises FileNotFoundError or ValueError, one line saying which."""
    arrays, header = _read_checkpoint(path)
    version = header.get("version")
    if version == 2:
        raise ValueError(f"{path} is a checkpoint of version 2 (flat LayerNorm names); "
                         f"this mini_transformer reads version {VERSION}: convert it "
                         f"with python -m mini_transformer.checkpoint convert "
                         f"{path} NEW.npz")
    if version != VERSION:
        raise ValueError(f"{path} is a checkpoint of version {version!r}; this "
                         f"mini_transformer reads version {VERSION}")
    broken = [k for k, a in arrays.items()
              if a.dtype.kind in "fc" and not np.isfinite(a).all()]
    if broken:
        raise ValueError(f"{path} holds NaN or Inf weights (in {', '.join(broken[:3])}"
                         f"{' and more' if len(broken) > 3 else ''}): a diverged or "
                         f"damaged model")
    n_enc, n_dec = header.get("encoder_layers"), header.get("decoder_layers")
    settings = header.get("settings")
    if not (isinstance(n_enc, int) and isinstance(n_dec, int) and n_enc + n_dec > 0
            and isinstance(settings, dict)):
        raise ValueError(f"{path}: a corrupted header: {header}")
    try:
        params = from_named(cls, arrays | settings)
    except ValueError as e:
        raise ValueError(f"{path} does not match its header's layout: {e}") from None
    extra = sorted(set(arrays) - set(named_leaves(params)))
    if extra or (len(params.encoder_layers), len(params.decoder_layers)) != (n_enc,
                                                                             n_dec):
        raise ValueError(f"{path} does not match its header's layout: "
                         f"unexpected {extra[:4]}, {len(params.encoder_layers)} and "
                         f"{len(params.decoder_layers)} layers for {n_enc} and {n_dec}")
    if params.embedding is None or params.embedding.ndim != 2:
        raise ValueError(f"{path}: the embedding is missing or of the wrong rank")
    params.check_shapes(where=f"{path}: ")
    return params


def _read_npz(path) -> dict:
    """{name: array} of an .npz file, plain arrays only (never pickled objects)."""
    path = Path(path)
    if not path.is_file():
        raise (IsADirectoryError(f"{path} is a folder, not a checkpoint file")
               if path.is_dir() else FileNotFoundError(f"{path}: no such file"))
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != b"PK\x03\x04":  # every .npz is a zip archive
        raise ValueError(f"{path} is not a checkpoint: not an .npz archive (a "
                         f"checkpoint is the .npz file TransformerParams.save writes)")
    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as e:
        if "pickle" in str(e):  # an object array: never loaded, never suggested
            raise ValueError(f"{path} is not a checkpoint: it holds Python objects, "
                             f"which are never loaded (a checkpoint holds plain "
                             f"arrays)") from None
        raise ValueError(f"{path} is not a readable .npz checkpoint (truncated or "
                         f"corrupted): {type(e).__name__}: {e}") from None


def _read_checkpoint(path):
    """(arrays, header) of a file ``save_params`` wrote, any version."""
    arrays = _read_npz(path)
    try:
        header = json.loads(str(arrays.pop("__header__")))
    except (KeyError, json.JSONDecodeError):
        raise ValueError(f"{path} has no mini_transformer header: not a checkpoint "
                         f"written by TransformerParams.save") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        found = header.get("format") if isinstance(header, dict) else header
        raise ValueError(f"{path} is not a mini_transformer checkpoint (its format is "
                         f"{found!r})")
    return arrays, header


def convert(old, new) -> None:
    """Rewrite the version-2 checkpoint ``old`` as version 3 in ``new`` (may be the
    same path): each LayerNorm's flat names become its path, ``...norm1_gamma`` ->
    ``...norm1.gamma`` and ``encoder_norm_gamma`` -> ``encoder_norm.gamma``; the
    arrays and settings are unchanged."""
    arrays, header = _read_checkpoint(old)
    if header.get("version") != 2:
        raise ValueError(f"{old} is of version {header.get('version')!r}; convert "
                         f"reads version 2")
    renamed = {}
    for name, a in arrays.items():
        head, _, last = name.rpartition(".")
        for w in ("gamma", "beta"):
            if last.endswith(f"_{w}"):
                last = f"{last[:-len(w) - 1]}.{w}"
        renamed[f"{head}.{last}" if head else last] = a
    _write(new, header | {"version": VERSION}, renamed)


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 4 or sys.argv[1] != "convert":
        sys.exit("usage: python -m mini_transformer.checkpoint convert OLD.npz NEW.npz")
    convert(sys.argv[2], sys.argv[3])
    print(f"{sys.argv[3]}: version {VERSION}")

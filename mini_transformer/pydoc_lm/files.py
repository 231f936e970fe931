"""The model's files: the weights the package ships (``model/``), and reading and
writing them with the package's checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..params import TransformerParams

MODEL_DIR = Path(__file__).resolve().parent / "model"   # the shipped model
MODEL, LOG = "pydoc_lm.npz", "pydoc_lm_log.json"


def save_model(params, path) -> None:
    """Write the weights (as float64 NumPy arrays: a checkpoint holds one dtype)."""
    params.map(lambda a: np.asarray(a, dtype=np.float64)).save(path)


def load_model(path=None) -> TransformerParams:
    """The shipped model, or the one at ``path`` (a folder ``train`` wrote, or its
    ``.npz``); a missing or broken file raises FileNotFoundError or ValueError
    naming it."""
    path = MODEL_DIR if path is None else Path(path)
    model = path / MODEL if path.is_dir() else path
    if not model.exists():
        raise FileNotFoundError(f"{model}: no such model file")
    params = TransformerParams.load(model)
    if params.encoder_layers or not params.decoder_layers:
        raise ValueError(f"{model} is not a language model (it has "
                         f"{len(params.encoder_layers)} encoder layers)")
    return params


def trained_context(path=None) -> int:
    """The context length the model at ``path`` (default: the shipped one) was
    trained with, read from the log beside it."""
    folder = MODEL_DIR if path is None else Path(path)
    folder = folder if folder.is_dir() else folder.parent
    try:
        return int(json.loads((folder / LOG).read_text())["settings"]["context"])
    except (OSError, KeyError, TypeError, ValueError):
        raise ValueError(f"{folder / LOG}: no training log, or no context in it (the "
                         f"model's log is read from beside it)") from None

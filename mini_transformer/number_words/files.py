"""The experiment's files: their names and the shipped model.

The trained model travels with the package, as package data in ``model/`` (the
weights ``MODEL`` and their BPE ``BPE_FILE``), so ``load_model()`` finds it after
any install; ``train`` writes the same two files, with the log, the last weights and
early checkpoints, to a folder of the user's choice, each one whole
(``checkpoint.write_atomic``).
"""

from __future__ import annotations

from pathlib import Path

from ..bpe import BPE
from ..params import TransformerParams

MODEL_DIR = Path(__file__).resolve().parent / "model"   # the shipped model
MODEL, BPE_FILE, LOG = "numbers_en_de.npz", "numbers_en_de_bpe.json", \
    "numbers_en_de_log.json"
LAST, EARLY = "numbers_en_de_last.npz", "numbers_en_de_step{step}.npz"
INTERRUPTED = "numbers_en_de_interrupted.npz"


def load_model(path=None):
    """(params, bpe): the shipped model, or the one at ``path``: a folder holding
    ``MODEL`` and ``BPE_FILE`` (what ``train`` writes), or a model ``.npz`` with
    ``BPE_FILE`` beside it. Every problem raises FileNotFoundError or ValueError with
    one line naming the file: missing, not a checkpoint, another version, NaN or Inf
    weights (``TransformerParams.load``), not a BPE file (``BPE.load``), or a BPE of
    another size than the model's vocabulary."""
    path = MODEL_DIR if path is None else Path(path)
    model = path / MODEL if path.is_dir() else path
    bpe_file = model.parent / BPE_FILE
    if not model.exists():
        raise FileNotFoundError(f"{model}: no such model file")
    params = TransformerParams.load(model)
    if not bpe_file.is_file():
        raise FileNotFoundError(f"{bpe_file}: no such BPE file (the model's BPE is "
                                f"read from beside it)")
    bpe = BPE.load(bpe_file)
    if len(bpe) != params.vocab_size:
        raise ValueError(f"{bpe_file} does not belong to {model}: the BPE has "
                         f"{len(bpe)} tokens, the model's vocabulary "
                         f"{params.vocab_size}")
    return params, bpe

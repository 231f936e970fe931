"""The translator page's data: the committed model and its BPE as one JavaScript file.

    python _ext/translator_data.py OUT_DIR     # writes OUT_DIR/translator_data.js

The page (book/appendix_translator.md) loads the file with a ``<script>`` tag, which
works from ``file://`` where ``fetch`` does not. It is never edited by hand and
never committed: the book build writes it (this module is also a Sphinx extension,
named in _config.yml), together with copies of book/model_core.js and
book/translator.js, into the built site's ``_static/translator/``, so the page always
runs the model the package ships (mini_transformer/number_words/model/). What both
model pages share (the packing of the weights, the writing) is ``_ext/model_page.py``.

The file sets ``window.mtTranslatorData``: the sizes, the BPE (specials, alphabet,
merges, vocabulary), the longest source of any number below a million (in tokens,
EOS included), the held-out numbers (development and test, never trained on; as
the gaps between them), and every array of ``numbers_en_de.npz`` as float32,
little-endian, base64, in the order the file holds them, each with its name, shape
and offset. The task's constants, its English writer and the model's place are the
package's (``mini_transformer.number_words``), never written again here.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [p for p in (str(ROOT), str(ROOT / "_ext")) if p not in sys.path]

import model_page  # noqa: E402  (beside this file; the package is beside the book)

from mini_transformer.number_words import files as _files  # noqa: E402
from mini_transformer.number_words.data import MAX_NUMBER, split_numbers  # noqa: E402
from mini_transformer.number_words.normalize import english  # noqa: E402

BOOK = ROOT / "book"
MODEL = _files.MODEL_DIR / _files.MODEL          # the package data
BPE_FILE = _files.MODEL_DIR / _files.BPE_FILE
SCRIPT = BOOK / "translator.js"
OUT_NAME = "translator_data.js"
STATIC = Path("_static") / "translator"      # in the built site
FORMAT = "mini_transformer.translator_data"


def longest_source(bpe) -> tuple[int, int]:
    """(n, tokens): a number below a million whose English has the most BPE tokens,
    EOS included. BPE encodes word by word, and the words of a (the thousands) and
    of b (the rest) do not meet, so the longest is a number of the longest a."""
    count = [len(bpe.encode(english(a))) for a in range(1000)]
    a = max(range(1, 1000), key=count.__getitem__)
    n = max([*range(1000), *range(a * 1000, a * 1000 + 1000)],
            key=lambda n: len(bpe.encode(english(n))))
    return n, len(bpe.encode(english(n))) + 1          # + EOS


def build(model=MODEL, bpe_file=BPE_FILE) -> str:
    """The text of translator_data.js (the same bytes for the same inputs)."""
    from mini_transformer import BPE, TransformerParams

    params = TransformerParams.load(model)             # checks the file
    bpe = BPE.load(bpe_file)
    if params.norm_first:
        raise ValueError(f"{model}: a pre-LN model (norm_first=True), but translator.js runs "
                         "the paper's post-LN layers only")
    layer = params.encoder_layers[0]
    longest_n, longest_tokens = longest_source(bpe)
    _, held = split_numbers()
    data = {
        "format": FORMAT, "version": 1,
        "source": {"model": model.name, "bpe": Path(bpe_file).name,
                   "model_sha256": hashlib.sha256(Path(model).read_bytes()).hexdigest(),
                   "bpe_sha256":
                       hashlib.sha256(Path(bpe_file).read_bytes()).hexdigest()},
        "d_model": params.d_model, "n_heads": layer.attn.n_heads,
        "d_ff": layer.ffn.d_ff, "n_encoder_layers": len(params.encoder_layers),
        "n_decoder_layers": len(params.decoder_layers), "eps": params.eps,
        "norm_first": params.norm_first, "vocab_size": params.vocab_size,
        "specials": list(bpe.specials), "alphabet": list(bpe.alphabet),
        "merges": [list(m) for m in bpe.merges], "vocab": bpe.vocab,
        "pad_id": bpe.pad_id, "bos_id": bpe.bos_id, "eos_id": bpe.eos_id,
        "max_number": MAX_NUMBER,
        "held_out_gaps": np.diff(held, prepend=0).tolist(),
        "longest_source": {"number": longest_n, "tokens": longest_tokens},
        **model_page.pack(model),
    }
    if len(bpe.vocab) != params.vocab_size:
        raise ValueError(f"the BPE has {len(bpe.vocab)} tokens but the model "
                         f"{params.vocab_size}")
    return model_page.data_script("_ext/translator_data.py",
                                  [Path(model).name, Path(bpe_file).name],
                                  "mtTranslatorData", data)


# write(out_dir): translator_data.js and copies of model_core.js and translator.js
write, _build_finished, setup = model_page.hooks(build, OUT_NAME, SCRIPT, STATIC)

if __name__ == "__main__":
    model_page.main(write)

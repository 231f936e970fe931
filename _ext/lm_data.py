"""The language-model page's data: the shipped help-page model as one JavaScript file.

    python _ext/lm_data.py OUT_DIR     # writes OUT_DIR/lm_data.js, model_core.js and
                                       # lm_sampler.js

The page (book/appendix_language_model.md) loads the file with a ``<script>`` tag,
which works from ``file://`` where ``fetch`` does not, as the translator page does.
It is never edited by hand and never committed: the book build writes it (this module
is also a Sphinx extension, named in _config.yml), with copies of book/model_core.js
and book/lm_sampler.js, into the built site's ``_static/lm/``, so the page always runs
the model the package ships (mini_transformer/pydoc_lm/model/). What both model pages
share (the packing of the weights, the writing) is ``_ext/model_page.py``.

The file sets ``window.mtLmData``: the sizes (d_model, heads, d_ff, layers, the
LayerNorm's eps and order), the context length the model was trained with (from its
log), the separator a help page starts after, and every array of ``pydoc_lm.npz`` as
float32, little-endian, base64, in the order the file holds them, each with its name,
shape and offset. The shipped arrays hold float32 values (the model was trained in
float32 and saved in float64), so the float32 copy is exact; ``build`` checks it.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [p for p in (str(ROOT), str(ROOT / "_ext")) if p not in sys.path]

import model_page  # noqa: E402  (beside this file; the package is beside the book)

from mini_transformer.pydoc_lm import data as _data  # noqa: E402
from mini_transformer.pydoc_lm import files as _files  # noqa: E402

BOOK = ROOT / "book"
MODEL = _files.MODEL_DIR / _files.MODEL          # the package data
SCRIPT = BOOK / "lm_sampler.js"
OUT_NAME = "lm_data.js"
STATIC = Path("_static") / "lm"                  # in the built site
FORMAT = "mini_transformer.lm_data"


def build(model=MODEL) -> str:
    """The text of lm_data.js (the same bytes for the same model)."""
    model = Path(model)
    params = _files.load_model(model)                    # checks the file
    layer = params.decoder_layers[0]
    if params.vocab_size != _data.VOCAB_SIZE:
        raise ValueError(f"the model has {params.vocab_size} tokens, not the "
                         f"{_data.VOCAB_SIZE} bytes")
    data = {
        "format": FORMAT, "version": 1,
        "source": {"model": model.name,
                   "model_sha256": hashlib.sha256(model.read_bytes()).hexdigest()},
        "d_model": params.d_model, "n_heads": layer.self_attn.n_heads,
        "d_ff": layer.ffn.d_ff, "n_layers": len(params.decoder_layers),
        "eps": params.eps, "norm_first": bool(params.norm_first),
        "vocab_size": params.vocab_size,
        "context": _files.trained_context(model),
        "separator": _data.SEPARATOR,
        **model_page.pack(model, exact=True),          # float32 holds them exactly
    }
    return model_page.data_script("_ext/lm_data.py", [model.name], "mtLmData", data)


# write(out_dir): lm_data.js and copies of model_core.js and lm_sampler.js
write, _build_finished, setup = model_page.hooks(build, OUT_NAME, SCRIPT, STATIC)

if __name__ == "__main__":
    model_page.main(write)

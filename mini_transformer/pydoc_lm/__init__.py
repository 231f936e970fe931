"""A language model of Python's help pages (chapter 18): bytes in, the next byte out.

    pydoc-lm sample "The for statement" --temperature 0.8 --top-p 0.9
    pydoc-lm train --out-dir my_model

(or ``python -m mini_transformer.pydoc_lm``). ``data`` holds the corpus (the help
pages of ``pydoc_data.topics``, split by topic) and its byte tokens; ``train``
trains the decoder-only model with the NumPy hand gradients; ``score`` measures bits
per character; ``files`` saves and loads the weights the package ships; ``cli`` is
the command line.
"""

from .data import decode, encode, load_text
from .files import LOG, MODEL, MODEL_DIR, load_model
from .score import bits_per_character
from .train import Settings, train

__all__ = ["LOG", "MODEL", "MODEL_DIR", "Settings", "bits_per_character", "decode",
           "encode", "load_model", "load_text", "train"]

"""English number words to German, the paper's experiment in miniature (chapter 17).

    number-words translate "three hundred and forty-two"
    number-words train --out-dir my_model

(or ``python -m mini_transformer.number_words``).

``data`` draws the training numbers (never a held-out one, n % 97 == 0 and n > 0)
and encodes the pairs; ``train`` learns a shared BPE, trains the paper's post-LN
model from scratch with the NumPy hand gradients and writes the model, its BPE and
its log (``Settings`` holds every choice); ``files`` names the files and loads the
model the package ships (``load_model``); ``normalize`` reads what people type as
the training form; ``cli`` is the command line. The equations it uses are the
package's: nothing here is imported by the rest of it.
"""

from .data import DIGIT_SHARE, encode_pairs, training_numbers
from .files import (BPE_FILE, EARLY, INTERRUPTED, LAST, LOG, MODEL, MODEL_DIR,
                    load_model)
from .train import Settings, train

__all__ = ["BPE_FILE", "DIGIT_SHARE", "EARLY", "INTERRUPTED", "LAST", "LOG", "MODEL",
           "MODEL_DIR", "Settings", "encode_pairs", "load_model", "train",
           "training_numbers"]

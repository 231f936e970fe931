"""English number words to German, the paper's experiment in miniature (chapter 15).

    python -m mini_transformer.number_words train
    python -m mini_transformer.number_words translate "three hundred and forty-two"

``data`` draws the training numbers (never a held-out one, n % 97 == 0 and n > 0)
and encodes the pairs; ``train`` learns a shared BPE, trains the paper's post-LN
model from scratch with the NumPy hand gradients and writes the model, its BPE and
its log (``Settings`` holds every choice); ``cli`` is the command line. The
equations it uses are the package's: nothing here is imported by the rest of it.
"""

from .data import DIGIT_SHARE, encode_pairs, training_numbers
from .train import BPE_FILE, DATA, EARLY, LAST, LOG, MODEL, Settings, train

__all__ = ["BPE_FILE", "DATA", "DIGIT_SHARE", "EARLY", "LAST", "LOG", "MODEL",
           "Settings", "encode_pairs", "train", "training_numbers"]

"""English number words to German, the paper's experiment in miniature (chapter 17).

    >>> from mini_transformer.number_words import translate
    >>> translate(["three hundred and forty-two", "Forty two"])
    ['dreihundertzweiundvierzig', 'zweiundvierzig']

    number-words translate "three hundred and forty-two"
    number-words train --out-dir my_model

(or ``python -m mini_transformer.number_words``).

``data`` is the task: the numbers' words (``number_words``), their shapes, the split
into training, development and test numbers (1 in 97 of every shape held out, by a
hash; ``dev_test_numbers``) and the training draws; ``train`` learns a shared BPE,
trains the paper's post-LN model from scratch with the NumPy hand gradients and
writes the model, its BPE and its log (``Settings`` holds every choice); ``files``
names the files and loads the model the package ships (``load_model``);
``normalize`` reads what people type as the training form; ``translator`` is the
one call from Python (``translate``); ``cli`` is the command line. The equations it
uses are the package's: nothing here is imported by the rest of it, but for
``tasks``, which keeps the task's names for the chapters.
"""

from .data import (DIGIT_SHARE, SHAPES, dev_test_numbers, encode_pairs, is_held_out,
                   number_words, shape_of, split_numbers, training_numbers)
from .files import (BPE_FILE, EARLY, INTERRUPTED, LAST, LOG, MODEL, MODEL_DIR,
                    load_model)
from .normalize import NotANumber, normalize
from .train import Settings, train
from .translator import translate

__all__ = ["BPE_FILE", "DIGIT_SHARE", "EARLY", "INTERRUPTED", "LAST", "LOG", "MODEL",
           "MODEL_DIR", "NotANumber", "SHAPES", "Settings", "dev_test_numbers",
           "encode_pairs", "is_held_out", "load_model", "normalize", "number_words",
           "shape_of", "split_numbers", "train", "training_numbers", "translate"]

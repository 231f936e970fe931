"""The old home of the number-words experiment, now ``mini_transformer.number_words``:
kept only while chapter 15 imports these two names from here; it shadows the
standard library's ``numbers`` for a script run inside the package folder."""

from .number_words.data import encode_pairs, training_numbers  # noqa: F401

"""The old home of the number-words experiment, now ``mini_transformer.number_words``:
kept only while chapter 15 imports two names from here and the README runs
``python -m mini_transformer.numbers``; it shadows the standard library's
``numbers`` for a script run inside the package folder, so it goes once they use
the new names."""

from .number_words.data import encode_pairs, training_numbers  # noqa: F401

if __name__ == "__main__":
    import sys

    from .number_words.cli import main

    sys.exit(main())

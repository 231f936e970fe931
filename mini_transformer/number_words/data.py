"""The experiment's data: training numbers drawn by length, pairs encoded for the
model. The numbers, their words and the held-out rule are ``tasks``'s."""

from __future__ import annotations

import numpy as np

from ..tasks import HELD_OUT_MODULUS, MAX_NUMBER

DIGIT_SHARE = np.array([10, 90, 900, 9_000, 90_000, 900_000]) / 1_000_000


GERMAN_SPLIT = r"(?=hundert|tausend)|(?<=hundert|tausend)|(?<!h)(?=und)|(?<=[^h]und)"
"""The BPE's pre-tokenizer: cut a German number word around "hundert", "tausend" and
"und" (not the "und" inside "hundert", nor English "hundred"):
"dreihundertzweiundvierzig" -> "drei" "hundert" "zwei" "und" "vierzig"."""


def training_numbers(rng, n, round_share=0.0):
    """n training numbers (held-out ones skipped): a number of digits d = 1..6, then a
    number of d digits uniformly. d is drawn half from the uniform 1/6 and half from
    its share of the numbers below a million (90% have six digits): the long numbers
    that dominate the held-out set are drawn most, and the short ones, which a model
    trained on six digits alone may never learn to end early, are still seen.
    round_share: the share of the numbers of four digits or more rounded down to
    whole thousands (1,000 ... 999,000 are only 0.1% of the numbers)."""
    p_digits = 0.5 / 6 + 0.5 * DIGIT_SHARE
    digits = rng.choice(np.arange(1, 7), size=4 * n, p=p_digits)
    low = np.where(digits == 1, 0, 10 ** (digits - 1))
    numbers = low + (rng.random(4 * n) * (10 ** digits - low)).astype(np.int64)
    if round_share:
        rounded = (rng.random(4 * n) < round_share) & (numbers >= 1000)
        numbers = np.where(rounded, numbers - numbers % 1000, numbers)
    numbers = numbers[(numbers % HELD_OUT_MODULUS != 0) | (numbers == 0)]
    return np.minimum(numbers[:n], MAX_NUMBER)


def encode_pairs(pairs, bpe):
    """(src, tgt) id lists: source + EOS, and BOS + target + EOS (so that tgt[:-1]
    is the decoder's input and tgt[1:] what it must predict)."""
    src = [bpe.encode(s) + [bpe.eos_id] for s, _ in pairs]
    tgt = [[bpe.bos_id, *bpe.encode(t), bpe.eos_id] for _, t in pairs]
    return src, tgt

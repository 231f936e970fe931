"""The experiment's data, in one place: the numbers and their words, the split into
training, development and test numbers, the training draws, and the pairs encoded
for the model.

A number's *shape* is its digits with each non-zero digit written d (42 -> "dd",
100,001 -> "d0000d"; 0 is its own shape): 64 shapes below a million, from 1 number
("0") to 531,441 ("dddddd"). The split is by shape, so that the rare shapes are
held out too: the numbers of each shape are put in the order of a fixed hash
(``number_hash``), and those at rank r with r % 194 == 0 form the *test* set, those
with r % 194 == 1 the *development* set; zero is trained on (it is the only number
with its word, "zero" -> "null"). Every shape of two numbers or more has at least
one number in each set; 1 in 97 numbers is held out.
"""

from __future__ import annotations

import functools

import numpy as np

MAX_NUMBER = 999_999  # "eine Million" has a space: stay below a million
HELD_OUT_EVERY = 97   # 1 number in 97 of each shape is held out: half dev, half test
DIGIT_SHARE = np.array([10, 90, 900, 9_000, 90_000, 900_000]) / 1_000_000

# the 64 shapes in order: "0", then by length, then as binary (d = 1, 0 = 0)
SHAPES = ("0",) + tuple(format(b, f"0{k}b").replace("1", "d")
                        for k in range(1, 7) for b in range(2 ** (k - 1), 2 ** k))

GERMAN_SPLIT = r"(?=hundert|tausend)|(?<=hundert|tausend)|(?<!h)(?=und)|(?<=[^h]und)"
"""The BPE's pre-tokenizer: cut a German number word around "hundert", "tausend" and
"und" (not the "und" inside "hundert", nor English "hundred"):
"dreihundertzweiundvierzig" -> "drei" "hundert" "zwei" "und" "vierzig"."""


def number_words(numbers, src_lang: str = "en", tgt_lang: str = "de"):
    """[(source, target), ...]: each number written out by ``num2words`` in both
    languages, e.g. 342 -> ("three hundred and forty-two", "dreihundertzweiundvierzig").

    numbers: integers in 0..999,999. num2words is a rule system nobody here wrote
    (a pinned dependency); its quirks are kept as they are.
    """
    try:
        from num2words import num2words
    except ImportError:
        raise ModuleNotFoundError(
            "the number words need the num2words package: pip install num2words "
            "(it is a dependency of mini-transformer)", name="num2words") from None
    out = []
    for n in numbers:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) \
                or not 0 <= n <= MAX_NUMBER:
            raise ValueError(f"numbers must be integers in 0..{MAX_NUMBER}, got {n!r}")
        out.append((num2words(int(n), lang=src_lang), num2words(int(n), lang=tgt_lang)))
    return out


def number_hash(n):
    """A fixed 32-bit integer hash of n (0 <= n < 2**32; the "lowbias32" mixer:
    xor-shift, multiply, xor-shift, multiply, xor-shift), as uint32: the order in
    which the split takes each shape's numbers. Works on arrays."""
    x = np.array(n, dtype=np.int64, ndmin=1).astype(np.uint32)
    with np.errstate(over="ignore"):          # the products wrap, as meant
        x = x ^ (x >> np.uint32(16))
        x = x * np.uint32(0x7FEB352D)
        x = x ^ (x >> np.uint32(15))
        x = x * np.uint32(0x846CA68B)
        x = x ^ (x >> np.uint32(16))
    return x if np.ndim(n) else x[0]


def shape_of(n) -> str:
    """n's shape: 42 -> "dd", 100,001 -> "d0000d", 0 -> "0"."""
    n = int(n)
    if not 0 <= n <= MAX_NUMBER:
        raise ValueError(f"n must be in 0..{MAX_NUMBER}, got {n}")
    return "0" if n == 0 else "".join("0" if c == "0" else "d" for c in str(n))


def shape_index(numbers):
    """The index in ``SHAPES`` of each number's shape (an int64 array)."""
    n = np.asarray(numbers, dtype=np.int64)
    bits = np.zeros(n.shape, dtype=np.int64)
    for k in range(6):
        digit = n // 10 ** k % 10
        present = n >= 10 ** k
        bits += (present & (digit != 0)) << k     # bit k: the digit of 10**k
    # SHAPES lists, for each length L, the binary forms from 2**(L-1): index
    # 1 + (2**(L-1) - 1) + (bits - 2**(L-1)) = bits (for n > 0), 0 for n = 0
    return np.where(n == 0, 0, bits)


def shape_members(shape: str):
    """Every number of a shape, increasing (an int64 array)."""
    if shape not in SHAPES:
        raise ValueError(f"{shape!r} is not a shape (digits d and 0, no leading 0)")
    if shape == "0":
        return np.zeros(1, dtype=np.int64)
    places = [len(shape) - 1 - i for i, c in enumerate(shape) if c == "d"]
    grids = np.meshgrid(*[np.arange(1, 10)] * len(places), indexing="ij")
    return np.sort(sum(g.ravel().astype(np.int64) * 10 ** p
                       for g, p in zip(grids, places)))


@functools.lru_cache(maxsize=1)
def _split_table():
    """A uint8 per number 0..MAX_NUMBER: 0 training, 1 development, 2 test."""
    n = np.arange(MAX_NUMBER + 1, dtype=np.int64)
    shape = shape_index(n)
    order = np.lexsort((n, number_hash(n), shape))      # by shape, then by hash
    sorted_shape = shape[order]
    first = np.searchsorted(sorted_shape, sorted_shape)     # each shape's start
    rank = np.arange(n.size) - first
    table = np.zeros(n.size, dtype=np.uint8)
    table[order[rank % (2 * HELD_OUT_EVERY) == 0]] = 2
    table[order[rank % (2 * HELD_OUT_EVERY) == 1]] = 1
    table[0] = 0                                # zero is trained on
    table.setflags(write=False)
    return table


def which_set(n) -> str:
    """"train", "dev" or "test": where n belongs (see the module's docstring)."""
    n = _check_number(n, "n")
    return ("train", "dev", "test")[_split_table()[n]]


def is_held_out(n) -> bool:
    """True if n is never trained on, nor used to learn the BPE: a development or
    test number (about 1 in 97 of every shape; zero is trained on)."""
    return _split_table()[_check_number(n, "n")] != 0


def split_numbers(low: int = 0, high: int = MAX_NUMBER):
    """(train, held_out): the integers low..high (inclusive) split by ``is_held_out``,
    as int64 arrays in increasing order (held_out: development and test numbers)."""
    table = _range(low, high)
    n = np.arange(low, high + 1, dtype=np.int64)
    return n[table == 0], n[table != 0]


def dev_test_numbers(low: int = 0, high: int = MAX_NUMBER):
    """(dev, test): the held-out integers low..high of each set, increasing. Every
    choice is made on dev; test is scored once, for the shipped model."""
    table = _range(low, high)
    n = np.arange(low, high + 1, dtype=np.int64)
    return n[table == 1], n[table == 2]


def _check_number(n, name):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) \
            or not 0 <= n <= MAX_NUMBER:
        raise ValueError(f"{name} must be an integer in 0..{MAX_NUMBER}, got {n!r}")
    return int(n)


def _range(low, high):
    for name, n in (("low", low), ("high", high)):
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise ValueError(f"{name} must be an integer, got {n!r}")
    if not 0 <= low <= high <= MAX_NUMBER:
        raise ValueError(f"need 0 <= low <= high <= {MAX_NUMBER}, got low={low}, "
                         f"high={high}")
    return _split_table()[low: high + 1]


def training_numbers(rng, n, round_share=0.0, shape_share=0.0):
    """n training numbers (held-out ones skipped). A draw is, with probability
    ``shape_share``, a shape chosen uniformly among the 64 and then a number of that
    shape uniformly (each non-zero digit 1..9); otherwise a number of digits
    d = 1..6, then a number of d digits uniformly, d drawn half from the uniform 1/6
    and half from its share of the numbers below a million (90% have six digits).
    Drawn by length alone, a shape gets its share of the numbers: 100,001 ...
    900,009 ("d0000d") are 81 of the 900,000 six-digit numbers, 1 draw in 20,000;
    the shape draws give each shape 1 in 64 of them.
    round_share: the share of the length draws of four digits or more rounded down
    to whole thousands."""
    k = 4 * n + 64
    digits = rng.choice(np.arange(1, 7), size=k, p=0.5 / 6 + 0.5 * DIGIT_SHARE)
    low = np.where(digits == 1, 0, 10 ** (digits - 1))
    numbers = low + (rng.random(k) * (10 ** digits - low)).astype(np.int64)
    if round_share:
        rounded = (rng.random(k) < round_share) & (numbers >= 1000)
        numbers = np.where(rounded, numbers - numbers % 1000, numbers)
    if shape_share:
        by_shape = rng.random(k) < shape_share
        shape = rng.integers(0, len(SHAPES), size=k)
        digit = rng.integers(1, 10, size=(k, 6))
        place = (shape[:, None] >> np.arange(6)) & 1        # bit j: 10**j is d
        drawn = np.sum(place * digit * 10 ** np.arange(6), axis=1)
        numbers = np.where(by_shape, drawn, numbers)
    numbers = np.minimum(numbers, MAX_NUMBER)
    return numbers[_split_table()[numbers] == 0][:n]


def encode_pairs(pairs, bpe):
    """(src, tgt) id lists: source + EOS, and BOS + target + EOS (so that tgt[:-1]
    is the decoder's input and tgt[1:] what it must predict)."""
    src = [bpe.encode(s) + [bpe.eos_id] for s, _ in pairs]
    tgt = [[bpe.bos_id, *bpe.encode(t), bpe.eos_id] for _, t in pairs]
    return src, tgt

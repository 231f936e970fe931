"""The synthetic tasks of the training chapter, checked on examples written out by hand."""

import numpy as np
import pytest

from mini_transformer.tasks import BOS, EOS, reverse_task, sequence_accuracy, sort_task


def test_reverse_task_by_hand():
    src, tgt_in, tgt_out = reverse_task(np.random.default_rng(0), 3, 4, 10)
    assert src.shape == (3, 4) and tgt_in.shape == tgt_out.shape == (3, 5)
    assert src.min() >= 2 and src.max() <= 9
    for s, i, o in zip(src, tgt_in, tgt_out):
        assert list(o) == [s[3], s[2], s[1], s[0], EOS]
        assert list(i) == [BOS, s[3], s[2], s[1], s[0]]


def test_sort_task_by_hand():
    src, tgt_in, tgt_out = sort_task(np.random.default_rng(1), 4, 5, 12)
    for s, i, o in zip(src, tgt_in, tgt_out):
        assert list(o[:-1]) == sorted(s) and o[-1] == EOS
        assert i[0] == BOS and list(i[1:]) == sorted(s)


def test_sequence_accuracy():
    tgt_out = np.array([[4, 3, EOS], [5, 6, EOS]])
    decoded = np.array([[BOS, 4, 3, EOS], [BOS, 5, 7, EOS]])
    assert sequence_accuracy(decoded, tgt_out) == 0.5
    assert sequence_accuracy(np.array([[BOS, EOS], [BOS, EOS]]), tgt_out) == 0.0  # stopped early


@pytest.mark.parametrize("call, match", [
    (lambda: reverse_task(np.random.default_rng(0), 0, 4, 10), "batch must be an integer >= 1"),
    (lambda: reverse_task(np.random.default_rng(0), 2, 4, 3), "vocab_size must be an integer >= 4"),
    (lambda: sequence_accuracy(np.zeros((2, 3)), np.zeros((3, 2))), "the same batch"),
])
def test_refusals(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- the number-words task -------------------------------------------------------

from mini_transformer.number_words.data import is_held_out, number_words, split_numbers  # noqa: E402


def test_number_words_by_hand():
    pairs = number_words([0, 21, 342, 1101, 101000, 999999])
    assert pairs == [
        ("zero", "null"),
        ("twenty-one", "einundzwanzig"),
        ("three hundred and forty-two", "dreihundertzweiundvierzig"),
        ("one thousand, one hundred and one", "eintausendeinhunderteins"),
        ("one hundred and one thousand", "einhunderteinstausend"),  # num2words' quirk
        ("nine hundred and ninety-nine thousand, nine hundred and ninety-nine",
         "neunhundertneunundneunzigtausendneunhundertneunundneunzig"),
    ]
    assert number_words([7], "de", "en") == [("sieben", "seven")]


def _hash(n):
    """lowbias32 written out on Python integers (the oracle of ``number_hash``)."""
    m = 0xFFFFFFFF
    n ^= n >> 16
    n = (n * 0x7FEB352D) & m
    n ^= n >> 15
    n = (n * 0x846CA68B) & m
    return n ^ (n >> 16)


def _shape(n):
    return "0" if n == 0 else "".join("0" if c == "0" else "d" for c in str(n))


@pytest.fixture(scope="module")
def oracle_split():
    """{n: "train" | "dev" | "test"} by the documented rule, from strings and
    sorting: in each shape, in the order of the hash (then n), rank r % 194 == 0 is
    test, r % 194 == 1 is dev; zero is trained on."""
    by_shape = {}
    for n in range(1_000_000):
        by_shape.setdefault(_shape(n), []).append(n)
    where = {}
    for numbers in by_shape.values():
        for r, n in enumerate(sorted(numbers, key=lambda n: (_hash(n), n))):
            where[n] = {0: "test", 1: "dev"}.get(r % 194, "train")
    where[0] = "train"
    return where, by_shape


def test_held_out_rule(oracle_split):
    from mini_transformer.number_words.data import (SHAPES, dev_test_numbers,
                                                    number_hash, which_set)

    where, by_shape = oracle_split
    assert [int(number_hash(n)) for n in (0, 1, 97, 999_999)] == \
        [_hash(n) for n in (0, 1, 97, 999_999)]
    assert sorted(SHAPES) == sorted(by_shape) and len(SHAPES) == 64
    train, held = split_numbers()
    dev, test = dev_test_numbers()
    assert len(train) + len(held) == 1_000_000
    assert sorted([*dev, *test]) == list(held)
    assert list(dev) == [n for n in range(1_000_000) if where[n] == "dev"]
    assert list(test) == [n for n in range(1_000_000) if where[n] == "test"]
    assert not is_held_out(0) and which_set(0) == "train"
    assert all(is_held_out(n) for n in test[:50]) and not is_held_out(int(train[5]))
    # every shape but "0" has numbers in both sets; about 1 in 97 held out
    for shape, numbers in by_shape.items():
        sets = [where[n] for n in numbers]
        if shape != "0":
            assert "dev" in sets and "test" in sets, shape
            assert sets.count("test") == -(-len(numbers) // 194)
    assert 1_000_000 / 97 < len(held) < 1_000_000 / 95
    train, held = split_numbers(0, 200)
    assert list(held) == [n for n in range(201) if where[n] != "train"]
    assert len(train) + len(held) == 201


@pytest.mark.parametrize("bad", [-1, 1_000_000, 2.5, True])
def test_number_words_refuses(bad):
    with pytest.raises(ValueError, match="0..999999"):
        number_words([bad])


def test_training_numbers_skip_held_out_and_round_some():
    from mini_transformer.number_words import training_numbers

    plain = training_numbers(np.random.default_rng(0), 50_000)
    assert len(plain) == 50_000 and plain.min() >= 0 and plain.max() <= 999_999
    assert not any(is_held_out(int(n)) for n in plain) and np.any(plain == 0)
    big = plain >= 1000
    # uniform draws: about 1 in 1,000 numbers of four digits or more is round
    assert np.mean(plain[big] % 1000 == 0) < 0.003
    rounded = training_numbers(np.random.default_rng(0), 50_000, round_share=0.2)
    big = rounded >= 1000
    # a share of 0.2 rounded, plus the ~0.1% already round; held-out ones dropped
    assert 0.18 < np.mean(rounded[big] % 1000 == 0) < 0.22
    assert not any(is_held_out(int(n)) for n in rounded)
    assert np.mean(rounded < 1000) == pytest.approx(np.mean(plain < 1000), abs=0.01)


def test_training_numbers_give_each_shape_its_share():
    """shape_share 0.5: half the draws uniform over the 64 shapes, so each shape
    gets at least 0.5 / 64 of them; "d0000d" (81 of the 900,000 six-digit numbers)
    gets almost none without."""
    from mini_transformer.number_words import training_numbers

    n = 64_000
    drawn = training_numbers(np.random.default_rng(1), n, shape_share=0.5)
    counts = {}
    for x in drawn:
        counts[_shape(int(x))] = counts.get(_shape(int(x)), 0) + 1
    assert len(counts) == 64
    # held-out numbers are dropped: a shape of 9 keeps 7 of them, so 7/9 of its share
    assert min(counts.values()) > 0.5 / 64 * n * 7 / 9 * 0.85
    assert not any(is_held_out(int(x)) for x in drawn)
    plain = training_numbers(np.random.default_rng(1), n)
    assert sum(_shape(int(x)) == "d0000d" for x in plain) < 20


def test_num2words_is_a_dependency_and_its_absence_is_named(monkeypatch):
    """``pip install .`` brings num2words (a dependency, so that ``number-words
    train`` works); without it the number words fail with one line saying what to
    install."""
    import sys
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml")
                           .read_text())["project"]
    assert any(d.split(">")[0].split("=")[0].strip() == "num2words"
               for d in project["dependencies"])
    monkeypatch.setitem(sys.modules, "num2words", None)     # import fails
    with pytest.raises(ModuleNotFoundError, match="pip install num2words"):
        number_words([7])

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

from mini_transformer.tasks import is_held_out, number_words, split_numbers  # noqa: E402


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


def test_held_out_rule():
    train, held = split_numbers()
    assert len(train) + len(held) == 1_000_000
    # the multiples of 97 from 0 to 97 * 10309 = 999,973
    assert len(held) == 10_310 and held[0] == 0 and held[-1] == 999_973
    assert all(n % 97 == 0 for n in held[:50]) and not np.any(train % 97 == 0)
    assert is_held_out(194) and not is_held_out(195)
    # every length from one digit to six
    assert {len(str(n)) for n in held} == {1, 2, 3, 4, 5, 6}


@pytest.mark.parametrize("bad", [-1, 1_000_000, 2.5, True])
def test_number_words_refuses(bad):
    with pytest.raises(ValueError, match="0..999999"):
        number_words([bad])

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
    # the multiples of 97 from 97 to 97 * 10309 = 999,973; zero is trained on
    assert len(held) == 10_309 and held[0] == 97 and held[-1] == 999_973
    assert list(held[:3]) == [97, 194, 291] and train[0] == 0 and 97 not in train
    assert not is_held_out(0) and is_held_out(194) and not is_held_out(195)
    assert not np.any(train[1:] % 97 == 0)
    # every length from two digits to six
    assert {len(str(n)) for n in held} == {2, 3, 4, 5, 6}
    train, held = split_numbers(0, 200)
    assert list(held) == [97, 194] and len(train) == 199


@pytest.mark.parametrize("bad", [-1, 1_000_000, 2.5, True])
def test_number_words_refuses(bad):
    with pytest.raises(ValueError, match="0..999999"):
        number_words([bad])


def test_training_numbers_skip_held_out_and_round_some():
    from mini_transformer.number_words import training_numbers

    plain = training_numbers(np.random.default_rng(0), 50_000)
    assert len(plain) == 50_000 and plain.min() >= 0 and plain.max() <= 999_999
    assert not np.any((plain % 97 == 0) & (plain > 0)) and np.any(plain == 0)
    big = plain >= 1000
    # uniform draws: about 1 in 1,000 numbers of four digits or more is round
    assert np.mean(plain[big] % 1000 == 0) < 0.003
    rounded = training_numbers(np.random.default_rng(0), 50_000, round_share=0.2)
    big = rounded >= 1000
    # a share of 0.2 rounded, plus the ~0.1% already round; multiples of 97 dropped
    assert 0.18 < np.mean(rounded[big] % 1000 == 0) < 0.22
    assert not np.any((rounded % 97 == 0) & (rounded > 0))
    assert np.mean(rounded < 1000) == pytest.approx(np.mean(plain < 1000), abs=0.01)

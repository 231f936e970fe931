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

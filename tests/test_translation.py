"""Translation end to end on a small random model (the plumbing: batching, masks,
order, greedy vs beam), and the metrics: exact match by hand, BLEU and chrF from
sacrebleu, with the facts about this task computed."""

from __future__ import annotations

import numpy as np
import pytest

import mini_transformer as mt
from mini_transformer.number_words.data import number_words

TEXTS = ["three hundred and forty-two", "seven", "one thousand, one hundred and one",
         "twenty-one thousand", "zero"]


@pytest.fixture(scope="module")
def setup():
    pairs = number_words([342, 7, 1101, 21000, 0, 15, 999, 123456, 80, 4])
    bpe = mt.BPE.learn([t for p in pairs for t in p], vocab_size=80)
    params = mt.TransformerParams.random(np.random.default_rng(0),
                                         vocab_size=len(bpe), d_model=16, n_heads=2,
                                         n_layers=1)
    return params, bpe


def test_greedy_translation_is_greedy_decode_by_hand(setup):
    params, bpe = setup
    out = mt.translate(TEXTS, params, bpe, beam_size=None, max_len=8)
    for text, got in zip(TEXTS, out):
        src = np.array([bpe.encode(text) + [bpe.eos_id]])
        row = [int(t) for t in mt.greedy_decode(src, params, 8, bpe.bos_id,
                                                bpe.eos_id)[0, 1:]]
        want = row[: row.index(bpe.eos_id)] if bpe.eos_id in row else row
        assert got == bpe.decode(want)


def test_batched_translation_equals_one_at_a_time(setup):
    params, bpe = setup
    together = mt.translate(TEXTS, params, bpe, beam_size=4, max_len=8)
    alone = [mt.translate([t], params, bpe, beam_size=4, max_len=8)[0] for t in TEXTS]
    assert together == alone
    assert mt.translate(TEXTS[0], params, bpe, max_len=8) == alone[:1]  # one string


def test_exact_match_by_hand():
    assert mt.exact_match(["a", "b", "c", "d"], ["a", "x", "c", "d "]) == 0.5
    with pytest.raises(ValueError, match="as many hypotheses as references"):
        mt.exact_match(["a"], ["a", "b"])


def test_bleu_and_chrf_on_number_words():
    import sacrebleu

    refs = ["dreihundertzweiundvierzig", "sieben", "eintausendeinhunderteins"]
    hyps = ["dreihundertzweiundvierzig", "sieben", "eintausendeinhundertzwei"]
    # Each German number is one word: a corpus of one-word sentences has no 2-, 3-
    # or 4-grams, so three of BLEU's four n-gram precisions are 0, and BLEU (their
    # geometric mean) is 0, even for a perfect translation.
    assert mt.corpus_bleu(refs, refs) == 0.0
    assert mt.corpus_bleu(hyps, refs) == 0.0
    assert sacrebleu.corpus_bleu(refs, [refs]).precisions == [100.0, 0.0, 0.0, 0.0]
    # chrF sees the characters: nearly right is nearly 100, not 0
    chrf = mt.corpus_chrf(hyps, refs)
    assert chrf == sacrebleu.corpus_chrf(hyps, [refs]).score and 90 < chrf < 100
    assert mt.corpus_chrf(refs, refs) == 100.0
    english = ["three hundred and forty-two", "one thousand, one hundred and one"]
    assert mt.corpus_bleu(english, english) == pytest.approx(100.0)

"""Byte-pair encoding: merges counted by hand on a small corpus, and on the task's
corpus equal to an independent implementation, ``subword-nmt`` (pinned in
requirements.txt as a test dependency); exact round trips; files refused cleanly."""

import io
import re
import json

import numpy as np
import pytest

import mini_transformer as mt
from mini_transformer.bpe import pair_counts
from mini_transformer.number_words.data import number_words, split_numbers


@pytest.fixture(scope="module")
def corpus():
    """Both sides of 2,000 training numbers (none held out), as learning texts."""
    train, _ = split_numbers()
    numbers = np.random.default_rng(0).choice(train, 2000, replace=False)
    return [text for pair in number_words(numbers) for text in pair]


@pytest.fixture(scope="module")
def bpe(corpus):
    return mt.BPE.learn(corpus, vocab_size=200)


def test_merges_by_hand():
    # Sennrich et al.'s corpus: low x5, lower x2, newest x6, widest x3.
    texts = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3
    words = {("l", "o", "w</w>"): 5, ("l", "o", "w", "e", "r</w>"): 2,
             ("n", "e", "w", "e", "s", "t</w>"): 6,
             ("w", "i", "d", "e", "s", "t</w>"): 3}
    counts = pair_counts(words)
    # e s: 6 + 3 = 9 and s t</w>: 6 + 3 = 9 lead; w e: 2 + 6 = 8; l o: 5 + 2 = 7
    assert counts[("e", "s")] == counts[("s", "t</w>")] == 9
    assert counts[("w", "e")] == 8 and counts[("l", "o")] == 7
    bpe = mt.BPE.learn(texts, vocab_size=3 + 20 + 3)  # specials + 10 chars x 2 + 3
    # The tie at 9 goes to the larger pair: ("s", "t</w>") > ("e", "s"). Then
    # "e st</w>" has 9; then "l o" (7) beats "n e", "e w", "w est</w>" (6 each).
    assert bpe.merges == (("s", "t</w>"), ("e", "st</w>"), ("l", "o"))
    assert bpe.tokens("lowest") == ["lo", "w", "est</w>"]
    assert (bpe.pad_id, bpe.bos_id, bpe.eos_id) == (0, 1, 2)
    assert len(bpe) == 26


def test_merges_equal_subword_nmt(corpus, bpe):
    """subword-nmt's ``learn_bpe`` on the same texts learns the same merges in the
    same order. The conventions agree: words split at spaces, the end-of-word
    marker ``</w>`` on a word's last character, the count weighted by word
    frequency, ties to the larger pair (its ``max(stats, key=lambda x: (stats[x],
    x))``), stop below min_frequency = 2. They differ in what is counted: its
    ``num_symbols`` is the number of merges, our ``vocab_size`` counts the specials
    and the alphabet too, so we pass it our number of merges. (Its pruning
    thresholds only affect speed, as its comments say, and this equality checks it.)
    """
    from subword_nmt.apply_bpe import BPE as ApplyBPE
    from subword_nmt.learn_bpe import learn_bpe

    codes = io.StringIO()
    learn_bpe(io.StringIO("\n".join(corpus) + "\n"), codes, len(bpe.merges),
              min_frequency=2)
    lines = codes.getvalue().splitlines()
    assert lines[0] == "#version: 0.2"
    theirs = [tuple(line.split(" ")) for line in lines[1:]]
    assert len(bpe.merges) == 200 - 3 - len(bpe.alphabet) > 100
    assert list(bpe.merges) == theirs
    # Applying the merges: subword-nmt marks a token that does not end a word
    # with "@@" where ours has no "</w>".
    codes.seek(0)
    apply = ApplyBPE(codes)
    _, held = split_numbers()
    for src, tgt in number_words(held[::50]):
        for text in (src, tgt):
            ours = " ".join(t.removesuffix("</w>") if t.endswith("</w>") else t + "@@"
                            for t in bpe.tokens(text))
            assert ours == apply.process_line(text)


def test_round_trip_on_every_held_out_string(bpe):
    _, held = split_numbers()
    for pair in number_words(held):
        for text in pair:
            assert bpe.decode(bpe.encode(text)) == text


def test_decode_skips_specials_and_encode_adds_none(bpe):
    ids = bpe.encode("three hundred and forty-two")
    assert bpe.pad_id not in ids and bpe.bos_id not in ids and bpe.eos_id not in ids
    framed = [bpe.bos_id, *ids, bpe.eos_id, bpe.pad_id]
    assert bpe.decode(framed) == "three hundred and forty-two"


def test_save_load_round_trip(bpe, tmp_path):
    path = tmp_path / "bpe.json"
    bpe.save(path)
    again = mt.BPE.load(path)
    assert again.vocab == bpe.vocab and again.merges == bpe.merges
    assert again.encode("dreihundertzweiundvierzig") == \
        bpe.encode("dreihundertzweiundvierzig")


def test_load_refuses_bad_files(bpe, tmp_path):
    path = tmp_path / "bpe.json"
    bpe.save(path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(ValueError, match="not valid JSON.*truncated"):
        mt.BPE.load(path)
    path.write_bytes(b"\xff\xfe garbage")
    with pytest.raises(ValueError, match="not valid JSON"):
        mt.BPE.load(path)
    path.write_text(json.dumps({"vocab": ["a"]}), encoding="utf-8")
    with pytest.raises(ValueError, match="not a BPE file"):
        mt.BPE.load(path)
    data = bpe.to_dict()
    data["merges"][5] = ["q", "zz"]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=r"merge 5 \['q', 'zz'\] joins a symbol"):
        mt.BPE.load(path)
    data = bpe.to_dict()
    del data["alphabet"]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match='"alphabet" must be a list'):
        mt.BPE.load(path)


@pytest.mark.parametrize("text, match", [
    ("three  hundred", "single spaces"), (" one", "single spaces"), ("", "non-empty"),
    ("one!", r"not in the BPE alphabet: \['!'\]"),
])
def test_encode_refuses(bpe, text, match):
    with pytest.raises(ValueError, match=match):
        bpe.encode(text)


def test_decode_refuses_ids_out_of_range(bpe):
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 200\)"):
        bpe.decode([5, 200])


# --- the pre-tokenizer ------------------------------------------------------------


def test_split_by_hand():
    # "axb" x3 and "ab" x1. Without a split: x b</w> (3) ties a x (3) and wins as
    # the larger pair, then a xb</w> (3). Cut before "x", the pair a x is never
    # counted: x b</w> (3) is merged, then a b</w> has 1 < min_frequency.
    texts = ["axb"] * 3 + ["ab"]
    plain = mt.BPE.learn(texts, vocab_size=50)
    assert plain.merges == (("x", "b</w>"), ("a", "xb</w>"))
    cut = mt.BPE.learn(texts, vocab_size=50, split="(?=x)")
    assert cut.merges == (("x", "b</w>"),) and cut.split == "(?=x)"
    assert cut.tokens("axb ab") == ["a", "xb</w>", "a", "b</w>"]
    assert cut.decode(cut.encode("axb ab")) == "axb ab"
    assert plain.tokens("axb") == ["axb</w>"]


def test_german_split_by_hand():
    from mini_transformer.number_words.data import GERMAN_SPLIT

    pieces = mt.BPE((), (), split=GERMAN_SPLIT).pieces
    assert pieces("dreihundertzweiundvierzigtausendeins") == \
        ["drei", "hundert", "zwei", "und", "vierzig", "tausend", "eins"]
    assert pieces("einhunderttausend") == ["ein", "hundert", "tausend"]
    assert pieces("zwanzig") == ["zwanzig"]
    # the "und" inside "hundert" and English "hundred" is not cut
    assert pieces("hundert") == ["hundert"]
    assert pieces("hundred") == ["hundred"]
    assert mt.BPE((), ()).pieces("dreihundert") == ["dreihundert"]   # no split


def test_german_split_cuts_no_english_word():
    from mini_transformer.number_words.data import GERMAN_SPLIT

    bpe = mt.BPE((), (), split=GERMAN_SPLIT)
    words = {w for n in [*range(1000), 1000, 1001, 1100]
             for w in number_words([n])[0][0].split(" ")}
    assert {"hundred", "thousand", "thousand,", "and", "ninety-nine"} <= words
    assert all(bpe.pieces(w) == [w] for w in words)


@pytest.fixture(scope="module")
def split_bpe(corpus):
    from mini_transformer.number_words.data import GERMAN_SPLIT

    return mt.BPE.learn(corpus, vocab_size=200, split=GERMAN_SPLIT)


def test_split_tokens_never_cross_a_cut(split_bpe):
    from mini_transformer.bpe import END

    _, held = split_numbers()
    for _, de in number_words(held[::7]):
        tokens = split_bpe.tokens(de)
        assert "".join(tokens).replace(END, "") == de
        cuts, pos = set(), 0
        for t in tokens:
            pos += len(t.removesuffix(END))
            cuts.add(pos)
        for m in re.finditer("hundert|tausend", de):  # a token ends before and after
            assert {m.start(), m.end()} - {0, len(de)} <= cuts, (de, tokens)
    assert split_bpe.decode(split_bpe.encode("zweitausend")) == "zweitausend"


def test_split_save_load(split_bpe, bpe, tmp_path):
    path = tmp_path / "bpe.json"
    split_bpe.save(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["version"] == 2 and data["split"] == split_bpe.split
    again = mt.BPE.load(path)
    assert again.split == split_bpe.split and again.vocab == split_bpe.vocab
    text = "neunhundertneunundneunzigtausend"
    assert again.encode(text) == split_bpe.encode(text)
    assert bpe.to_dict()["version"] == 1 and "split" not in bpe.to_dict()
    for version, split, match in [(2, None, "version 2 BPE file has a"),
                                  (1, "x", "version 2 BPE file has a"),
                                  (2, "(", "is not a regular expression")]:
        data = split_bpe.to_dict() | {"version": version, "split": split}
        path.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(ValueError, match=match):
            mt.BPE.load(path)

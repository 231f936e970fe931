"""The translator page's data file (_ext/translator_data.py), against its sources.

The oracles: the committed ``.npz`` read by NumPy (every array bit for bit), the BPE
file read by ``mt.BPE.load``, ``num2words`` itself for the English spelling and the
longest source, and the page's own prose for the numbers it states.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest
from helpers import check_model_page_files, ext_module, page_arrays, page_data

import mini_transformer as mt
from mini_transformer.number_words.data import dev_test_numbers, number_words, split_numbers

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "mini_transformer" / "number_words" / "model"   # the shipped model
PAGE = ROOT / "book" / "appendix_translator.md"


td = ext_module("translator_data")


@pytest.fixture(scope="module")
def text():
    return td.build()


_parse = partial(page_data, module="translator_data", name="mtTranslatorData")


def test_same_bytes_every_time(text):
    assert td.build() == text
    assert text.isascii()


def test_every_array_bit_for_bit(text):
    data = _parse(text)
    arrays = page_arrays(data)
    npz = np.load(MODEL / "numbers_en_de.npz")
    names = [k for k in npz.files if not k.startswith("__")]
    assert list(arrays) == names
    assert data["size"] == sum(npz[k].size for k in names)
    for name, a in arrays.items():
        assert a.tobytes() == npz[name].astype("<f4").tobytes(), name
    params = mt.TransformerParams.load(MODEL / "numbers_en_de.npz")
    assert (data["vocab_size"], data["d_model"]) == params.embedding.shape
    assert data["n_heads"] == params.encoder_layers[0].attn.n_heads
    assert data["n_encoder_layers"] == len(params.encoder_layers)
    assert data["n_decoder_layers"] == len(params.decoder_layers)
    assert data["d_ff"] == params.encoder_layers[0].ffn.d_ff
    assert data["eps"] == params.eps
    assert params.encoder_norm is None and data["norm_first"] is False


def test_the_bpe(text):
    data = _parse(text)
    bpe = mt.BPE.load(MODEL / "numbers_en_de_bpe.json")
    assert data["vocab"] == bpe.vocab
    assert data["merges"] == [list(m) for m in bpe.merges]
    assert data["alphabet"] == list(bpe.alphabet)
    assert data["specials"] == list(bpe.specials)
    assert (data["pad_id"], data["bos_id"], data["eos_id"]) == \
        (bpe.pad_id, bpe.bos_id, bpe.eos_id)


def test_english_spelling_and_longest_source(text):
    """english is num2words' English; no number below a million has a longer
    source than the one the data names."""
    _, held = split_numbers()
    numbers = [*held[::7], 1, 100, 101, 1000, 1001, 1099, 1100, 101_101, 999_999]
    bpe = mt.BPE.load(MODEL / "numbers_en_de_bpe.json")
    longest = _parse(text)["longest_source"]
    for n, (en, _) in zip(numbers, number_words(numbers)):
        assert td.english(int(n)) == en, n
        assert len(bpe.encode(en)) + 1 <= longest["tokens"], (n, en)
    (en, _), = number_words([longest["number"]])
    assert len(bpe.encode(en)) + 1 == longest["tokens"]


def test_the_build_writes_what_the_page_loads(tmp_path):
    check_model_page_files(td, PAGE, "mtt-root", tmp_path)


def test_the_numbers_the_page_states(text):
    data = _parse(text)
    page = " ".join(PAGE.read_text().split())
    assert f"{data['size']:,} float32 numbers" in page
    assert f"about {round(data['size'] * 4 / 1e6)} MB" in page
    assert f"every one of the {data['vocab_size']} tokens" in page
    assert f"**encoder**: {data['n_encoder_layers']} post-LN layers" in page
    assert f"**decoder**: {data['n_decoder_layers']} post-LN layers" in page
    assert f"mean of the {data['n_heads']} heads" in page
    assert f"from zero to {data['max_number']:,}" in page
    assert "the source length plus 50" in page          # max_len = n_src + 50


def test_the_held_out_numbers(text):
    """The page picks its random held-out number from these: the package's
    development and test numbers, none trained on."""
    held = np.cumsum(_parse(text)["held_out_gaps"])
    assert list(held) == list(split_numbers()[1])
    dev, test = dev_test_numbers()
    assert len(held) == len(dev) + len(test)


def test_a_pre_ln_model_is_refused(tmp_path):
    """translator.js runs post-LN layers only: the build refuses a pre-LN model rather than
    writing data the page would run wrong."""
    import dataclasses

    params = mt.TransformerParams.load(MODEL / "numbers_en_de.npz")
    pre_ln = tmp_path / "pre_ln.npz"
    dataclasses.replace(params, norm_first=True).save(pre_ln)
    with pytest.raises(ValueError, match="pre-LN model"):
        td.build(model=pre_ln)

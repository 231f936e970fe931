"""``mini_transformer.number_words.translate``: one call from Python. Oracles:
num2words' German, ``mt.translate`` on the training form, and the normaliser's
error for each refused text."""

from __future__ import annotations

import pytest

import mini_transformer as mt
from mini_transformer.number_words import (NotANumber, load_model, normalize,
                                           number_words, translate)
from mini_transformer.number_words import translator


def test_texts_as_typed_each_answered_in_order():
    texts = ["Forty Two", "forty apples", "a hundred and one", "", "342", "zero."]
    out = translate(texts)
    assert len(out) == len(texts)
    assert [out[i] for i in (0, 2, 5)] == [de for _, de in number_words([42, 101, 0])]
    for i, kind in ((1, "word"), (3, "empty"), (4, "digits")):
        assert isinstance(out[i], NotANumber) and out[i].kind == kind
        with pytest.raises(NotANumber) as e:
            normalize(texts[i])
        assert str(out[i]) == str(e.value)


def test_same_as_the_package_translate_on_the_training_form():
    params, bpe = load_model()
    texts = ["twelve thousand three hundred forty five", "Nineteen Hundred"]
    for beam in (None, 2, 4):
        expected = mt.translate([normalize(t) for t in texts], params, bpe,
                                beam_size=beam, alpha=0.6)
        assert translate(texts, beam_size=beam) == expected
        assert translate(texts, beam_size=beam, model=(params, bpe)) == expected
    assert translate("seven") == ["sieben"]          # one str: one text


def test_the_model_is_loaded_once(monkeypatch):
    translator._model.cache_clear()
    calls = []
    real = translator.load_model

    def counting(path):
        calls.append(path)
        return real(path)

    monkeypatch.setattr(translator, "load_model", counting)
    translate(["one"])
    translate(["two", "three"], beam_size=None)
    assert calls == [None]
    translator._model.cache_clear()


@pytest.mark.parametrize("texts, what", [([b"seven"], "got bytes"),
                                         (["seven", 7], "got int"),
                                         ([None], "got NoneType")])
def test_what_is_not_text_stops_before_any_work(texts, what):
    with pytest.raises(TypeError, match=what):
        translate(texts)


@pytest.mark.parametrize("beam", [0, -1, 2.5, True])
def test_a_bad_beam_is_refused(beam):
    with pytest.raises(ValueError, match="beam_size must be an integer >= 1 or None"):
        translate(["seven"], beam_size=beam)


def test_no_numbers_no_decoding():
    assert [type(x) for x in translate(["apples", "pears"])] == [NotANumber] * 2
    assert translate([]) == []

"""The language-model page (book/appendix_language_model.md), run in headless Chromium
from file:// with every non-local request aborted, against the package on the same
weights; and its data file (_ext/lm_data.py) against the shipped model.

Run: ``pytest -m browser tests/browser/test_lm_page.py`` after the book build
(fixtures, ``BOOK_HTML`` and ``CHROMIUM``: ``conftest.py``). The data and prose tests
(unmarked) run with the unit tests and need no build.

The oracle is ``mini_transformer`` in float32 on the shipped weights: for several texts
(one longer than the model's window) and settings, the distribution the page shows is
``mt.sampling_distribution`` of ``mt.language_model``'s logits to 1e-5, with the same
kept set; the page's ``samplingDistribution`` on NumPy's own logits, ties included, is
the package's to 1e-12; with temperature 0 the page writes the bytes of
``mt.generate``; every byte the page draws at random has mass in the package's
distribution of its step. Every bad control value gets its message, and the page
raises no error and makes no request off the machine.
"""

from __future__ import annotations

import json
import re
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import mini_transformer as mt
from mini_transformer.pydoc_lm import data as lm_data_text
from mini_transformer.pydoc_lm import files as lm_files

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))    # tests/: helpers
from helpers import (check_model_page_files, ext_module, page_arrays,  # noqa: E402
                     page_data)

browser = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
PAGE = "book/appendix_language_model"
PAGE_FILE = ROOT / f"{PAGE}.md"
TOL = 1e-5
CONTEXT = lm_files.trained_context()
DEFAULT = "Numeric literals\n****************\n\nThere are three"
LONG = ("Numeric literals\n****************\n\nThere are three types of numeric "
        "literals: integers, floating point\nnumbers, and imaginary numbers.  There "
        "are no complex")                          # past the 128-byte window
PROMPTS = [DEFAULT, 'The "for" statement', "", "x = 1 + ", LONG]
# (temperature, top-k, top-p), as typed into the fields ("" = empty)
SETTINGS = [("1", "", ""), ("0.7", "10", ""), ("1", "", "0.9"), ("0", "", ""),
            ("1.3", "40", "0.95"), ("0.5", "1", ""), ("2", "", "0.3")]


@pytest.fixture(scope="module")
def model():
    """The shipped model in float32, the dtype it was trained in."""
    params = lm_files.load_model()
    return params.map(lambda a: np.asarray(a, dtype=np.float32))


def window(text):
    """The tokens the model reads for a prompt, as ``generate`` with the trained
    context: the separator, the text's bytes, the last CONTEXT of them."""
    return lm_data_text.encode(lm_data_text.SEPARATOR + text)[-CONTEXT:]


def numpy_distribution(params, text, setting):
    t, k, p = setting
    logits = mt.language_model(window(text), params)[-1]
    return mt.sampling_distribution(logits, float(t), int(k) if k else None,
                                    float(p) if p else None)


def opened(open_widget):
    """The page in a fresh tab, mounted (``conftest.py``'s ``open_widget``): yields
    (tab, root)."""
    return open_widget(PAGE, "mtl-root", "lm_data.js")


def set_fields(root, **values):
    for name, value in values.items():
        root.get_by_test_id(name).fill(value)


@browser
def test_the_distribution_on_the_page_equals_numpy(open_widget, model):
    worst, checked = 0.0, 0
    with opened(open_widget) as (tab, root):
        assert root.get_by_test_id("prompt").input_value() == DEFAULT
        for text in PROMPTS:
            root.get_by_test_id("prompt").fill(text)
            for setting in SETTINGS:
                t, k, p = setting
                set_fields(root, temperature=t, **{"top-k": k, "top-p": p})
                assert root.get_by_test_id("readout").get_attribute("data-kind") is None
                page = np.array(tab.evaluate("mtLm.page.distribution()"))
                assert tab.evaluate("mtLm.page.tokens()") == \
                    lm_data_text.encode(lm_data_text.SEPARATOR + text).tolist()
                want = numpy_distribution(model, text, setting)
                assert ((page > 0) == (want > 0)).all(), (text, setting)
                worst = max(worst, float(np.abs(page - want).max()))
                checked += 1
                bars = root.get_by_test_id("chart").locator("g[data-byte]")
                assert bars.count() == 20
                for i in range(bars.count()):
                    b = int(bars.nth(i).get_attribute("data-byte"))
                    assert float(bars.nth(i).get_attribute("data-prob")) == page[b]
                    assert bars.nth(i).get_attribute("data-kept") == \
                        ("1" if want[b] > 0 else "0")
    print(f"page vs NumPy float32, largest difference of a probability over "
          f"{checked} (text, setting) pairs: {worst:.1e}")
    assert worst <= TOL


@browser
def test_sampling_distribution_has_the_package_semantics(open_widget):
    rng = np.random.default_rng(0)
    cases = [np.array([1.0, 1.0, 1.0, 0.0, -np.inf, 2.0, 2.0]),   # ties, a masked one
             np.zeros(6), np.array([3.0]), rng.normal(0, 3, 256), rng.normal(0, 1, 50)]
    settings = [(1.0, None, None), (0.0, None, None), (0.7, 2, None), (1.0, 1, None),
                (1.0, None, 0.5), (1.0, None, 0.25), (2.0, 3, 0.6), (0.3, 300, 0.99),
                (1.0, None, 1.0), (5.0, 4, 0.1)]
    worst = 0.0
    with opened(open_widget) as (tab, root):
        for logits in cases:
            for t, k, p in settings:
                page = np.array(tab.evaluate(
                    "([o, t, k, p]) => Array.from(mtLm.samplingDistribution("
                    "o.map(x => x === null ? -Infinity : x), t, k, p))",
                    [[None if x == -np.inf else float(x) for x in logits], t, k, p]))
                want = mt.sampling_distribution(logits, t, k, p)
                assert ((page > 0) == (want > 0)).all(), (logits[:8], t, k, p)
                worst = max(worst, float(np.abs(page - want).max()))
        for t, k, p in [(-1.0, None, None), (1.0, 0, None), (1.0, 2.5, None),
                        (1.0, None, 0.0), (1.0, None, 1.5)]:
            thrown = tab.evaluate("([t, k, p]) => { try { mtLm.samplingDistribution("
                                  "[0, 1], t, k, p); return null; } catch (e) { "
                                  "return e.message; } }", [t, k, p])
            with pytest.raises(ValueError) as error:
                mt.sampling_distribution(np.zeros(2), t, k, p)
            words = str(error.value).split(", got")[0]
            assert thrown is not None and thrown.startswith(words), (thrown, words)
    assert worst <= 1e-12, worst


@browser
def test_greedy_text_equals_mt_generate(open_widget, model):
    n = 20
    with opened(open_widget) as (tab, root):
        for text in [DEFAULT, 'The "for" statement', "", LONG]:
            ids = lm_data_text.encode(lm_data_text.SEPARATOR + text)
            tokens, _ = mt.generate(model, ids, n, temperature=0, context=CONTEXT)
            want = tokens[len(ids):].tolist()
            root.get_by_test_id("prompt").fill(text)
            set_fields(root, temperature="0", count=str(n), **{"top-k": "", "top-p": ""})
            root.get_by_test_id("generate").click()
            assert tab.evaluate("mtLm.page.added()") == want, text
            assert root.get_by_test_id("new").text_content() == \
                lm_data_text.decode(want)
            assert tab.evaluate("([t, n]) => mtLm.generate(t, n, {temperature: 0})"
                                ".newTokens", [text, n]) == want
        # past the window: 60 more bytes after LONG's 131 restart it at least once
        ids = lm_data_text.encode(lm_data_text.SEPARATOR + LONG)
        tokens, _ = mt.generate(model, ids, 60, temperature=0, context=CONTEXT)
        assert tab.evaluate("([t, n]) => mtLm.generate(t, n, {temperature: 0})"
                            ".newTokens", [LONG, 60]) == tokens[len(ids):].tolist()


@browser
def test_drawn_bytes_are_seeded_and_have_mass(open_widget, model):
    with opened(open_widget) as (tab, root):
        root.get_by_test_id("prompt").fill(DEFAULT)
        set_fields(root, temperature="0.8", seed="7", count="30",
                   **{"top-k": "5", "top-p": "0.9"})
        root.get_by_test_id("generate").click()
        first = tab.evaluate("mtLm.page.added()")
        root.get_by_test_id("reset").click()
        for _ in range(3):
            root.get_by_test_id("next").click()
        assert tab.evaluate("mtLm.page.added()") == first[:3]
        root.get_by_test_id("reset").click()
        root.get_by_test_id("generate").click()
        assert tab.evaluate("mtLm.page.added()") == first       # same seed, same text
        set_fields(root, seed="8")
        root.get_by_test_id("generate").click()
        other = tab.evaluate("mtLm.page.added()")
        assert other != first
        example = tab.evaluate(             # the page's console example
            'mtLm.generate("The for statement", 40, {temperature: 0.8, topP: 0.9, '
            'seed: 1})')
        assert len(example["newTokens"]) == 40
        assert example["text"] == lm_data_text.decode(example["newTokens"])
    for drawn in (first, other):
        ids = lm_data_text.encode(lm_data_text.SEPARATOR + DEFAULT).tolist()
        for b in drawn:           # within the window: no restart in 30 bytes
            q = mt.sampling_distribution(
                mt.language_model(np.array(ids), model)[-1], 0.8, 5, 0.9)
            assert q[b] > 0, (bytes(drawn), b)
            ids.append(b)


BAD = [  # (field, value, kind, words the message must hold)
    ("temperature", "-1", "temperature", "the temperature \u03c4 must be a number \u2265 0"),
    ("temperature", "", "temperature", "the temperature \u03c4 is empty"),
    ("temperature", "warm", "temperature", "must be a number \u2265 0 (0 is greedy), got \u201cwarm\u201d"),
    ("top-k", "0", "topK", "top-k must be a whole number \u2265 1"),
    ("top-k", "2.5", "topK", "got 2.5"),
    ("top-p", "0", "topP", "top-p must be a number in (0, 1]"),
    ("top-p", "1.5", "topP", "got 1.5"),
    ("seed", "-3", "seed", "the seed must be a whole number from 0"),
    ("count", "0", "count", "the number of bytes must be a whole number from 1 to 500"),
    ("count", "501", "count", "got 501"),
    ("prompt", "x" * 10001, "prompt", "the text has 10,001 characters"),
]


@browser
def test_every_bad_value_gets_its_message(open_widget):
    with opened(open_widget) as (tab, root):
        readout = root.get_by_test_id("readout")
        good = {name: root.get_by_test_id(name).input_value()
                for name in ("temperature", "top-k", "top-p", "seed", "count", "prompt")}
        for field, value, kind, words in BAD:
            root.get_by_test_id(field).fill(value)
            assert readout.get_attribute("data-kind") == kind, (field, value)
            assert "mtl-error" in readout.get_attribute("class")
            assert words in readout.text_content(), readout.text_content()
            assert readout.is_visible()
            assert root.get_by_test_id(field).get_attribute("aria-invalid") == "true"
            for button in ("next", "generate"):
                assert root.get_by_test_id(button).is_disabled()
            assert root.get_by_test_id("chart").count() == 0
            root.get_by_test_id(field).fill(good[field])
            assert readout.get_attribute("data-kind") is None
            assert root.get_by_test_id("next").is_enabled()
            assert root.get_by_test_id(field).get_attribute("aria-invalid") is None
            assert root.get_by_test_id("chart").count() == 1


# --- the data file and the prose (no browser, no build) --------------------------

ld = ext_module("lm_data")
_parse = partial(page_data, module="lm_data", name="mtLmData")


@pytest.fixture(scope="module")
def text():
    return ld.build()


def test_data_file_holds_every_array_bit_for_bit(text):
    assert ld.build() == text and text.isascii()
    data = _parse(text)
    arrays = page_arrays(data)
    npz = np.load(lm_files.MODEL_DIR / lm_files.MODEL)
    assert list(arrays) == [k for k in npz.files if not k.startswith("__")]
    for name, got in arrays.items():
        assert np.array_equal(got.astype(npz[name].dtype), npz[name]), name   # exact
    params = lm_files.load_model()
    assert (data["d_model"], data["n_heads"], data["n_layers"], data["vocab_size"],
            data["norm_first"], data["context"], data["separator"]) == \
        (params.d_model, params.decoder_layers[0].self_attn.n_heads,
         len(params.decoder_layers), 256, True, CONTEXT, "\n\n")


def test_a_value_float32_cannot_hold_is_refused(tmp_path):
    """The page computes on float32 copies: a float64 value that float32 rounds would
    make the page run another model, so the packing refuses it (0.1 is not a float32);
    the float32 value nearest to it packs, and reads back bit for bit."""
    pack = ext_module("model_page").pack
    np.savez(tmp_path / "m.npz", w=np.array([[0.5, 0.1]]))
    with pytest.raises(ValueError, match="w holds values that float32 cannot represent"):
        pack(tmp_path / "m.npz", exact=True)
    packed = pack(tmp_path / "m.npz")                       # not asked to be exact
    assert page_arrays(packed)["w"].tolist() == [[0.5, float(np.float32(0.1))]]
    np.savez(tmp_path / "m.npz", w=np.array([[0.5, 0.1]], dtype=np.float32).astype(float))
    assert pack(tmp_path / "m.npz", exact=True) == packed


def test_the_build_writes_what_the_page_loads(tmp_path):
    check_model_page_files(ld, PAGE_FILE, "mtl-root", tmp_path)


def test_the_numbers_the_page_states(text):
    data = _parse(text)
    page = " ".join(PAGE_FILE.read_text().split())
    stated = [
        f"({data['size']:,} float32 numbers, about {4 * data['size'] / 1e6:.1f} MB)",
        f"$d_{{\\text{{model}}}} = {data['d_model']}$",
        f"{data['n_layers']} pre-LN decoder layers",
        f"with {data['n_heads']} heads",
        f"at most {data['context']} bytes",
        f"its last {data['context'] // 2} bytes start a new one",
        f"({data['vocab_size']} in all)",
        f"(empty: all {data['vocab_size']})",
        "The chart shows the 20 bytes",
    ]
    missing = [phrase for phrase in stated if phrase not in page]
    assert not missing, f"the page no longer states: {missing}"
    assert "SHOWN = 20" in (ROOT / "book" / "lm_sampler.js").read_text()
    # the input limits the prose states are the script's
    limits = re.search(r"MAX_CHARS = (\d+), MAX_BYTES = (\d+), MAX_SEED = (\d+);",
                       (ROOT / "book" / "lm_sampler.js").read_text())
    chars, n_bytes, seed = (int(v) for v in limits.groups())
    assert f"(1 to {n_bytes} bytes a click, a seed from 0 to {seed:,}, a text of at most " \
        f"{chars:,} characters)" in page
    assert f"to $10^{{{int(np.log10(TOL))}}}$" in page
    # the default text opens a page of the test text
    assert lm_data_text.load_text("test").startswith(lm_data_text.SEPARATOR + DEFAULT)
    js = (ROOT / "book" / "lm_sampler.js").read_text()
    assert json.dumps(DEFAULT) in js
    assert 'mtLm.generate("The for statement", 40, {temperature: 0.8, topP: 0.9, ' \
        "seed: 1})" in page

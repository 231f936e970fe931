"""The translator page (book/appendix_translator.md), run in headless Chromium from
file:// with every non-local request aborted, against the package on the same weights.

Run: ``pytest -m browser tests/browser/test_translator_page.py`` after the book build
(fixtures, ``BOOK_HTML`` and ``CHROMIUM``: ``conftest.py``).

The oracle is ``mini_transformer`` in float32 on the committed weights: the page's
encoder output, logits and beam scores equal NumPy's to 1e-4 on a sample of inputs and
beam settings; its translations (beam 4 and greedy) equal ``mt.translate``'s on a fixed
sample of held-out numbers of every length; its cross-attention heat map equals the
package's attention weights; its English and German spelling equal ``num2words``. It
accepts and refuses the inputs the package's ``normalize`` does, with the same training
form or message; every bad input gets its message, the controls have names and work
from the keyboard, and the speed of one translation is printed (not asserted).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np
import pytest

import mini_transformer as mt
from mini_transformer.number_words import load_model
from mini_transformer.number_words.normalize import NotANumber, normalize
from mini_transformer.number_words.data import number_words, split_numbers

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
PAGE = "book/appendix_translator"
TOL = 1e-4
TEXTS = ["zero", "seven", "forty-two", "three hundred and forty-two",
         "one thousand and one", "twelve thousand, three hundred and forty-five",
         "one hundred and one thousand, one hundred and one",
         "seven hundred and seventy-seven thousand, seven hundred and seventy-seven"]
BEAMS = [(1, 0.0), (3, 1.0), (4, 0.6), (8, 2.0)]


@pytest.fixture(scope="module")
def model():
    params, bpe = load_model()                  # the shipped model, as the page
    assert params.embedding.dtype == np.float32
    return params, bpe


@pytest.fixture(scope="module")
def sample():
    """Held-out numbers (development and test, never trained on): the first 12 and
    every tenth after them, about 1,050 in all, every length from one digit to six;
    and every one-digit number, trained on or not."""
    _, held = split_numbers()
    numbers = np.unique(np.concatenate([np.arange(10), held[:12], held[12::10]]))
    assert {len(str(n)) for n in numbers} == {1, 2, 3, 4, 5, 6} and len(numbers) > 1000
    return [int(n) for n in numbers], number_words(numbers)


def opened(open_widget, width=1280, height=900):
    """The translator page in a fresh tab, mounted (``conftest.py``'s ``open_widget``):
    yields (tab, root)."""
    return open_widget(PAGE, "mtt-root", "translator_data.js", width=width, height=height)


def source(bpe, text):
    return np.array(bpe.encode(text) + [bpe.eos_id])


def test_encoder_logits_and_beam_scores_equal_numpy(open_widget, model):
    params, bpe = model
    E = params.embedding
    worst = {"encoder": 0.0, "logits": 0.0, "score": 0.0}
    with opened(open_widget) as (tab, root):
        for text in TEXTS:
            src = source(bpe, text)
            assert tab.evaluate("t => mtTranslator.check(t).ids", text) == src.tolist()
            memory = mt.encoder(mt.embed(src, E), params.encoder_layers)  # (n_src, d)
            page = np.array(tab.evaluate(
                "ids => mtTranslator.encode(ids).map(x => Array.from(x))",
                src.tolist()))
            worst["encoder"] = max(worst["encoder"], np.abs(page - memory).max())
            greedy = mt.greedy_decode(src, params, len(src) + 50, bpe.bos_id,
                                      bpe.eos_id)
            prefix = greedy[:-1]                  # BOS and every output but the last
            logits = mt.transformer(src, prefix, params)          # (n, vocab), no cache
            page = np.array(tab.evaluate("([s, p]) => mtTranslator.logits(s, p)",
                                         [src.tolist(), prefix.tolist()]))
            worst["logits"] = max(worst["logits"], np.abs(page - logits).max())
            g = tab.evaluate("t => mtTranslator.translate(t, {beamSize: null}).ids",
                             text)
            assert g == greedy.tolist(), text
            for K, alpha in BEAMS:
                tokens, score = mt.beam_search(src, params, None, bpe.bos_id, bpe.eos_id,
                                               beam_size=K, alpha=alpha)
                r = tab.evaluate("([t, K, a]) => { const r = mtTranslator.translate(t, "
                                 "{beamSize: K, alpha: a}); return [r.ids, r.score]; }",
                                 [text, K, alpha])
                assert r[0] == tokens.tolist(), (text, K, alpha)
                worst["score"] = max(worst["score"], abs(r[1] - float(score)))
    print(f"page vs NumPy float32, largest difference over {len(TEXTS)} inputs: "
          + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
    assert max(worst.values()) <= TOL, worst


def test_translations_equal_mt_translate(open_widget, model, sample):
    params, bpe = model
    numbers, pairs = sample
    texts = [s for s, _ in pairs]
    expected = {"beam": mt.translate(texts, params, bpe, beam_size=4, alpha=0.6),
                "greedy": mt.translate(texts, params, bpe, beam_size=None)}
    run = """([texts, K]) =>
        texts.map(t => mtTranslate(t, {beamSize: K, alpha: 0.6}).text)"""
    with opened(open_widget) as (tab, root):
        t0 = time.perf_counter()
        got = {"beam": tab.evaluate(run, [texts, 4]),
               "greedy": tab.evaluate(run, [texts, None])}
        seconds = time.perf_counter() - t0
    for kind in ("beam", "greedy"):
        wrong = [(n, g, e) for n, g, e in zip(numbers, got[kind], expected[kind])
                 if g != e]
        assert not wrong, \
            f"{kind}: {len(wrong)} of {len(texts)} differ, e.g. {wrong[:5]}"
    correct = sum(h == t for h, (_, t) in zip(expected["beam"], pairs))
    print(f"{len(texts)} held-out numbers: the page's translations equal "
          f"mt.translate's "
          f"(beam 4 and greedy; {correct} of them equal num2words' German); "
          f"{seconds:.1f} s in the browser for both")


def test_number_words_spelled_as_num2words(open_widget, sample):
    numbers, pairs = sample
    numbers = [*numbers, 1, 11, 21, 100, 101, 1000, 1001, 1100, 101_000, 201_001,
               999_999]
    pairs = [*pairs, *number_words(numbers[len(pairs):])]
    with opened(open_widget) as (tab, root):
        got = tab.evaluate("""ns => { const T = mtTranslator; return ns.map(n =>
            [T.english(n), T.german(n), T.parseEnglish(T.english(n))]); }""", numbers)
    assert [(en, de) for en, de, _ in got] == [tuple(p) for p in pairs]
    assert [n for _, _, n in got] == numbers


BAD = [  # (input, kind, words the message must hold)
    ("", "empty", "the input is empty"),
    ("   ", "empty", "the input is empty"),
    ("two million", "beyond", "\"two million\" is a million or more"),
    ("one million, two hundred thousand", "beyond", "a million or more"),
    ("1234567", "digits", "\"1234567\" is written in digits"),
    ("4,005", "digits", "written in digits"),
    ("three hundred & two", "word", "\"&\" is not an English number word"),
    ("forty-two!x", "word", "\"two!x\" is not"),
    ("quatre-vingt", "word", "\"quatre\" is not"),
    ("drei", "word", "\"drei\" is not an English number word"),
    ("-", "form", "\"-\" is not a number in words"),
    (" ".join(["one"] * 11), "form", "is not a number in words"),
    ("seven " * 1000, "too-long", "the input has 6,000 characters"),
]


def test_every_bad_input_gets_its_message(open_widget):
    with opened(open_widget, 390, 844) as (tab, root):
        box, readout = root.get_by_test_id("text"), root.get_by_test_id("readout")
        for text, kind, words in BAD:
            t0 = time.perf_counter()
            box.fill(text)
            assert readout.get_attribute("data-kind") == kind, \
                (text, readout.text_content())
            assert "mtt-error" in readout.get_attribute("class")
            message = readout.text_content()
            assert words in message, (text, message)
            assert time.perf_counter() - t0 < 2, f"{text[:40]!r} took too long"
            assert root.get_by_test_id("outputs").count() == 0      # no answer shown
            thrown = tab.evaluate("t => { try { mtTranslate(t); return null; } "
                                  "catch (e) { return e.message; } }", text)
            assert thrown == message, text
        box.fill("Three Hundred and  Two")                     # read in small letters
        assert readout.get_attribute("data-kind") is None
        assert "\u201cthree hundred and two\u201d \u2192 " \
            "\u201cdreihundertzwei\u201d" in readout.text_content()
        box.fill(" Four thousand five")                        # read as 4,005
        assert "\u201cfour thousand and five\u201d \u2192 " in readout.text_content()
        assert root.get_by_test_id("check").text_content().startswith(
            "num2words' German for 4,005: \u201cviertausendf\u00fcnf\u201d")


def _typed(text, rng):
    """What people type for num2words' text, made by plain string edits."""
    loose = text.replace("-", " ").replace(" and ", " ").replace(",", "")
    return [text, text.upper(), f"  {text}\t", "  ".join(text.split(" ")),
            text.replace("-", " "), text.replace(" and ", " "), text.replace(",", ""),
            text.replace(" ", "\u00a0"),
            "".join(c.upper() if rng.random() < 0.5 else c for c in loose)]


def test_the_page_reads_inputs_as_the_package(open_widget, sample):
    """Every input is accepted or refused by the page as by the package's
    ``normalize`` (the rules' one source in Python), with the same training form or
    the same kind and message: variants of 300 held-out numbers, and inputs that
    are refused for each reason."""
    rng = np.random.default_rng(0)
    _, pairs = sample
    texts = [t for en, _ in pairs[::4][:300] for t in _typed(en, rng)]
    texts += [t for t, _, _ in BAD] + [
        "hello world", "342", "one million", "one thousand thousand", "twelve hundred",
        "two-hundred", "forty-", "one hundred and", "one thousand,", "thousand",
        "zero thousand", "and", "one, two", "a hundred", "forty and two",
        "x" * 300, "a" * 10_000, "forty-two" + " " * 291, "\u00a0forty\u00a0two",
        "dreihundertzweiundvierzig", "\U0001f600" * 70, "\U0001f600" * 301,
        "\ufeffseven", "forty\u2003two", "ZERO",
        # everyday forms: "a", hundreds past ten, dashes, punctuation at the end
        "a hundred", "a thousand", "A hundred and five", "a thousand, a hundred",
        "a hundred thousand", "a", "a a hundred", "one thousand a", "ten hundred",
        "nineteen hundred", "Nineteen hundred and eighty-four", "ninety nine hundred",
        "twelve hundred thousand", "twelve hundred and", "forty\u2010two",
        "forty\u2011two", "forty\u2012two", "forty\u2013two", "forty\u2014two",
        "forty\u2212two", "forty\u2015two", "forty-two.", "Forty two!", "seven ...",
        ".", "one thousand,", "forty-two!!x",
        # what is not text: control characters, undecodable bytes, U+FFFD
        "forty\x00two", "\x07", "seven\ufffd", "\x7f",
        "\U0001f600 seven"]
    expected = []
    for t in texts:
        try:
            expected.append(["ok", normalize(t)])
        except NotANumber as e:
            expected.append([e.kind, str(e)])
    with opened(open_widget) as (tab, root):
        got = tab.evaluate("""ts => ts.map(t => { const c = mtTranslator.check(t);
            return c.error ? [c.kind, c.error] : ["ok", c.text]; })""", texts)
    differ = [(t[:40], e, g) for t, e, g in zip(texts, expected, got) if e != g]
    assert not differ, differ[:5]
    assert {e[0] for e in expected} == {"ok", "empty", "too-long", "not-text",
                                        "digits", "beyond", "word", "form"}


def _names(root):
    return root.evaluate("""r =>
        [...r.querySelectorAll('input, select, button')].map(e =>
        [e.dataset.testid, (e.getAttribute('aria-label') || (e.labels && e.labels[0] &&
          e.labels[0].textContent) || e.textContent || '').trim()])""")


def test_controls_keyboard_steps_and_heat_map(open_widget, model):
    params, bpe = model
    E, text = params.embedding, "twelve thousand, three hundred and forty-five"
    with opened(open_widget) as (tab, root):
        assert all(name for _, name in _names(root)), _names(root)
        readout = root.get_by_test_id("readout")
        assert (readout.get_attribute("role"), readout.get_attribute("aria-live")) == \
            ("status", "polite")
        box = root.get_by_test_id("text")
        box.focus()
        box.fill(text)
        tab.keyboard.press("Enter")
        tab.keyboard.press("Tab")                              # to the Translate button
        focused = tab.evaluate("""() => {
            const e = document.activeElement, s = getComputedStyle(e);
            return [e.dataset.testid, s.outlineStyle, s.outlineWidth]; }""")
        assert focused == ["translate", "solid", "3px"], focused
        root.get_by_test_id("beam").fill("3")
        root.get_by_test_id("alpha").fill("1")
        assert "(beam 3, \u03b1 1.0," in readout.text_content()
        src = source(bpe, text)
        tokens, score = mt.beam_search(src, params, None, bpe.bos_id, bpe.eos_id,
                                       beam_size=3, alpha=1.0)
        assert f"score {score:.4f}".replace("-", "\u2212") in readout.text_content()
        greedy = mt.greedy_decode(src, params, len(src) + 50, bpe.bos_id, bpe.eos_id)
        work = root.get_by_test_id("work").text_content()
        assert (f"the {len(src)} source tokens into {len(src)} vectors of "
                f"{E.shape[1]} numbers, once. The decoder then ran "
                f"{len(greedy) - 1} times for greedy") in work

        # The steps: the last is shown first; back to the first, then the arrow keys.
        step = root.get_by_test_id("step")
        n = int(step.text_content().split()[-1])
        assert step.text_content() == f"step {n} of {n}"
        assert root.get_by_test_id("stop").text_content().startswith("Why it stopped: ")
        root.get_by_test_id("step-first").click()
        assert step.text_content() == f"step 1 of {n}"
        live = root.get_by_test_id("live").locator("tbody tr")
        assert live.count() == 1 and "<bos>" in live.first.text_content()
        # step 1's 2K candidates are the 2K most probable first tokens
        first = mt.transformer(src, np.array([bpe.bos_id]), params)[-1]
        log_p = first - mt.log_sum_exp(first)
        best = np.argsort(-log_p, kind="stable")[:6]
        rows = root.get_by_test_id("candidates").locator("tbody tr")
        assert rows.count() == 6
        for i, v in enumerate(best):
            cells = rows.nth(i).locator("td").all_text_contents()
            assert cells[1] == bpe.vocab[v]
            shown = float(cells[2].replace("\u2212", "-"))
            assert abs(shown - log_p[v]) <= 0.5e-4 + TOL
        root.get_by_test_id("step-forward").focus()
        tab.keyboard.press("Enter")
        assert step.text_content() == f"step 2 of {n}"
        tab.keyboard.press("ArrowRight")
        assert step.text_content() == f"step 3 of {n}"
        tab.keyboard.press("ArrowLeft")
        assert step.text_content() == f"step 2 of {n}"
        assert root.get_by_test_id("live").locator("tbody tr").count() == 3

        # The heat map: the package's cross-attention of the beam's output.
        memory = mt.encoder(mt.embed(src, E), params.encoder_layers)
        y = mt.embed(tokens[:-1], E)
        causal = mt.causal_mask(len(tokens) - 1)
        for layer, p in enumerate(params.decoder_layers):
            y1 = mt.layer_norm(y + mt.multi_head_attention(y, p.self_attn, causal)[0],
                               p.norm1.gamma, p.norm1.beta, p.eps)
            weights = mt.multi_head_attention(y1, p.cross_attn, memory=memory)[1]
            for head in ("mean", "0", "3"):
                root.get_by_test_id("layer").select_option(str(layer))
                root.get_by_test_id("head").select_option(head)
                w = weights.mean(0) if head == "mean" else weights[int(head)]
                page = np.array(root.get_by_test_id("heatmap").evaluate(
                    "s => [...s.querySelectorAll('rect')].map(r => +r.dataset.weight)"))
                assert page.shape == (w.size,) and np.abs(page - w.ravel()).max() <= TOL
            y = mt.decoder_layer(y, memory, p, causal)
        label = root.get_by_test_id("heatmap").get_attribute("aria-label")
        assert "strongest source token" in label


def test_speed_and_screenshots(open_widget, book_html):
    """Milliseconds for one translation in this browser (printed, not asserted)."""
    text = "seven hundred and seventy-seven thousand, seven hundred and seventy-seven"
    timing = """([t, K]) => { for (let i = 0; i < 5; i++) mtTranslate(t, {beamSize: K});
        const ms = []; for (let i = 0; i < 30; i++) { const t0 = performance.now();
        mtTranslate(t, {beamSize: K}); ms.push(performance.now() - t0); }
        return ms; }"""
    with opened(open_widget) as (tab, root):
        beam = statistics.median(tab.evaluate(timing, [text, 4]))
        greedy = statistics.median(tab.evaluate(timing, [text, None]))
        (book_html.parent / "screenshots").mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(book_html.parent / "screenshots" / "translator_1280.png"), full_page=True)
    with opened(open_widget, 390, 844) as (tab, root):
        assert tab.evaluate("document.documentElement.scrollWidth") <= 390
        tab.screenshot(path=str(book_html.parent / "screenshots" / "translator_390.png"), full_page=True)
    print(f"one translation of a six-digit number (9 tokens and EOS), median of 30: "
          f"greedy {greedy:.1f} ms, beam 4 {beam:.1f} ms (goal for beam 4: 50 ms)")

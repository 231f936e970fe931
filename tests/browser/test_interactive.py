"""The book's three interactive figures, driven in headless Chromium from file://.

Run: ``pytest -m browser tests/browser/test_interactive.py`` after the book build
(the fixtures, ``BOOK_HTML`` and ``CHROMIUM`` are those of ``test_rendered_book.py``).

For each figure (``book/explorers.py``): the page is opened from ``file://`` with every
non-local request recorded and aborted; the figure mounts; a control is changed as a
reader would (the temperature slider and its buttons; the position and offset sliders
and the frequency pair; the model, kind, layer and head, and a hovered token); and the
numbers the page then shows must be the stored numbers for that choice. The temperature
and positional-encoding numbers are recomputed here from ``mini_transformer``; the
attention weights come from trained models, so they are read from the page's inline
JSON and checked to be attention weights (rows sum to 1, the decoder's causal mask).
No request may leave the page, and no JavaScript error may be thrown.
"""

from __future__ import annotations

import json
import math
import re
from contextlib import contextmanager

import numpy as np
import pytest
from test_rendered_book import (  # noqa: F401  (browser is a fixture)
    HTML, KNOWN_JS_ERRORS, LOCAL_SCHEMES, _settle, browser,
)

import mini_transformer as mt

pytestmark = pytest.mark.browser

SCORES = np.array([2.0, 1.0, 0.5, -1.0])      # chapter 3's row of scores


@contextmanager
def opened(browser, page: str, root_id: str):  # noqa: F811
    """The built page in a fresh tab: yields (tab, the figure's root, its data)."""
    page_file = HTML / f"{page}.html"
    assert page_file.exists(), f"{page_file} was not built"
    context = browser.new_context(viewport={"width": 1280, "height": 900},
                                  service_workers="block")
    context.route(re.compile(r"^(?!(file|data|blob|about):)"),
                  lambda route: route.abort("blockedbyclient"))
    requests, done, failed, js_errors = [], [], [], []
    tab = context.new_page()
    tab.on("request", lambda r: requests.append(r.url))
    tab.on("requestfinished", lambda r: done.append(r.url))
    tab.on("requestfailed", lambda r: (done.append(r.url), failed.append(r.url)))
    tab.on("websocket", lambda ws: requests.append(ws.url))
    tab.on("pageerror", lambda e: js_errors.append(str(e)))
    try:
        tab.goto(page_file.as_uri(), wait_until="load")
        root = tab.locator(f"#{root_id}")
        assert root.count() == 1, f"{page}.html has no #{root_id}"
        root.scroll_into_view_if_needed()
        assert root.get_attribute("data-mounted") == "1", f"#{root_id} did not mount"
        data = json.loads(root.locator("script.mtx-data").text_content())
        yield tab, root, data
        _settle(tab, requests, done)
    finally:
        context.close()
    assert requests, "no request recorded at all: the request recorder is broken"
    leaving = [u for u in requests if not u.startswith(LOCAL_SCHEMES)]
    assert not leaving, f"requests leave the page: {leaving}"
    assert not failed, f"requests failed: {failed}"
    errors = [e for e in js_errors if not any(k.search(e) for k in KNOWN_JS_ERRORS)]
    assert not errors, f"JavaScript errors: {errors}"


def shown(root, testid: str) -> str:
    return root.get_by_test_id(testid).text_content().strip()


def choose(root, testid: str, value: str) -> None:
    """Pick the option whose value is ``value`` (by its index: Playwright's
    ``select_option`` also matches labels, and a layer's label "1" is value "0")."""
    box = root.get_by_test_id(testid)
    values = box.evaluate("s => [...s.options].map(o => o.value)")
    box.select_option(index=values.index(value))
    assert box.input_value() == value


def entropy(p) -> float:
    return float(-sum(x * math.log(x) for x in p if x > 0))


def test_temperature_slider(browser):  # noqa: F811
    page, figure = "book/03_softmax", "mtx-softmax-temperature"
    with opened(browser, page, figure) as (tab, root, d):
        assert d["scores"] == SCORES.tolist()
        taus = d["taus"]
        assert taus[0] == 0.05 and taus[-1] == 20.0 and len(taus) > 100

        def check(j):
            assert float(shown(root, "tau")) == taus[j]
            p = mt.softmax(SCORES, temperature=taus[j])        # the package, again
            weights = [shown(root, f"weight-{i}") for i in range(len(SCORES))]
            assert weights == [f"{x:.4f}" for x in d["weights"][j]]
            assert np.allclose([float(w) for w in weights], p, atol=0.5e-4 + 1e-12)
            assert abs(float(shown(root, "entropy")) - entropy(p)) <= 0.5e-4 + 1e-12
            return weights

        start = check(d["default"])
        assert taus[d["default"]] == 1.0
        slider = root.get_by_test_id("tau-slider")
        slider.fill("0")                                         # coldest: argmax
        cold = check(0)
        assert cold == ["1.0000", "0.0000", "0.0000", "0.0000"] and cold != start
        assert shown(root, "entropy") == "0.0000"
        slider.fill(str(len(taus) - 1))                          # hottest: near uniform
        hot = check(len(taus) - 1)
        assert max(float(w) for w in hot) < 0.27
        middle = len(taus) // 3
        slider.fill(str(middle))
        check(middle)
        marks = {m["label"]: m["index"] for m in d["marks"]}
        assert [taus[j] for j in marks.values()] == [1.0, 8.0]
        root.get_by_test_id("mark-1").click()                    # T = sqrt(d_k) = 8
        check(marks[d["marks"][1]["label"]])
        assert float(shown(root, "tau")) == 8.0
        text = root.inner_text()
        assert "\u03c4 = " in text and "temperature \u03c4" in text
        assert not re.search(r"\bT = |entropy H", text)


def test_positional_explorer(browser):  # noqa: F811
    with opened(browser, "book/06_positional", "mtx-pe-explorer") as (tab, root, d):
        d_model = d["d_model"]
        n = len(d["pe"])
        pe = mt.positional_encoding(n, d_model)                  # the package, again
        assert np.allclose(d["pe"], pe, atol=0.5e-4 + 1e-12)

        def check(pos, k, i):
            assert (shown(root, "pos"), shown(root, "k")) == (str(pos), str(k))
            stored = d["dots"][pos][k]
            assert shown(root, "dot") == f"{stored:.4f}"
            assert abs(stored - pe[pos] @ pe[pos + k]) <= 0.5e-4 + 1e-9
            c, s = math.cos(k * 10000 ** (-2 * i / d_model)), \
                math.sin(k * 10000 ** (-2 * i / d_model))
            rot = [[shown(root, f"rot-{r}{q}") for q in range(2)] for r in range(2)]
            got = np.array(rot, dtype=float)
            assert np.allclose(got, [[c, -s], [s, c]], atol=0.5e-4 + 1e-12), rot
            pair = [float(shown(root, f"from-{j}")) for j in range(2)]
            to = [float(shown(root, f"to-{j}")) for j in range(2)]
            assert np.allclose(pair, pe[pos, 2 * i:2 * i + 2], atol=0.5e-4 + 1e-12)
            assert np.allclose(to, pe[pos + k, 2 * i:2 * i + 2], atol=0.5e-4 + 1e-12)
            # the rotation takes one to the other: [sin, cos] R = [sin, cos] at pos + k
            assert np.allclose(np.array(pair) @ got, to, atol=5e-4)
            return shown(root, "dot")

        df = d["default"]
        first = check(df["pos"], df["k"], df["i"])
        root.get_by_test_id("pos-slider").fill("7")
        root.get_by_test_id("k-slider").fill("12")
        choose(root, "pair-select", "2")
        at_7 = check(7, 12, 2)
        assert at_7 != first
        root.get_by_test_id("pos-slider").fill("30")             # same k, other pos:
        assert check(30, 12, 2) == at_7                          # same dot product
        root.get_by_test_id("k-slider").fill(str(len(d["dots"][0]) - 1))
        choose(root, "pair-select", "0")
        check(30, len(d["dots"][0]) - 1, 0)


def cells(root, n_q, n_k):
    return [[shown(root, f"cell-{r}-{c}") for c in range(n_k)] for r in range(n_q)]


def test_attention_explorer(browser):  # noqa: F811
    with opened(browser, "book/14_training", "mtx-attention") as (tab, root, d):
        scale = 10 ** d["decimals"]
        assert [m["name"] for m in d["models"]] == ["reverse", "sort"]
        for m in d["models"]:                  # the stored maps are attention weights
            for e in m["examples"]:
                assert set(e["maps"]) == {"encoder self", "decoder self", "cross"}
                for kind, layers in e["maps"].items():
                    for layer in layers:
                        w = np.array(layer["heads"]) / scale
                        n = w.shape[-1]
                        assert np.allclose(w.sum(-1), 1, atol=n * 0.5 / scale + 1e-9)
                        if kind == "decoder self":                # causal mask
                            assert not np.triu(w, 1).any()

        def check(model, example, kind, layer, head):
            e = d["models"][model]["examples"][example]
            rows, cols = (e[a] for a in d["axes"][kind])
            stored = e["maps"][kind][layer]
            w = stored["mean"] if head == "mean" else stored["heads"][head]
            expected = [[f"{v / scale:.{d['decimals']}f}" for v in row] for row in w]
            assert cells(root, len(rows), len(cols)) == expected
            assert [shown(root, f"query-{r}") for r in range(len(rows))] == rows
            assert [shown(root, f"key-{c}") for c in range(len(cols))] == cols
            return expected

        df = d["default"]
        first = check(df["model"], 0, df["kind"], df["layer"], df["head"])
        choose(root, "kind-select", "encoder self")
        choose(root, "layer-select", "1")
        choose(root, "head-select", "2")
        enc = check(df["model"], 0, "encoder self", 1, 2)
        assert enc != first
        choose(root, "head-select", "mean")
        check(df["model"], 0, "encoder self", 1, "mean")
        choose(root, "model-select", "1")   # sort
        choose(root, "kind-select", "cross")
        choose(root, "layer-select", "0")
        choose(root, "head-select", "0")
        choose(root, "example-select", "1")
        check(1, 1, "cross", 0, 0)

        # Hover a query token: its row is highlighted, the readout names its best key.
        w = d["models"][1]["examples"][1]["maps"]["cross"][0]["heads"][0]
        for r in (3, 5):
            root.get_by_test_id(f"query-{r}").hover()
            focus = root.get_by_test_id("focus")
            assert focus.get_attribute("data-row") == str(r)
            best = int(np.argmax(w[r]))
            assert focus.get_attribute("data-best") == str(best)
            assert f"{w[r][best] / scale:.{d['decimals']}f}" in focus.text_content()
            assert "mtx-on" in root.get_by_test_id(f"query-{r}").get_attribute("class")
            key = root.get_by_test_id(f"key-{best}")
            assert "mtx-best" in key.get_attribute("class")
        root.get_by_test_id("query-0").click()                   # a tap is a click
        assert root.get_by_test_id("focus").get_attribute("data-row") == "0"

"""The book's three interactive figures, driven in headless Chromium from file://.

Run: ``pytest -m browser tests/browser/test_interactive.py`` after the book build
(the fixtures, ``BOOK_HTML`` and ``CHROMIUM``: ``conftest.py``).

For each figure (``book/explorers.py``): the page is opened from ``file://`` with every
non-local request recorded and aborted; the figure mounts; a control is changed as a
reader would (the temperature slider and its buttons; the position and offset sliders
and the frequency pair; the model, kind, layer and head, and a hovered token); and the
numbers the page then shows must be the stored numbers for that choice. The temperature
and positional-encoding numbers are recomputed here from ``mini_transformer``; the
attention weights come from trained models, so they are read from the page's inline
JSON and checked to be attention weights (rows sum to 1, the decoder's causal mask).
No request may leave the page, and no JavaScript error may be thrown. The second half
walks the same figures by keyboard alone (Tab, arrows, Home/End, Enter, Space): every
view the mouse reaches, with a visible focus, the ARIA names a screen reader announces
(each heat-map cell's query, key and weight) and readouts that announce their changes.
"""

from __future__ import annotations

import json
import math
import re
from contextlib import contextmanager

import numpy as np
import pytest

import mini_transformer as mt

pytestmark = pytest.mark.browser

SCORES = np.array([2.0, 1.0, 0.5, -1.0])      # chapter 3's row of scores


@contextmanager
def opened(open_page, page: str, root_id: str):
    """The built page in a fresh tab: yields (tab, the figure's root, its data)."""
    with open_page(page) as visit:
        root = visit.tab.locator(f"#{root_id}")
        assert root.count() == 1, f"{page}.html has no #{root_id}"
        root.scroll_into_view_if_needed()
        assert root.get_attribute("data-mounted") == "1", f"#{root_id} did not mount"
        data = json.loads(root.locator("script.mtx-data").text_content())
        yield visit.tab, root, data
        visit.settle()
    assert not visit.problems(), visit.problems()


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


def test_temperature_slider(open_page):
    page, figure = "book/03_softmax", "mtx-softmax-temperature"
    with opened(open_page, page, figure) as (tab, root, d):
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


def test_positional_explorer(open_page):
    with opened(open_page, "book/06_positional", "mtx-pe-explorer") as (tab, root, d):
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


def test_attention_explorer(open_page):
    with opened(open_page, "book/16_trained_heads", "mtx-attention") as (tab, root, d):
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


# ------------------------------------------------------------------------------------
# The same figures by keyboard alone: Tab, the arrow keys, Home, End, Enter and Space.
# Each walk starts just before the figure and checks that Tab visits every control in
# order and then leaves the figure, that each control shows a visible focus, and that
# the arrow keys reach every value a mouse can set (every slider position, every
# option, every cell of the heat map), with the page showing the stored numbers at each.
# (The attention walk steps through every option of each select for each model and kind
# of attention, and through every cell of two views of the map.)

TEXTS = """r => Object.fromEntries([...r.querySelectorAll('[data-testid]')]
  .map(e => [e.getAttribute('data-testid'), e.textContent.trim()]))"""
FOCUSED = """r => {
  const e = document.activeElement, s = getComputedStyle(e);
  return {inside: r.contains(e), testid: e.getAttribute('data-testid'),
          label: e.getAttribute('aria-label'), text: e.getAttribute('aria-valuetext'),
          outline: s.outlineStyle !== 'none' ? parseFloat(s.outlineWidth) : 0,
          value: e.value === undefined ? null : String(e.value)};
}"""


def js(x: float) -> str:
    """A number as JavaScript's String(x) writes it (8, not 8.0)."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def focused(root) -> dict:
    return root.evaluate(FOCUSED)


def tab_stops(tab, root) -> list[str]:
    """The figure's Tab stops in order: focus starts on the figure's box, then Tab until
    the focus leaves the figure. Each stop must show a focus ring of at least 2 px."""
    root.evaluate("r => { r.tabIndex = -1; r.focus(); }")
    stops = []
    for _ in range(50):
        tab.keyboard.press("Tab")
        f = focused(root)
        if not f["inside"]:
            return stops
        assert f["outline"] >= 2, f"no visible focus on {f['testid']}: {f}"
        stops.append(f["testid"])
    raise AssertionError(f"Tab never leaves the figure: {stops}")


def go_to(tab, root, testid: str) -> None:
    """Tab from the figure's start to the control ``testid``."""
    root.evaluate("r => { r.tabIndex = -1; r.focus(); }")
    for _ in range(50):
        tab.keyboard.press("Tab")
        if focused(root)["testid"] == testid:
            return
    raise AssertionError(f"Tab does not reach {testid}")


def live(root, testid: str) -> None:
    """The readout ``testid`` is announced whole when it changes."""
    node = root.get_by_test_id(testid)
    assert node.get_attribute("aria-live") == "polite"
    assert node.get_attribute("aria-atomic") == "true"


def test_temperature_by_keyboard(open_page):
    page, figure = "book/03_softmax", "mtx-softmax-temperature"
    with opened(open_page, page, figure) as (tab, root, d):
        taus, n = d["taus"], len(SCORES)
        assert tab_stops(tab, root) == ["tau-slider", "mark-0", "mark-1"]
        live(root, "tau-readout")

        def check(j):
            t = root.evaluate(TEXTS)
            assert float(t["tau"]) == taus[j]
            assert [t[f"weight-{i}"] for i in range(n)] == \
                [f"{x:.4f}" for x in d["weights"][j]]
            p = mt.softmax(SCORES, temperature=taus[j])
            assert abs(float(t["entropy"]) - entropy(p)) <= 0.5e-4 + 1e-12
            f = focused(root)
            if f["testid"] == "tau-slider":
                assert f["value"] == str(j) and f["text"] == f"\u03c4 = {js(taus[j])}"

        go_to(tab, root, "tau-slider")
        check(d["default"])
        tab.keyboard.press("Home")
        check(0)
        for j in range(1, len(taus)):              # every temperature, one step each
            tab.keyboard.press("ArrowRight")
            check(j)
        tab.keyboard.press("ArrowRight")            # stays at the end
        check(len(taus) - 1)
        tab.keyboard.press("ArrowLeft")
        check(len(taus) - 2)
        tab.keyboard.press("End")
        check(len(taus) - 1)
        for k, key in enumerate(("Enter", "Space")):  # the buttons
            go_to(tab, root, f"mark-{k}")
            tab.keyboard.press(key)
            check(d["marks"][k]["index"])
        assert root.get_by_test_id("tau-slider").get_attribute("aria-valuetext") == \
            "\u03c4 = 8"


def test_positional_explorer_by_keyboard(open_page):
    with opened(open_page, "book/06_positional", "mtx-pe-explorer") as (tab, root, d):
        d_model = d["d_model"]
        pe = mt.positional_encoding(len(d["pe"]), d_model)
        assert tab_stops(tab, root) == ["pos-slider", "k-slider", "pair-select"]
        live(root, "pe-readout")
        assert root.locator(".mtx-rot-text").get_attribute("aria-live") == "polite"

        def check(pos, k, i):
            t = root.evaluate(TEXTS)
            assert (t["pos"], t["k"]) == (str(pos), str(k))
            assert t["dot"] == f"{d['dots'][pos][k]:.4f}"
            assert abs(float(t["dot"]) - pe[pos] @ pe[pos + k]) <= 0.5e-4 + 1e-9
            w = k * 10000 ** (-2 * i / d_model)
            assert abs(float(t["rot-00"]) - math.cos(w)) <= 0.5e-4 + 1e-12
            assert abs(float(t["rot-10"]) - math.sin(w)) <= 0.5e-4 + 1e-12
            assert [float(t[f"to-{j}"]) for j in range(2)] == \
                [round(x, 4) + 0.0 for x in d["pe"][pos + k][2 * i:2 * i + 2]]

        df = d["default"]
        pos, k, i = df["pos"], df["k"], df["i"]
        go_to(tab, root, "pos-slider")
        tab.keyboard.press("Home")
        check(0, k, i)
        for pos in range(1, len(d["dots"])):           # every position
            tab.keyboard.press("ArrowRight")
            check(pos, k, i)
            assert focused(root)["text"] == f"pos = {pos}"
        tab.keyboard.press("Tab")                        # the offset slider
        tab.keyboard.press("Home")
        check(pos, 0, i)
        for k in range(1, len(d["dots"][0])):          # every offset
            tab.keyboard.press("ArrowRight")
            check(pos, k, i)
            assert focused(root)["text"] == f"k = {k}"
        tab.keyboard.press("Tab")                        # the frequency pair
        assert focused(root)["testid"] == "pair-select"
        for i in range(i + 1, d_model // 2):            # every later pair, ...
            tab.keyboard.press("ArrowDown")
            check(pos, k, i)
        for i in range(i - 1, -1, -1):                   # ... and back to the first
            tab.keyboard.press("ArrowUp")
            check(pos, k, i)


def test_attention_explorer_by_keyboard(open_page):
    with opened(open_page, "book/16_trained_heads", "mtx-attention") as (tab, root, d):
        scale, decimals = 10 ** d["decimals"], d["decimals"]
        stops = tab_stops(tab, root)
        selects = ["model-select", "example-select", "kind-select", "layer-select",
                   "head-select"]
        assert stops[:5] == selects and len(stops) == 6, stops
        assert re.fullmatch(r"cell-\d+-\d+", stops[5]), stops   # one stop: the map
        live(root, "focus")
        grid = root.get_by_test_id("heatmap")
        assert grid.get_attribute("role") == "grid"

        def view():
            v = {s: root.get_by_test_id(s).input_value() for s in selects}
            m = d["models"][int(v["model-select"])]
            e = m["examples"][int(v["example-select"])]
            kind = v["kind-select"]
            layer = e["maps"][kind][int(v["layer-select"])]
            w = layer["mean"] if v["head-select"] == "mean" else \
                layer["heads"][int(v["head-select"])]
            rows, cols = (e[a] for a in d["axes"][kind])
            return w, rows, cols

        def check_map():
            w, rows, cols = view()
            t = root.evaluate(TEXTS)
            for r, row in enumerate(w):
                for c, x in enumerate(row):
                    assert t[f"cell-{r}-{c}"] == f"{x / scale:.{decimals}f}"
            stops = "g => g.querySelectorAll('[tabindex=\"0\"]').length"
            assert grid.evaluate(stops) == 1                # one Tab stop in the map
            return w, rows, cols

        def walk_cells():
            """Every cell by the arrow keys, row by row; each says its query, key and
            weight, and the readout follows the row."""
            w, rows, cols = check_map()
            go_to(tab, root, "head-select")
            tab.keyboard.press("Tab")                    # into the map: one Tab stop
            assert focused(root)["testid"].startswith("cell-")
            tab.keyboard.press("Control+Home")
            for r in range(len(rows)):
                for c in range(len(cols)):
                    f = focused(root)
                    assert f["testid"] == f"cell-{r}-{c}" and f["outline"] >= 2, f
                    weight = f"{w[r][c] / scale:.{decimals}f}"
                    assert f["label"] == (f"query {r + 1} ({rows[r]}), key {c + 1} "
                                          f"({cols[c]}): weight {weight}")
                    readout = root.get_by_test_id("focus")
                    assert readout.get_attribute("data-row") == str(r)
                    best = int(np.argmax(w[r]))
                    assert readout.get_attribute("data-best") == str(best)
                    assert f"on key {best + 1} ({cols[best]})" in readout.text_content()
                    tab.keyboard.press("ArrowRight")
                assert focused(root)["testid"] == f"cell-{r}-{len(cols) - 1}"  # stays
                tab.keyboard.press("ArrowDown")
                tab.keyboard.press("Home")
            assert focused(root)["testid"] == f"cell-{len(rows) - 1}-0"
            tab.keyboard.press("PageUp")
            assert focused(root)["testid"] == "cell-0-0"
            tab.keyboard.press("Control+End")
            assert focused(root)["testid"] == f"cell-{len(rows) - 1}-{len(cols) - 1}"

        def step_through(testid):
            """Every option of one select by the arrow keys, the map checked at each."""
            go_to(tab, root, testid)
            box = root.get_by_test_id(testid)
            values = box.evaluate("s => [...s.options].map(o => o.value)")
            start = values.index(box.input_value())
            for key, order in (("ArrowUp", range(start - 1, -1, -1)),
                               ("ArrowDown", range(1, len(values)))):
                for j in order:
                    tab.keyboard.press(key)
                    assert box.input_value() == values[j]
                    check_map()
            return values

        walk_cells()                                     # the default view
        seen = set()
        for model in ("0", "1"):
            for kind in ("encoder self", "decoder self", "cross"):
                for testid, value in (("model-select", model), ("kind-select", kind)):
                    go_to(tab, root, testid)
                    box = root.get_by_test_id(testid)
                    values = box.evaluate("s => [...s.options].map(o => o.value)")
                    key = "ArrowDown" if values.index(value) > \
                        values.index(box.input_value()) else "ArrowUp"
                    while box.input_value() != value:
                        tab.keyboard.press(key)
                check_map()
                for testid in ("example-select", "layer-select", "head-select"):
                    step_through(testid)
                seen.add((model, kind))
        assert len(seen) == 6
        walk_cells()                                     # a second view, every cell

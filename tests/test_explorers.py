"""book/explorers.py: the interactive figures embed the package's numbers, rounded.

The oracles are independent of the code under test: the softmax, the entropy and
the sinusoids are recomputed here from their formulas with ``math``, not with
``mini_transformer``; the embedded data is read back from the HTML markup itself.
"""

import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from IPython.core.formatters import DisplayFormatter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
import explorers  # noqa: E402

MARKS = {"\u03c4 = 1": 1.0, "\u03c4 = 8": 8.0}
SCORES = [2.0, 1.0, 0.5, -1.0]


def embedded(explorer) -> dict:
    """The JSON the page holds, parsed from the markup (not from ``.payload``)."""
    markup = explorer._repr_html_()
    m = re.search(r'<script type="application/json" class="mtx-data" '
                  r'id="mtx-([a-z0-9-]+)-data">\n(.*?)\n</script>', markup, re.S)
    assert m and m.group(1) == explorer.name
    return json.loads(m.group(2))


def decimals_of(x: float) -> int:
    text = repr(float(x))
    return 0 if "." not in text else len(text.split(".")[1].rstrip("0"))


def flat(x):
    if isinstance(x, list):
        for y in x:
            yield from flat(y)
    else:
        yield x


@pytest.fixture(scope="module")
def temperature():
    return explorers.temperature_explorer("t-test", SCORES, marks=MARKS)


@pytest.fixture(scope="module")
def positional():
    return explorers.positional_explorer("pe-test", 8, positions=6, offsets=5,
                                         default=(2, 3, 1))


def example(rng, tokens, h=2):
    def weights(n_q, n_k):
        w = rng.random((h, n_q, n_k))
        return w / w.sum(-1, keepdims=True)

    src, tgt = tokens, ["BOS", *tokens]
    return {"label": "ex", "source": src, "target": tgt, "maps": {
        "encoder self": [weights(len(src), len(src))],
        "decoder self": [weights(len(tgt), len(tgt))],
        "cross": [weights(len(tgt), len(src))]}}


def test_temperature_weights_are_the_softmax_rounded(temperature):
    d = embedded(temperature)
    assert d == temperature.payload
    assert d["taus"][0] == 0.05 and d["taus"][-1] == 20.0
    assert d["taus"] == sorted(d["taus"])
    for tau, w, h in zip(d["taus"], d["weights"], d["entropy"]):
        e = [math.exp((s - max(SCORES)) / tau) for s in SCORES]
        p = [x / sum(e) for x in e]
        H = -sum(x * math.log(x) for x in p if x > 0)
        assert max(abs(a - b) for a, b in zip(w, p)) <= 0.5e-4 + 1e-12
        assert abs(h - H) <= 0.5e-4 + 1e-12
        assert all(decimals_of(x) <= 4 for x in [*w, h])
        assert float(f"{tau:.4g}") == tau                 # 4 significant digits


def test_temperature_marks_and_default_are_grid_points(temperature):
    d = temperature.payload
    assert [d["taus"][m["index"]] for m in d["marks"]] == [1.0, 8.0]
    assert [m["label"] for m in d["marks"]] == list(MARKS)
    assert d["taus"][d["default"]] == 1.0
    assert d["log_n"] == round(math.log(4), 4)
    assert d["labels"] == ["s1 = 2", "s2 = 1", "s3 = 0.5", "s4 = -1"]


def test_temperature_is_tau_in_every_label(temperature):
    """The book writes the temperature tau (T is no symbol of its notation)."""
    import matplotlib

    matplotlib.use("Agg")
    assert "\u03c4" in temperature.title and " T " not in temperature.title
    fig = explorers.static_figure(temperature)
    texts = [t.get_text() for ax in fig.axes
             for t in (ax.title, ax.xaxis.label, ax.yaxis.label)]
    assert any("\u03c4" in t for t in texts)
    assert not any(re.search(r"\bT\b|\bH\b", t) for t in texts), texts
    js = (Path(explorers.__file__).with_suffix(".js")).read_text()
    assert "temperature T" not in js and '"T = "' not in js and "entropy H" not in js


def test_positional_data_is_the_sinusoids_rounded(positional):
    d = embedded(positional)
    assert d == positional.payload
    assert len(d["pe"]) == 6 + 5 - 1 and len(d["pe"][0]) == 8
    for pos, row in enumerate(d["pe"]):
        for i in range(4):
            angle = pos / 10000 ** (2 * i / 8)
            assert abs(row[2 * i] - math.sin(angle)) <= 0.5e-4 + 1e-12
            assert abs(row[2 * i + 1] - math.cos(angle)) <= 0.5e-4 + 1e-12
    assert len(d["dots"]) == 6 and len(d["dots"][0]) == 5
    for pos, row in enumerate(d["dots"]):
        for k, dot in enumerate(row):
            exact = sum(math.cos(k / 10000 ** (2 * i / 8)) for i in range(4))
            assert abs(dot - exact) <= 0.5e-4 + 1e-9
    assert all(decimals_of(x) <= 4 for x in flat([d["pe"], d["dots"]]))
    assert d["wavelengths"][0] == round(2 * math.pi, 2)
    assert d["default"] == {"pos": 2, "k": 3, "i": 1}


def test_positional_refuses_odd_d_model():
    with pytest.raises(ValueError, match="even"):
        explorers.positional_explorer("pe-odd", 5)


def test_attention_stores_thousandths_and_the_mean_of_the_heads():
    rng = np.random.default_rng(0)
    ex = example(rng, ["1", "2", "3"])
    a = explorers.attention_explorer("att", {"m": [ex]},
                                     default={"kind": "cross", "head": "mean"})
    d = embedded(a)
    assert d == a.payload
    assert d["default"] == {"model": 0, "kind": "cross", "layer": 0, "head": "mean"}
    for kind, layers in ex["maps"].items():
        stored = d["models"][0]["examples"][0]["maps"][kind][0]
        w = layers[0]
        for h in range(w.shape[0]):
            for r in range(w.shape[1]):
                for c in range(w.shape[2]):
                    assert stored["heads"][h][r][c] == round(w[h, r, c] * 1000)
                    assert isinstance(stored["heads"][h][r][c], int)
        mean = w.sum(axis=0) / w.shape[0]
        assert stored["mean"] == [[round(x * 1000) for x in row] for row in mean]


def test_attention_inputs_cut_each_example_to_its_tokens():
    rng = np.random.default_rng(3)
    batch, h, n_src, n_tgt = 2, 2, 5, 6                      # padded lengths
    maps = {"encoder self": [rng.random((batch, h, n_src, n_src))],
            "decoder self": [rng.random((batch, h, n_tgt, n_tgt))],
            "cross": [rng.random((batch, h, n_tgt, n_src))]}
    sources = [["a", "b", "c"], ["d", "e", "f", "g", "h"]]
    targets = [["BOS", "x"], ["BOS", "y", "z", "w", "v", "u"]]
    inputs = explorers.attention_inputs(maps, sources, targets)
    assert [e["label"] for e in inputs] == ["1: a b c", "2: d e f g h"]
    first = inputs[0]["maps"]
    assert first["encoder self"][0].shape == (h, 3, 3)
    assert first["decoder self"][0].shape == (h, 2, 2)
    assert first["cross"][0].shape == (h, 2, 3)
    assert (first["cross"][0] == maps["cross"][0][0, :, :2, :3]).all()
    assert inputs[1]["maps"]["cross"][0].shape == (h, 6, 5)
    a = explorers.attention_explorer("cut", {"m": inputs})      # accepted as they are
    assert a.payload["models"][0]["examples"][1]["target"] == targets[1]


def test_attention_refuses_maps_that_do_not_fit_the_tokens():
    ex = example(np.random.default_rng(0), ["1", "2", "3"])
    ex["maps"]["cross"] = [np.ones((2, 3, 3)) / 3]       # target has 4 tokens
    with pytest.raises(ValueError, match=r"expected \(h, 4, 3\)"):
        explorers.attention_explorer("att", {"m": [ex]})
    ex["maps"] = {"self": [np.ones((1, 3, 3)) / 3]}
    with pytest.raises(ValueError, match="unknown kind"):
        explorers.attention_explorer("att", {"m": [ex]})


def test_token_strings_are_escaped_in_the_markup():
    nasty = ["</script><script>alert(1)</script>", "<b>&amp;", '"quoted"', "a,b"]
    a = explorers.attention_explorer("esc", {"m": [example(np.random.default_rng(1),
                                                           nasty)]})
    markup = a._repr_html_()
    for token in nasty[:2]:
        assert token not in markup
    assert markup.count("</script>") == 2         # the data's and the code's
    assert markup.count("<script") == 2
    assert embedded(a)["models"][0]["examples"][0]["source"] == nasty


@pytest.mark.parametrize("name", ["Bad Name", 'x"><img', "", "9lives", "a" * 41, None])
def test_names_become_ids_and_are_checked(name):
    with pytest.raises(ValueError, match="name must match"):
        explorers.temperature_explorer(name, SCORES)


def test_output_is_deterministic_short_and_fits_the_column(temperature):
    again = explorers.temperature_explorer("t-test", SCORES, marks=MARKS)
    assert again._repr_html_() == temperature._repr_html_()
    data, _ = DisplayFormatter().format(temperature)
    assert data["text/plain"] == ("<temperature explorer 't-test': 4 scores, "
                                  "122 temperatures from 0.05 to 20>")
    assert data["text/html"] == temperature._repr_html_()
    markup = temperature._repr_html_()
    assert 'id="mtx-t-test"' in markup
    assert max(len(line) for line in markup.splitlines()) <= 88
    assert not re.search(r"\b0x[0-9a-fA-F]{6,}\b", markup)


def test_the_javascript_requests_nothing():
    js = explorers.JS_FILE.read_text()
    assert max(len(line) for line in js.splitlines()) <= 88
    urls = re.findall(r"(?:https?:)?//[\w.-]+\.\w+", js)
    assert urls == ["http://www.w3.org"]              # the SVG namespace, a name only
    for word in ("fetch(", "XMLHttpRequest", "import(", ".src =", "WebSocket"):
        assert word not in js


def test_wrapped_json_breaks_only_between_values():
    data = {"s": ['x\\", y,' * 30, 1.5] * 3, "n": list(range(100))}
    text = explorers._wrapped_json(data)
    assert json.loads(text) == data
    assert all(len(line) <= explorers.WIDTH for line in text.splitlines()[-3:])


def test_static_figures_draw_the_default_view(temperature, positional):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a = explorers.attention_explorer("att", {"m": [example(np.random.default_rng(2),
                                                           ["1", "2"])]})
    for e in (temperature, positional, a):
        fig = explorers.static_figure(e)
        assert fig.axes
        plt.close(fig)

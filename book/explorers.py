"""Interactive figures that work offline: the data as inline JSON, the code inline.

``temperature_explorer``, ``positional_explorer`` and ``attention_explorer`` each
return an ``Explorer``, an ``IPython.display.HTML`` whose markup is one ``<div>``
holding the figure's data (a ``<script type="application/json">``), a ``<style>``
and ``explorers.js`` (plain JavaScript written for this book, no library) inline.
The same output renders in the built book (myst-nb copies ``text/html`` outputs
into the page, which then works from ``file://`` with no network) and in JupyterLab.

The output is stored in the notebook and checked by nbval, so it is the same on
every CPU: every float is rounded (``decimals``) before it is embedded, and the
element ids derive from the ``name`` argument (no random ids). ``static_figure``
draws the default view with matplotlib, for readers without JavaScript.

Every figure works by keyboard alone and with a screen reader: each control is a native
input with a label (the sliders also say their value, e.g. "τ = 8", in
``aria-valuetext``); the readouts are ``aria-live`` regions, announced when they change;
the attention map is an ARIA grid with one Tab stop, whose cells the arrow keys visit,
each labelled with its query, key and weight, and focusing a cell shows its row as
pointing at it does; every focused element has a 3 px ring; a cell's text is black or
white, whichever contrasts more with its shade (at least 4.58 : 1).
"""

from __future__ import annotations

import html
import json
import math
import re
import textwrap
from pathlib import Path

import numpy as np
from IPython.display import HTML

import mini_transformer as mt

JS_FILE = Path(__file__).with_name("explorers.js")
NAME = re.compile(r"[a-z][a-z0-9-]{0,39}\Z")
WIDTH = 80          # the stored JSON and the title: lines of at most 80 characters

CSS = """
.mtx { font: 14px/1.4 system-ui, sans-serif; border: 1px solid #ccd;
  border-radius: 6px; padding: 10px 12px; margin: 8px 0; max-width: 760px;
  background: #fff; color: #111; color-scheme: light; }
.mtx-title { font-weight: 600; margin-bottom: 6px; }
.mtx-row, .mtx-readout { margin: 6px 0; }
.mtx-readout { font-family: ui-monospace, monospace; white-space: pre-wrap; }
.mtx-control { margin-right: 14px; display: inline-block; }
.mtx-wide { width: min(420px, 90%); vertical-align: middle; }
.mtx button { margin: 0 4px; padding: 1px 8px; }
.mtx-bar-row { display: flex; align-items: center; margin: 2px 0; }
.mtx-bar-label { width: 90px; font-family: ui-monospace, monospace; }
.mtx-bar-track { flex: 0 1 360px; height: 14px; background: #eef; margin: 0 8px; }
.mtx-bar-fill { display: block; height: 100%; background: #3a6fb0; }
.mtx-bar-value { font-family: ui-monospace, monospace; }
.mtx-chart { width: 100%; max-width: 520px; display: block; }
.mtx-axis { stroke: #333; } .mtx-grid { stroke: #ddd; stroke-width: 0.5; }
.mtx-tick, .mtx-label { font-size: 11px; fill: #333; }
.mtx-mark { stroke: #c0392b; stroke-dasharray: 4 3; }
.mtx-line { fill: none; stroke: #3a6fb0; stroke-width: 2; }
.mtx-dot { fill: #e67e22; stroke: #fff; }
.mtx-rotation { display: flex; flex-wrap: wrap; gap: 16px; align-items: center; }
.mtx-rot-text { font-family: ui-monospace, monospace; }
.mtx-rot-title { font-weight: 600; }
.mtx-matrix { margin: 4px 0; }
.mtx-matrix td { border: 1px solid #bbc; padding: 2px 8px; text-align: right; }
.mtx-circle { width: 150px; height: 150px; }
.mtx-unit { fill: none; stroke: #888; stroke-width: 0.02; }
.mtx-circle .mtx-grid { stroke-width: 0.01; }
.mtx-spoke-a { stroke: #3a6fb0; stroke-width: 0.03; }
.mtx-spoke-b { stroke: #e67e22; stroke-width: 0.03; }
.mtx-pt-a { fill: #3a6fb0; } .mtx-pt-b { fill: #e67e22; }
.mtx-note { font-size: 12px; color: #555; }
.mtx-heat-wrap { overflow-x: auto; }
.mtx-heat { border-collapse: collapse; font: 11px ui-monospace, monospace; }
.mtx-heat td { width: 42px; height: 22px; text-align: center;
  border: 1px solid #fff; }
.mtx-heat th { padding: 2px 6px; font-weight: normal; }
.mtx-query { cursor: pointer; text-align: right; }
.mtx-query.mtx-on { background: #fde9c8; font-weight: 700; }
.mtx-heat td.mtx-on { outline: 2px solid #e67e22; outline-offset: -2px; }
.mtx-key.mtx-read { background: #fde9c8; }
.mtx-key.mtx-best { font-weight: 700; text-decoration: underline; }
.mtx :focus-visible { outline: 3px solid #000; outline-offset: 2px;
  box-shadow: 0 0 0 5px #fff; }
.mtx-heat td:focus, .mtx-heat td:focus-visible { outline: 3px solid #000;
  outline-offset: -3px; box-shadow: inset 0 0 0 5px #fff; }
"""


class Explorer(HTML):
    """An interactive figure: ``text/html`` to show, a short ``text/plain`` repr.

    ``payload`` is exactly what the page embeds (rounded lists and strings).
    """

    def __init__(self, kind: str, name: str, title: str, data: dict, summary: str):
        self.kind, self.name, self.title = kind, name, title
        self.payload, self.summary = data, summary
        super().__init__(_markup(kind, name, title, data))

    def __repr__(self) -> str:
        return f"<{self.kind} explorer {self.name!r}: {self.summary}>"

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))


def rounded(a, decimals: int):
    """``a`` as nested lists of floats rounded to ``decimals`` (no -0.0)."""
    return (np.round(np.asarray(a, dtype=np.float64), decimals) + 0.0).tolist()


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise ValueError(f"name must match {NAME.pattern} (it becomes an element id), "
                         f"got {name!r}")
    return name


def _wrapped_json(data) -> str:
    """Compact JSON, safe inside <script>, broken into lines of at most WIDTH chars.

    Lines break only after a comma outside a string, so the JSON is unchanged.
    """
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    lines, start, in_string, escape, last_comma = [], 0, False, False, -1
    for j, ch in enumerate(text):
        if in_string:
            escaped, escape = escape, not escape and ch == "\\"
            in_string = escaped or ch != '"'
            continue
        if ch == '"':
            in_string = True
        elif ch == ",":
            if j + 1 - start > WIDTH and last_comma > start:
                lines.append(text[start:last_comma + 1])
                start = last_comma + 1
            last_comma = j
    if len(text) - start > WIDTH and last_comma > start:
        lines.append(text[start:last_comma + 1])
        start = last_comma + 1
    lines.append(text[start:])
    return "\n".join(lines)


def _markup(kind: str, name: str, title: str, data: dict) -> str:
    root = f"mtx-{name}"
    return "\n".join([
        f'<div class="mtx tex2jax_ignore mathjax_ignore" id="{root}"',
        f'  data-kind="{kind}">',
        f"<style>{CSS}</style>",
        '<div class="mtx-title">',
        textwrap.fill(html.escape(title), WIDTH),
        "</div>",
        '<div class="mtx-body">This figure needs JavaScript; the picture',
        "below shows its default view.</div>",
        f'<script type="application/json" class="mtx-data" id="{root}-data">',
        _wrapped_json(data),
        "</script>",
        "<script>",
        JS_FILE.read_text().replace("</", "<\\/"),
        "window.mtExplorers.mount(document.currentScript",
        "  ? document.currentScript.parentNode",
        f'  : document.getElementById("{root}"));',
        "</script>",
        "</div>",
    ])


def entropy(p, axis: int = -1):
    """The entropy -sum p log p in nats, with 0 log 0 = 0."""
    p = np.asarray(p, dtype=np.float64)
    safe = np.where(p > 0, p, 1.0)
    return -np.sum(np.where(p > 0, p * np.log(safe), 0.0), axis=axis)


def temperature_explorer(name: str, scores, *, marks=None, default: float = 1.0,
                         n_steps: int = 121, tau_range=(0.05, 20.0), labels=None,
                         decimals: int = 4) -> Explorer:
    """The weights ``mt.softmax(scores, temperature=tau)`` as tau sweeps a log scale.

    marks: {label: tau} shown on the slider's chart and as buttons; every mark and
    ``default`` are points of the grid. The temperatures are rounded to 4
    significant digits first, and the weights are computed at exactly those.
    """
    _check_name(name)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or len(scores) < 2:
        raise ValueError("scores must be one row of at least 2 numbers, "
                         f"got shape {scores.shape}")
    marks = dict(marks or {})
    grid = np.geomspace(tau_range[0], tau_range[1], n_steps)
    taus = np.unique([float(f"{t:.4g}") for t in [*grid, *marks.values(), default]])
    weights = np.stack([mt.softmax(scores, temperature=float(t)) for t in taus])
    index = {float(t): j for j, t in enumerate(taus)}
    labels = labels or [f"s{j + 1} = {s:g}" for j, s in enumerate(scores)]
    data = {
        "decimals": decimals,
        "scores": rounded(scores, decimals),
        "labels": [str(x) for x in labels],
        "taus": [float(t) for t in taus],
        "weights": rounded(weights, decimals),
        "entropy": rounded(entropy(weights), decimals),
        "log_n": round(math.log(len(scores)), decimals),
        "marks": [{"label": str(k), "index": index[float(f"{t:.4g}")]}
                  for k, t in marks.items()],
        "default": index[float(f"{default:.4g}")],
    }
    title = "Softmax weights of one row of scores as the temperature \u03c4 changes"
    return Explorer("temperature", name, title, data,
                    f"{len(scores)} scores, {len(taus)} temperatures "
                    f"from {taus[0]:g} to {taus[-1]:g}")


def positional_explorer(name: str, d_model: int, *, positions: int = 41,
                        offsets: int = 41, default=(0, 1, 0),
                        decimals: int = 4) -> Explorer:
    """PE(pos) . PE(pos + k) for pos < ``positions``, k < ``offsets``, and the pairs.

    The rows of ``mt.positional_encoding(positions + offsets - 1, d_model)`` are
    embedded (rounded); the rotation that takes pair i of PE(pos) to PE(pos + k)
    has entries cos, sin of omega_i k, which are pair i of PE(k) itself.
    default: (pos, k, i).
    """
    _check_name(name)
    if d_model % 2:
        raise ValueError(f"d_model must be even (pairs of columns), got {d_model}")
    pe = mt.positional_encoding(positions + offsets - 1, d_model)
    dots = np.stack([pe[p] @ pe[p:p + offsets].T for p in range(positions)])
    omega = 10000.0 ** (-2 * np.arange(d_model // 2) / d_model)
    pos, k, i = default
    data = {
        "decimals": decimals,
        "d_model": d_model,
        "pe": rounded(pe, decimals),
        "dots": rounded(dots, decimals),
        "wavelengths": rounded(2 * np.pi / omega, 2),
        "default": {"pos": int(pos), "k": int(k), "i": int(i)},
    }
    title = (f"Positional encoding, d_model = {d_model}: the dot product "
             "against the offset, and one pair's rotation")
    return Explorer("positional", name, title, data,
                    f"d_model {d_model}, pos 0..{positions - 1}, k 0..{offsets - 1}")


AXES = {"encoder self": ["source", "source"], "decoder self": ["target", "target"],
        "cross": ["target", "source"]}


def attention_explorer(name: str, models: dict, *, default=None, decimals: int = 3,
                       highlight: float = 0.2) -> Explorer:
    """Attention maps of one or more models, a few example inputs each.

    models: {model name: [example, ...]}, an example a dict with
      "label": str, "source": [token str], "target": [token str] (rows of the
      decoder: the tokens fed in), "maps": {kind: [weights (h, n_q, n_k) of layer 0,
      layer 1, ...]}, kind one of "encoder self", "decoder self", "cross" (a
      model may have any of them: a decoder-only model gives "decoder self").
    The weights are stored as integers in units of 10^-decimals, with the mean
    over the heads computed here before rounding. default: {"model", "kind",
    "layer", "head"} (indices; head may be "mean"). A key is highlighted where
    the focused query puts at least ``highlight`` of its weight.
    """
    _check_name(name)
    scale = 10**decimals
    out, shapes = [], []
    for model_name, examples in models.items():
        rows = []
        for ex in examples:
            maps = {}
            for kind, layers in ex["maps"].items():
                if kind not in AXES:
                    raise ValueError(f"unknown kind {kind!r}: one of {list(AXES)}")
                n_q = len(ex[AXES[kind][0]])
                n_k = len(ex[AXES[kind][1]])
                maps[kind] = []
                for w in layers:
                    w = np.asarray(w, dtype=np.float64)
                    if w.ndim != 3 or w.shape[1:] != (n_q, n_k):
                        raise ValueError(f"{model_name}, {kind}: weights {w.shape}, "
                                         f"expected (h, {n_q}, {n_k}) for the tokens")
                    maps[kind].append({
                        "heads": np.rint(w * scale).astype(int).tolist(),
                        "mean": np.rint(w.mean(axis=0) * scale).astype(int).tolist(),
                    })
                    shapes.append(w.shape[0])
            rows.append({"label": str(ex["label"]),
                         "source": [str(t) for t in ex["source"]],
                         "target": [str(t) for t in ex["target"]],
                         "maps": maps})
        out.append({"name": str(model_name), "examples": rows})
    default = {"model": 0, "kind": next(iter(out[0]["examples"][0]["maps"])),
               "layer": 0, "head": 0, **(default or {})}
    data = {"decimals": decimals, "highlight": highlight, "axes": AXES,
            "models": out, "default": default}
    n_ex = sum(len(m["examples"]) for m in out)
    title = "Attention weights of the trained models: pick a map, point at a query"
    return Explorer("attention", name, title, data,
                    f"{len(out)} models, {n_ex} inputs, {len(shapes)} maps")


def attention_inputs(maps: dict, sources, targets, labels=None) -> list[dict]:
    """The inputs of ``attention_explorer`` from a batch's maps, one per example.

    maps: {kind: [weights (batch, h, n_q, n_k) of layer 0, layer 1, ...]} for a batch
    whose first examples have the token strings ``sources`` and ``targets`` (the
    decoder's input tokens). Each map is cut to the example's own lengths, so padding
    beyond them does not show. labels: one per example (default: its source).
    """
    out = []
    for b, (src, tgt) in enumerate(zip(sources, targets)):
        sizes = {"source": len(src), "target": len(tgt)}
        cut = {}
        for kind, layers in maps.items():
            n_q, n_k = (sizes[axis] for axis in AXES[kind])
            cut[kind] = [np.asarray(w[b])[:, :n_q, :n_k] for w in layers]
        label = labels[b] if labels else f"{b + 1}: " + " ".join(map(str, src))
        out.append({"label": label, "source": list(src), "target": list(tgt),
                    "maps": cut})
    return out


def static_figure(explorer: Explorer):
    """A matplotlib figure of the explorer's default view (the no-JavaScript view).

    The temperature and positional views set their text in 11 pt on figures 8.5 inches
    wide: at the book's column width (about 760 px at 1280 px) no label is smaller than
    the page's small text. The attention map is narrower and keeps the default size.
    """
    import matplotlib.pyplot as plt

    if explorer.kind == "attention":
        return _static_figure(explorer, plt)
    with plt.rc_context({"font.size": 11}):
        return _static_figure(explorer, plt)


def _static_figure(explorer: Explorer, plt):
    d = explorer.payload
    if explorer.kind == "temperature":
        taus, i = np.array(d["taus"]), d["default"]
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8.5, 3.4), layout="constrained",
                                       gridspec_kw={"width_ratios": [1, 1.4]})
        ax1.barh(range(len(d["labels"])), d["weights"][i], color="#3a6fb0")
        ax1.set_yticks(range(len(d["labels"])), d["labels"])
        ax1.invert_yaxis()
        ax1.set_xlim(0, 1)
        ax1.set_xlabel("weight")
        ax1.set_title(f"weights at \u03c4 = {taus[i]:g}")
        ax2.semilogx(taus, d["entropy"], color="#3a6fb0")
        ax2.plot(taus[i], d["entropy"][i], "o", color="#e67e22")
        for m in d["marks"]:
            ax2.axvline(taus[m["index"]], color="#c0392b", ls="--", lw=1)
            ax2.annotate(m["label"], (taus[m["index"]], 0.05), xytext=(3, 0),
                         textcoords="offset points", fontsize=10)
        ticks = [0.05, 0.1, 0.5, 1, 2, 5, 10, 20]
        ax2.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax2.set_xlabel("temperature \u03c4 (log scale)")
        ax2.set_ylabel("entropy (nats)")
        ax2.set_title("entropy of the weights")
        return fig
    if explorer.kind == "positional":
        df, pe = d["default"], np.array(d["pe"])
        pos, k, i = df["pos"], df["k"], df["i"]
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8.5, 3.4), layout="constrained",
                                       gridspec_kw={"width_ratios": [2, 1]})
        dots = d["dots"][pos]
        ax1.plot(range(len(dots)), dots, color="#3a6fb0")
        ax1.plot(k, dots[k], "o", color="#e67e22")
        ax1.set_xlabel("offset k")
        ax1.set_ylabel("PE(pos) \u00b7 PE(pos + k)")
        ax1.set_title(f"pos = {pos}, d_model = {d['d_model']}")
        t = np.linspace(0, 2 * np.pi, 200)
        ax2.plot(np.cos(t), np.sin(t), color="0.6", lw=1)
        for p, c, lab in ((pos, "#3a6fb0", "pos"), (pos + k, "#e67e22", "pos + k")):
            s_, c_ = pe[p, 2 * i], pe[p, 2 * i + 1]
            ax2.plot([0, c_], [0, s_], color=c, lw=2, label=lab)
        ax2.set_aspect("equal")
        ax2.set_xlim(-1.3, 1.3)
        ax2.set_ylim(-1.3, 1.3)
        ax2.set_xlabel("cos")
        ax2.set_ylabel("sin")
        ax2.set_title(f"pair i = {i}, k = {k}")
        ax2.legend(loc="upper left", bbox_to_anchor=(1.02, 1))
        return fig
    df = d["default"]
    model = d["models"][df["model"]]
    ex = model["examples"][0]
    kind = df["kind"]
    layer = ex["maps"][kind][df["layer"]]
    w = layer["mean"] if df["head"] == "mean" else layer["heads"][df["head"]]
    w = np.array(w) / 10 ** d["decimals"]
    rows, cols = (ex[a] for a in d["axes"][kind])
    fig, ax = plt.subplots(figsize=(5.5, 4.6), layout="constrained")
    im = ax.imshow(w, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(cols)), cols)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel(f"key ({d['axes'][kind][1]})")
    ax.set_ylabel(f"query ({d['axes'][kind][0]})")
    head = "mean of the heads" if df["head"] == "mean" else f"head {df['head'] + 1}"
    ax.set_title(f"{model['name']}: {kind}, layer {df['layer'] + 1}, {head}",
                 fontsize=10)
    fig.colorbar(im, ax=ax, shrink=0.8, label="weight")
    return fig

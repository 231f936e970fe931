// The book's interactive figures: plain JavaScript, no library, no network.
// Part of the mini_transformer book, under the repository's licence.
//
// book/explorers.py inlines this file into each figure's HTML output, after a
// <div class="mtx"> that holds the figure's data as inline JSON. The script then
// calls mtExplorers.mount(div). The same output works in the built book (also
// from file://) and in JupyterLab. Every number shown is a stored number of the
// JSON (no arithmetic on it but a sign change), so the browser tests can compare
// the page with the notebook's data.
window.mtExplorers = (function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      node.setAttribute(key, attrs[key]);
    });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function svg(tag, attrs, text) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (key) {
      node.setAttribute(key, attrs[key]);
    });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function fixed(x, digits) {
    var s = Number(x).toFixed(digits);
    return /^-0\.?0*$/.test(s) ? s.slice(1) : s;   // no "-0.0000"
  }

  function select(testid, options, value, label) {
    var wrap = el("label", {"class": "mtx-control"}, label + " ");
    var box = el("select", {"data-testid": testid});
    options.forEach(function (opt) {
      var o = el("option", {value: String(opt[0])}, opt[1]);
      if (String(opt[0]) === String(value)) o.selected = true;
      box.appendChild(o);
    });
    wrap.appendChild(box);
    return {wrap: wrap, input: box};
  }

  // A range input over the indices 0..max; its label names it, and say(i), the
  // text a screen reader announces for index i (aria-valuetext), names the value.
  function slider(testid, max, value, label, say) {
    var wrap = el("label", {"class": "mtx-control"}, label + " ");
    var input = el("input", {type: "range", min: "0", max: String(max), step: "1",
                             "data-testid": testid});
    input.value = String(value);
    wrap.appendChild(input);
    function sync() {
      input.setAttribute("aria-valuetext", say(Number(input.value)));
    }
    input.addEventListener("input", sync);
    input.addEventListener("change", sync);
    sync();
    return {wrap: wrap, input: input, sync: sync};
  }

  // A readout a screen reader announces, whole, each time its text changes.
  function readout(attrs) {
    var node = el("div", attrs);
    node.classList.add("mtx-readout");
    node.setAttribute("aria-live", "polite");
    node.setAttribute("aria-atomic", "true");
    return node;
  }

  // A line chart: xs, ys numbers; returns {node, cursor(i), setData(ys)}.
  function chart(opts) {
    var W = 520, H = 190, L = 46, R = 12, T = 12, B = 34;
    var root = svg("svg", {viewBox: "0 0 " + W + " " + H, "class": "mtx-chart",
                           role: "img", "aria-label": opts.title});
    var xmin = opts.xmin, xmax = opts.xmax, ymin = opts.ymin, ymax = opts.ymax;
    function X(x) { return L + (x - xmin) / (xmax - xmin) * (W - L - R); }
    function Y(y) { return H - B - (y - ymin) / (ymax - ymin) * (H - T - B); }
    root.appendChild(svg("line", {x1: L, y1: H - B, x2: W - R, y2: H - B,
                                  "class": "mtx-axis"}));
    root.appendChild(svg("line", {x1: L, y1: T, x2: L, y2: H - B,
                                  "class": "mtx-axis"}));
    opts.yticks.forEach(function (t) {
      root.appendChild(svg("text", {x: L - 4, y: Y(t) + 4, "text-anchor": "end",
                                    "class": "mtx-tick"}, String(t)));
      root.appendChild(svg("line", {x1: L, y1: Y(t), x2: W - R, y2: Y(t),
                                    "class": "mtx-grid"}));
    });
    opts.xticks.forEach(function (t) {
      root.appendChild(svg("text", {x: X(t[0]), y: H - B + 14, "text-anchor": "middle",
                                    "class": "mtx-tick"}, t[1]));
    });
    root.appendChild(svg("text", {x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle",
                                  "class": "mtx-label"}, opts.xlabel));
    root.appendChild(svg("text", {x: 12, y: (T + H - B) / 2, "text-anchor": "middle",
                                  transform: "rotate(-90 12 " + (T + H - B) / 2 + ")",
                                  "class": "mtx-label"}, opts.ylabel));
    (opts.marks || []).forEach(function (m) {
      root.appendChild(svg("line", {x1: X(m[0]), y1: T, x2: X(m[0]), y2: H - B,
                                    "class": "mtx-mark"}));
      root.appendChild(svg("text", {x: X(m[0]) + 3, y: T + 10, "class": "mtx-tick"},
                           m[1]));
    });
    var line = svg("polyline", {"class": "mtx-line"});
    root.appendChild(line);
    var dot = svg("circle", {r: 5, "class": "mtx-dot"});
    root.appendChild(dot);
    var ys = [];
    function setData(values) {
      ys = values;
      line.setAttribute("points", opts.xs.map(function (x, i) {
        return X(x).toFixed(1) + "," + Y(ys[i]).toFixed(1);
      }).join(" "));
    }
    function cursor(i) {
      dot.setAttribute("cx", X(opts.xs[i]).toFixed(1));
      dot.setAttribute("cy", Y(ys[i]).toFixed(1));
    }
    setData(opts.ys);
    return {node: root, setData: setData, cursor: cursor};
  }

  // 1. The softmax of one row of scores at temperature tau (chapter 3).
  function temperature(root, d) {
    var digits = d.decimals;
    var s = slider("tau-slider", d.taus.length - 1, d["default"],
                   "temperature \u03c4 (log scale, " + d.taus[0] + " to " +
                   d.taus[d.taus.length - 1] + ")",
                   function (i) { return "\u03c4 = " + d.taus[i]; });
    s.input.classList.add("mtx-wide");
    root.appendChild(s.wrap);
    var buttons = el("div", {"class": "mtx-row"}, "jump to: ");
    d.marks.forEach(function (m, k) {
      var b = el("button", {type: "button", "data-testid": "mark-" + k}, m.label);
      b.addEventListener("click", function () {
        s.input.value = String(m.index);
        s.sync();
        update();
      });
      buttons.appendChild(b);
    });
    root.appendChild(buttons);
    var read = readout({"data-testid": "tau-readout"});
    read.appendChild(document.createTextNode("\u03c4 = "));
    var tau = read.appendChild(el("span", {"data-testid": "tau"}));
    read.appendChild(document.createTextNode("   entropy = "));
    var ent = read.appendChild(el("span", {"data-testid": "entropy"}));
    read.appendChild(document.createTextNode(" nats (one-hot 0, uniform log n = " +
                                             fixed(d.log_n, digits) + ")"));
    root.appendChild(read);
    var bars = el("div", {"class": "mtx-bars"});
    var fills = [], values = [];
    d.labels.forEach(function (label, j) {
      var row = el("div", {"class": "mtx-bar-row"});
      row.appendChild(el("span", {"class": "mtx-bar-label"}, label));
      var track = row.appendChild(el("span", {"class": "mtx-bar-track"}));
      fills.push(track.appendChild(el("span", {"class": "mtx-bar-fill"})));
      values.push(row.appendChild(el("span", {"class": "mtx-bar-value",
                                              "data-testid": "weight-" + j})));
      bars.appendChild(row);
    });
    root.appendChild(bars);
    var logs = d.taus.map(function (t) { return Math.log10(t); });
    var c = chart({
      title: "entropy against temperature", xs: logs, ys: d.entropy,
      xmin: logs[0], xmax: logs[logs.length - 1], ymin: 0,
      ymax: Math.ceil(d.log_n * 2) / 2,
      yticks: [0, 0.5, 1, 1.5, 2, 2.5, 3].filter(function (t) {
        return t <= Math.ceil(d.log_n * 2) / 2;
      }),
      xticks: [0.05, 0.1, 0.5, 1, 2, 5, 10, 20].map(function (t) {
        return [Math.log10(t), String(t)];
      }),
      marks: d.marks.map(function (m) { return [logs[m.index], m.label]; }),
      xlabel: "temperature \u03c4 (log scale)", ylabel: "entropy (nats)"});
    root.appendChild(c.node);
    function update() {
      var i = Number(s.input.value);
      tau.textContent = String(d.taus[i]);
      ent.textContent = fixed(d.entropy[i], digits);
      d.weights[i].forEach(function (w, j) {
        fills[j].style.width = (100 * w).toFixed(2) + "%";
        values[j].textContent = fixed(w, digits);
      });
      c.cursor(i);
    }
    s.input.addEventListener("input", update);
    s.input.addEventListener("change", update);
    update();
  }

  // 2. PE(pos) . PE(pos + k) against k, and the rotation of pair i (chapter 6).
  function positional(root, d) {
    var digits = d.decimals, half = d.d_model / 2;
    var controls = el("div", {"class": "mtx-row"});
    var pos = slider("pos-slider", d.dots.length - 1, d["default"].pos, "position pos",
                     function (i) { return "pos = " + i; });
    var off = slider("k-slider", d.dots[0].length - 1, d["default"].k, "offset k",
                     function (k) { return "k = " + k; });
    var pairs = [];
    for (var p = 0; p < half; p++) {
      pairs.push([p, "i = " + p + " (wavelength " + d.wavelengths[p] + ")"]);
    }
    var pair = select("pair-select", pairs, d["default"].i, "frequency pair");
    [pos, off, pair].forEach(function (c) { controls.appendChild(c.wrap); });
    root.appendChild(controls);
    var read = readout({"data-testid": "pe-readout"});
    function field(label, testid) {
      read.appendChild(document.createTextNode(label));
      return read.appendChild(el("span", {"data-testid": testid}));
    }
    var posText = field("pos = ", "pos"), kText = field("   k = ", "k");
    var dotText = field("   PE(pos)\u00b7PE(pos + k) = ", "dot");
    root.appendChild(read);
    var ks = d.dots[0].map(function (_, k) { return k; });
    var all = [].concat.apply([], d.dots);
    var lo = Math.min(0, Math.floor(Math.min.apply(null, all)));
    var c = chart({
      title: "dot product against offset", xs: ks, ys: d.dots[0],
      xmin: 0, xmax: ks.length - 1, ymin: lo, ymax: half,
      yticks: [lo, 0, half / 2, half].filter(function (t, j, a) {
        return a.indexOf(t) === j;
      }),
      xticks: ks.filter(function (k) { return k % 5 === 0; }).map(function (k) {
        return [k, String(k)];
      }),
      xlabel: "offset k", ylabel: "PE(pos)\u00b7PE(pos + k)"});
    root.appendChild(c.node);
    var rot = el("div", {"class": "mtx-rotation"});
    var text = rot.appendChild(el("div", {"class": "mtx-rot-text",
                                          "aria-live": "polite",
                                          "aria-atomic": "true"}));
    function vec(label, prefix) {
      var line = text.appendChild(el("div", {}, label + " [ "));
      var a = line.appendChild(el("span", {"data-testid": prefix + "0"}));
      line.appendChild(document.createTextNode(", "));
      var b = line.appendChild(el("span", {"data-testid": prefix + "1"}));
      line.appendChild(document.createTextNode(" ]"));
      return [a, b];
    }
    var title = text.appendChild(el("div", {"class": "mtx-rot-title"}));
    var from = vec("[sin, cos] at pos:", "from-");
    text.appendChild(el("div", {},
                        "times the rotation R (its entries: pair i of PE(k)):"));
    var table = text.appendChild(el("table", {"class": "mtx-matrix"}));
    var R = [[], []];
    for (var r = 0; r < 2; r++) {
      var tr = table.appendChild(el("tr"));
      for (var q = 0; q < 2; q++) {
        R[r].push(tr.appendChild(el("td", {"data-testid": "rot-" + r + q})));
      }
    }
    var to = vec("equals [sin, cos] at pos + k:", "to-");
    var circle = svg("svg", {viewBox: "-1.3 -1.3 2.6 2.6", "class": "mtx-circle",
                             role: "img", "aria-label": "the pair on the unit circle"});
    circle.appendChild(svg("circle", {cx: 0, cy: 0, r: 1, "class": "mtx-unit"}));
    circle.appendChild(svg("line", {x1: -1.2, y1: 0, x2: 1.2, y2: 0,
                                    "class": "mtx-grid"}));
    circle.appendChild(svg("line", {x1: 0, y1: -1.2, x2: 0, y2: 1.2,
                                    "class": "mtx-grid"}));
    var spokeA = circle.appendChild(svg("line", {x1: 0, y1: 0,
                                                 "class": "mtx-spoke-a"}));
    var spokeB = circle.appendChild(svg("line", {x1: 0, y1: 0,
                                                 "class": "mtx-spoke-b"}));
    var ptA = circle.appendChild(svg("circle", {r: 0.07, "class": "mtx-pt-a"}));
    var ptB = circle.appendChild(svg("circle", {r: 0.07, "class": "mtx-pt-b"}));
    rot.appendChild(circle);
    root.appendChild(rot);
    root.appendChild(el("div", {"class": "mtx-note"},
                        "Circle: the pair (cos, sin) at pos (blue) and at pos + k " +
                        "(orange); R turns one into the other, whatever pos is."));
    function update() {
      var i = Number(pos.input.value), k = Number(off.input.value);
      var j = Number(pair.input.value);
      posText.textContent = String(i);
      kText.textContent = String(k);
      dotText.textContent = fixed(d.dots[i][k], digits);
      c.setData(d.dots[i]);
      c.cursor(k);
      title.textContent = "pair i = " + j + ": columns " + 2 * j + " and " +
        (2 * j + 1);
      var a = [d.pe[i][2 * j], d.pe[i][2 * j + 1]];
      var b = [d.pe[i + k][2 * j], d.pe[i + k][2 * j + 1]];
      var sk = d.pe[k][2 * j], ck = d.pe[k][2 * j + 1];
      from[0].textContent = fixed(a[0], digits);
      from[1].textContent = fixed(a[1], digits);
      to[0].textContent = fixed(b[0], digits);
      to[1].textContent = fixed(b[1], digits);
      R[0][0].textContent = fixed(ck, digits);
      R[0][1].textContent = fixed(-sk, digits);
      R[1][0].textContent = fixed(sk, digits);
      R[1][1].textContent = fixed(ck, digits);
      [[spokeA, ptA, a], [spokeB, ptB, b]].forEach(function (t) {
        t[0].setAttribute("x2", t[2][1]);
        t[0].setAttribute("y2", -t[2][0]);
        t[1].setAttribute("cx", t[2][1]);
        t[1].setAttribute("cy", -t[2][0]);
      });
    }
    [pos.input, off.input, pair.input].forEach(function (input) {
      input.addEventListener("input", update);
      input.addEventListener("change", update);
    });
    update();
  }

  // 3. Attention maps of trained models: kind, layer, head, token (chapter 16).
  function shade(w) {   // white to dark blue, like matplotlib's "Blues": [r, g, b]
    var a = [247, 251, 255], b = [8, 48, 107];
    return a.map(function (x, j) { return Math.round(x + (b[j] - x) * w); });
  }

  // Black or white, whichever contrasts more with the colour rgb (WCAG's relative
  // luminance): on every shade the pair's contrast is then at least 4.58 to 1.
  function ink(rgb) {
    var lum = rgb.map(function (x) {
      x /= 255;
      return x <= 0.04045 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4);
    });
    var y = 0.2126 * lum[0] + 0.7152 * lum[1] + 0.0722 * lum[2];
    return 1.05 / (y + 0.05) >= (y + 0.05) / 0.05 ? "#fff" : "#000";
  }

  function attention(root, d) {
    var scale = Math.pow(10, d.decimals), def = d["default"];
    var controls = el("div", {"class": "mtx-row"});
    var model = select("model-select", d.models.map(function (m, j) {
      return [j, m.name];
    }), def.model, "model");
    var example = select("example-select", [], 0, "input");
    var kind = select("kind-select", [], def.kind, "attention");
    var layer = select("layer-select", [], 0, "layer");
    var head = select("head-select", [], 0, "head");
    [model, example, kind, layer, head].forEach(function (c) {
      controls.appendChild(c.wrap);
    });
    root.appendChild(controls);
    var grid = root.appendChild(el("div", {"class": "mtx-heat-wrap"}));
    var focus = root.appendChild(readout({"data-testid": "focus"}));
    root.appendChild(el("div", {"class": "mtx-note"},
                        "Keyboard: Tab to the map, then the arrow keys move from " +
                        "cell to cell (Home, End: first, last key of the row)."));
    var current = null, focused = -1, at = [0, 0];   // the focused query; the cell

    function options(input, opts, keep) {
      var old = keep ? input.value : null;
      input.textContent = "";
      opts.forEach(function (o) {
        input.appendChild(el("option", {value: o[0]}, o[1]));
      });
      if (old !== null && opts.some(function (o) { return String(o[0]) === old; })) {
        input.value = old;
      }
    }
    function fill(initial) {
      var m = d.models[Number(model.input.value)];
      options(example.input, m.examples.map(function (e, j) {
        return [String(j), e.label];
      }), !initial);
      var kinds = Object.keys(m.examples[0].maps);
      options(kind.input, kinds.map(function (k) { return [k, k]; }), !initial);
      if (initial && kinds.indexOf(def.kind) >= 0) kind.input.value = def.kind;
      var layers = m.examples[0].maps[kind.input.value];
      options(layer.input, layers.map(function (_, j) {
        return [String(j), String(j + 1)];
      }), !initial);
      if (initial) layer.input.value = String(def.layer);
      var heads = layers[0].heads.map(function (_, j) {
        return [String(j), String(j + 1)];
      }).concat([["mean", "mean of the heads"]]);
      options(head.input, heads, !initial);
      if (initial) head.input.value = String(def.head);
    }

    // The map is an ARIA grid: the cells are reached by Tab (one stop, the current
    // cell) and the arrow keys; each cell's label says its query, key and weight.
    // Pointing at a cell or a query, or moving the keyboard focus to a cell, shows
    // that query's row in the readout.
    function draw() {
      var m = d.models[Number(model.input.value)];
      var e = m.examples[Number(example.input.value)];
      var k = kind.input.value, axes = d.axes[k];
      var L = e.maps[k][Number(layer.input.value)];
      var w = head.input.value === "mean" ? L.mean : L.heads[Number(head.input.value)];
      var rows = e[axes[0]], cols = e[axes[1]];
      current = {w: w, rows: rows, cols: cols, cells: [], heads: [], keys: []};
      grid.textContent = "";
      var table = grid.appendChild(el("table", {
        "class": "mtx-heat", "data-testid": "heatmap", role: "grid",
        "aria-label": "attention weights, " + k + " attention, layer " +
          (Number(layer.input.value) + 1) + ", " +
          (head.input.value === "mean" ? "mean of the heads"
                                       : "head " + (Number(head.input.value) + 1)) +
          ": one row per query (" + axes[0] + "), one column per key (" +
          axes[1] + ")"}));
      var top = table.appendChild(el("tr", {role: "row"}));
      top.appendChild(el("th", {"class": "mtx-corner", role: "columnheader"},
                         "query \u2193  key \u2192"));
      cols.forEach(function (t, c) {
        current.keys.push(top.appendChild(el("th", {
          "class": "mtx-key", role: "columnheader", "data-testid": "key-" + c,
          "aria-label": "key " + (c + 1) + " (" + t + ")"}, t)));
      });
      if (at[0] >= rows.length || at[1] >= cols.length) at = [0, 0];
      rows.forEach(function (t, r) {
        var tr = table.appendChild(el("tr", {role: "row"}));
        var th = tr.appendChild(el("th", {
          "class": "mtx-query", role: "rowheader", "data-testid": "query-" + r,
          "aria-label": "query " + (r + 1) + " (" + t + ")"}, t));
        current.heads.push(th);
        var cells = [];
        cols.forEach(function (key, c) {
          var v = w[r][c] / scale, text = fixed(v, d.decimals);
          var td = tr.appendChild(el("td", {
            "data-testid": "cell-" + r + "-" + c, role: "gridcell",
            tabindex: r === at[0] && c === at[1] ? "0" : "-1",
            "aria-label": "query " + (r + 1) + " (" + t + "), key " + (c + 1) +
              " (" + key + "): weight " + text}, text));
          var bg = shade(v);
          td.style.background = "rgb(" + bg.join(",") + ")";
          td.style.color = ink(bg);
          td.addEventListener("mouseenter", function () { setFocus(r); });
          td.addEventListener("focus", function () {
            at = [r, c];
            current.cells.forEach(function (row) {
              row.forEach(function (x) { x.setAttribute("tabindex", "-1"); });
            });
            td.setAttribute("tabindex", "0");
            setFocus(r);
          });
          cells.push(td);
        });
        current.cells.push(cells);
        ["mouseenter", "click"].forEach(function (ev) {
          th.addEventListener(ev, function () { setFocus(r); });
        });
      });
      table.addEventListener("keydown", move);
      var keep = focused;
      focused = -1;
      setFocus(keep >= 0 && keep < rows.length ? keep : 0);
    }

    // Arrow keys, Home, End, Page Up and Page Down move the focus within the grid.
    function move(ev) {
      var n_q = current.rows.length, n_k = current.cols.length;
      var r = at[0], c = at[1];
      var keys = {
        ArrowUp: [r - 1, c], ArrowDown: [r + 1, c], ArrowLeft: [r, c - 1],
        ArrowRight: [r, c + 1], Home: [ev.ctrlKey ? 0 : r, 0],
        End: [ev.ctrlKey ? n_q - 1 : r, n_k - 1], PageUp: [0, c],
        PageDown: [n_q - 1, c]};
      var to = keys[ev.key];
      if (!to) return;
      ev.preventDefault();
      var row = Math.max(0, Math.min(n_q - 1, to[0]));
      current.cells[row][Math.max(0, Math.min(n_k - 1, to[1]))].focus();
    }

    function setFocus(r) {
      if (!current || r === focused) return;
      focused = r;
      current.heads.forEach(function (th, j) {
        th.classList.toggle("mtx-on", j === r);
      });
      current.cells.forEach(function (cells, j) {
        cells.forEach(function (td) { td.classList.toggle("mtx-on", j === r); });
      });
      var row = current.w[r], best = 0;
      row.forEach(function (v, c) { if (v > row[best]) best = c; });
      current.keys.forEach(function (th, c) {
        th.classList.toggle("mtx-read", row[c] >= d.highlight * scale);
        th.classList.toggle("mtx-best", c === best);
      });
      focus.textContent = "query " + (r + 1) + " (" + current.rows[r] +
        ") puts most weight, " + fixed(row[best] / scale, d.decimals) +
        ", on key " + (best + 1) + " (" + current.cols[best] + ")";
      focus.setAttribute("data-row", String(r));
      focus.setAttribute("data-best", String(best));
    }

    model.input.addEventListener("change", function () { fill(false); draw(); });
    kind.input.addEventListener("change", function () { fill(false); draw(); });
    [example.input, layer.input, head.input].forEach(function (input) {
      input.addEventListener("change", draw);
    });
    fill(true);
    draw();
  }

  var KINDS = {temperature: temperature, positional: positional, attention: attention};

  function mount(root) {
    if (!root || root.getAttribute("data-mounted") === "1") return;
    var data = JSON.parse(root.querySelector("script.mtx-data").textContent);
    var body = root.querySelector(".mtx-body");
    body.textContent = "";
    KINDS[root.getAttribute("data-kind")](body, data);
    root.setAttribute("data-mounted", "1");
  }

  return {mount: mount};
})();

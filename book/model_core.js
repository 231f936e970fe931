// What the book's two in-browser model pages share: the weights read from a page's
// data file, the transformer's building blocks on them, and two DOM helpers.
// Plain JavaScript, no library, no network.
// Part of the mini_transformer book, under the repository's licence.
//
// A page loads its data file (sizes, eps, tensors, base64 weights, written by its
// _ext module through _ext/model_page.py), then this file, then its own script,
// which calls mtModelCore.model(data, file, options) once. Each function below is
// one function of mini_transformer, in the same order of operations:
//   embed                 E[token] * sqrt(d_model) + PE(pos)          transformer.embed
//   layerNorm             gamma (x - mu) / sqrt(var + eps) + beta     layernorm
//   attend                softmax((q / sqrt(d_k)) K^T) V, per head     attention
//   feedForward           max(0, x W_1 + b_1) W_2 + b_2               feed_forward
//   tiedLogits            h E^T (the embedding tied)                  transformer
// Arithmetic is in float64 on the float32 weights.
window.mtModelCore = (function () {
  "use strict";

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function svg(tag, attrs, text) {
    var node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A page's style (css: its lines) added to the document, then its widget
  // mounted on the element #rootId, given the class cls, if the page has one.
  function startPage(css, rootId, cls, mount) {
    var style = document.createElement("style");
    style.textContent = css.join("\n");
    document.head.appendChild(style);
    var root = document.getElementById(rootId);
    if (root) {
      root.classList.add(cls);
      mount(root);
    }
  }

  // D: the page's data (d_model, n_heads, d_ff, eps, tensors, weights); file: its
  // name, for messages; options.float32Positional: PE cast to float32, as
  // positional_encoding(..., dtype) is (the translator), else kept in float64.
  function model(D, file, options) {
    options = options || {};
    var d = D.d_model, H = D.n_heads, dk = d / H, dff = D.d_ff;

    // --- the weights: float32, little-endian, base64 -> one Float32Array each --
    // (kept in float32, as stored: half the memory a step reads)
    var W = (function () {
      var bin = atob(D.weights), bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      var all = new Float32Array(bytes.buffer), out = {};
      D.tensors.forEach(function (t) {
        var n = t.shape.reduce(function (a, b) { return a * b; }, 1);
        out[t.name] = all.slice(t.offset, t.offset + n);
      });
      return out;
    })();

    function has(name) { return Object.prototype.hasOwnProperty.call(W, name); }

    function get(name) {
      if (!has(name)) throw new Error("no array " + name + " in " + file);
      return W[name];
    }

    // A matrix is kept transposed, one row per output (see linear). W_Q (h,
    // d_model, d_k) becomes one (h d_k, d_model) matrix: row h d_k + j is
    // W_Q[h][:, j], so x W is every head's projection side by side.
    function heads(a) {
      var out = new Float32Array(d * H * dk);
      for (var h = 0; h < H; h++)
        for (var i = 0; i < d; i++)
          for (var j = 0; j < dk; j++)
            out[(h * dk + j) * d + i] = a[(h * d + i) * dk + j];
      return out;
    }

    function transposed(a, nIn, nOut) {
      var out = new Float32Array(nIn * nOut);
      for (var i = 0; i < nIn; i++)
        for (var j = 0; j < nOut; j++) out[j * nIn + i] = a[i * nOut + j];
      return out;
    }

    // One multi-head attention's arrays (prefix: "decoder_layers.0.self_attn").
    function mha(prefix) {
      return {WQ: heads(get(prefix + ".W_Q")), WK: heads(get(prefix + ".W_K")),
              WV: heads(get(prefix + ".W_V")), WO: transposed(get(prefix + ".W_O"), d, d),
              bQ: get(prefix + ".b_Q"), bK: get(prefix + ".b_K"),
              bV: get(prefix + ".b_V"), bO: get(prefix + ".b_O")};
    }

    function ffn(prefix) {
      return {W1: transposed(get(prefix + ".W_1"), d, dff), b1: get(prefix + ".b_1"),
              W2: transposed(get(prefix + ".W_2"), dff, d), b2: get(prefix + ".b_2")};
    }

    function norm(prefix) {
      return {g: get(prefix + ".gamma"), b: get(prefix + ".beta")};
    }

    var E = get("embedding");

    // --- the equations --------------------------------------------------------

    // y = x W + b, x (n_in), W (n_in, n_out) given transposed: Wt (n_out, n_in),
    // so that each y_j is one dot product (the fastest loop in JavaScript).
    function linear(x, Wt, b, nOut) {
      var nIn = x.length, y = new Float64Array(nOut);
      for (var j = 0; j < nOut; j++) {
        var s = 0, row = j * nIn;
        for (var i = 0; i < nIn; i++) s += x[i] * Wt[row + i];
        y[j] = s + b[j];
      }
      return y;
    }

    function add(a, b) {
      var y = new Float64Array(a.length);
      for (var i = 0; i < a.length; i++) y[i] = a[i] + b[i];
      return y;
    }

    // LayerNorm(x) = gamma (x - mu) / sqrt(var + eps) + beta, the biased variance.
    function layerNorm(x, n) {
      var mu = 0, v = 0, i, y = new Float64Array(x.length);
      for (i = 0; i < x.length; i++) mu += x[i];
      mu /= x.length;
      for (i = 0; i < x.length; i++) v += (x[i] - mu) * (x[i] - mu);
      var s = Math.sqrt(v / x.length + D.eps);
      for (i = 0; i < x.length; i++) y[i] = n.g[i] * (x[i] - mu) / s + n.b[i];
      return y;
    }

    // FFN(x) = max(0, x W_1 + b_1) W_2 + b_2; f from ffn.
    function feedForward(x, f) {
      var hidden = linear(x, f.W1, f.b1, dff);
      for (var i = 0; i < hidden.length; i++) if (hidden[i] < 0) hidden[i] = 0;
      return linear(hidden, f.W2, f.b2, d);
    }

    // PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(same).
    var peCache = [], round = options.float32Positional ? Math.fround :
      function (x) { return x; };
    function positional(pos) {
      if (!peCache[pos]) {
        var pe = new Float64Array(d);
        for (var i = 0; i < d; i++) {
          var angle = pos / Math.pow(10000, (Math.floor(i / 2) * 2) / d);
          pe[i] = round(i % 2 === 0 ? Math.sin(angle) : Math.cos(angle));
        }
        peCache[pos] = pe;
      }
      return peCache[pos];
    }

    // Embed(token) = E[token] sqrt(d_model) + PE(pos).
    function embed(token, pos) {
      var x = new Float64Array(d), pe = positional(pos), scale = Math.sqrt(d);
      for (var i = 0; i < d; i++) x[i] = E[token * d + i] * scale + pe[i];
      return x;
    }

    // One query (h d_k) against keys and values (one h d_k vector per position):
    // head h's output is softmax((q_h / sqrt(d_k)) K_h^T) V_h. Returns the heads
    // side by side (h d_k) and the weights, one row per head.
    function attend(q, keys, values) {
      var n = keys.length, out = new Float64Array(H * dk), weights = [];
      var scale = Math.sqrt(dk), qs = new Float64Array(q.length);
      for (var i = 0; i < q.length; i++) qs[i] = q[i] / scale;      // q / sqrt(d_k) first
      for (var h = 0; h < H; h++) {
        var o = h * dk, s = new Float64Array(n), m = -Infinity, j, k;
        for (j = 0; j < n; j++) {
          var kj = keys[j], dot = 0;
          for (k = 0; k < dk; k++) dot += qs[o + k] * kj[o + k];
          s[j] = dot;
          if (dot > m) m = dot;
        }
        var z = 0;
        for (j = 0; j < n; j++) { s[j] = Math.exp(s[j] - m); z += s[j]; }
        for (j = 0; j < n; j++) {
          s[j] /= z;
          var vj = values[j];
          for (k = 0; k < dk; k++) out[o + k] += s[j] * vj[o + k];
        }
        weights.push(s);
      }
      return {out: out, weights: weights};
    }

    // The next token's logits h E^T, the output layer tied to the embedding.
    function tiedLogits(y) {
      var V = D.vocab_size, logits = new Float64Array(V);
      for (var v = 0; v < V; v++) {
        var z = 0, row = v * d;
        for (var k = 0; k < d; k++) z += y[k] * E[row + k];
        logits[v] = z;
      }
      return logits;
    }

    return {has: has, get: get, heads: heads, transposed: transposed, mha: mha,
            ffn: ffn, norm: norm, linear: linear, add: add, layerNorm: layerNorm,
            feedForward: feedForward, positional: positional, embed: embed,
            attend: attend, tiedLogits: tiedLogits};
  }

  return {model: model, el: el, svg: svg, startPage: startPage};
})();

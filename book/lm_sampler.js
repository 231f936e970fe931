// The language-model page: the help-page model that mini_transformer ships, run in
// the reader's browser, and the distribution its sampler draws from.
// Plain JavaScript, no library, no network.
// Part of the mini_transformer book, under the repository's licence.
//
// The page loads lm_data.js first (window.mtLmData, written from the package's
// pydoc_lm.npz by _ext/lm_data.py), then model_core.js (embed, layerNorm, attend
// and the other building blocks, shared with the translator page), then this file.
// Each function below is one function of mini_transformer, in the same order of
// operations:
//   step                  pre-LN decoder layers without cross-attention,
//                         one new position, key/value cache; final LN;
//                         logits h E^T (the embedding tied)             lm.language_model
//   samplingDistribution  temperature, then top-k, then top-p           sampling
//   draw                  the inverse of the cumulative distribution    sampling.draw
//   Generator             start, advance: the context window of generate lm.generate
// Arithmetic is in float64 on the float32 weights; NumPy's float32 run differs by
// rounding only (the browser test checks 1e-5 on the probabilities).
window.mtLm = (function () {
  "use strict";
  var D = window.mtLmData;
  if (!D) throw new Error("lm_data.js did not load before lm_sampler.js");
  if (!window.mtModelCore)
    throw new Error("model_core.js did not load before lm_sampler.js");
  var d = D.d_model, H = D.n_heads, dk = d / H, V = D.vocab_size;

  // The weights and the building blocks (linear, add, layerNorm, feedForward,
  // embed, attend, tiedLogits): model_core.js, shared with the translator page.
  var M = window.mtModelCore.model(D, "lm_data.js");
  var linear = M.linear, add = M.add, layerNorm = M.layerNorm, embed = M.embed,
      feedForward = M.feedForward, attend = M.attend;

  var layers = [];
  for (var l = 0; l < D.n_layers; l++) {
    var p = "decoder_layers." + l + ".";
    layers.push({attn: M.mha(p + "self_attn"), ffn: M.ffn(p + "ffn"),
                 norm1: M.norm(p + "norm1"), norm2: M.norm(p + "norm2")});
  }
  var finalNorm = M.norm("decoder_norm");

  // --- the model ----------------------------------------------------------------

  // The model on one new token at position pos; cache: per layer {keys, values},
  // the earlier positions' (extended in place). Pre-LN, no cross-attention:
  //   Y1 = Y + SelfAttn(LN1(Y)),  Y2 = Y1 + FFN(LN2(Y1)),  h = LN_f(Y2)
  // (post-LN if the data says so: Y1 = LN1(Y + SelfAttn(Y)), ...).
  // Returns the next token's logits h E^T.
  function step(token, pos, cache) {
    var y = embed(token, pos), hd = H * dk;
    layers.forEach(function (L, i) {
      var A = L.attn;
      function selfAttn(x) {
        cache[i].keys.push(linear(x, A.WK, A.bK, hd));
        cache[i].values.push(linear(x, A.WV, A.bV, hd));
        var a = attend(linear(x, A.WQ, A.bQ, hd), cache[i].keys, cache[i].values);
        return linear(a.out, A.WO, A.bO, d);
      }
      if (D.norm_first) {
        y = add(y, selfAttn(layerNorm(y, L.norm1)));
        y = add(y, feedForward(layerNorm(y, L.norm2), L.ffn));
      } else {
        y = layerNorm(add(y, selfAttn(y)), L.norm1);
        y = layerNorm(add(y, feedForward(y, L.ffn)), L.norm2);
      }
    });
    return M.tiedLogits(layerNorm(y, finalNorm));
  }

  // --- generation: the window of lm.generate ----------------------------------
  // The model reads the last `context` tokens of the prompt; when the window is
  // full, its last context / 2 tokens start a new one, at position 0 (and a new
  // cache). state: {tokens, first, cache, logits}; logits: the next token's.
  function restart(tokens, first) {
    var cache = layers.map(function () { return {keys: [], values: []}; });
    var logits = null;
    for (var t = first; t < tokens.length; t++)
      logits = step(tokens[t], t - first, cache);
    return {tokens: tokens, first: first, cache: cache, logits: logits};
  }

  function start(tokens) {
    tokens = Array.from(tokens);
    if (!tokens.length) throw new Error("prompt must hold at least one token");
    tokens.forEach(function (t) {
      if (!(Number.isInteger(t) && t >= 0 && t < V))
        throw new Error("tokens must be integers in [0, " + V + "), got " + t);
    });
    return restart(tokens, Math.max(0, tokens.length - D.context));
  }

  function advance(state, token) {
    var tokens = state.tokens.concat([token]);
    if (tokens.length - state.first > D.context)
      return restart(tokens, tokens.length - Math.floor(D.context / 2));
    var cache = state.cache.map(function (c) {      // the old state stays as it was
      return {keys: c.keys.slice(), values: c.values.slice()};
    });
    return {tokens: tokens, first: state.first, cache: cache,
            logits: step(token, tokens.length - 1 - state.first, cache)};
  }

  // --- sampling (mini_transformer.sampling) -----------------------------------

  // (tau, k, p) checked as check_settings does, with its messages.
  function checkSettings(temperature, topK, topP) {
    if (typeof temperature !== "number")
      throw new Error("temperature must be a real number >= 0, got " + temperature);
    if (isNaN(temperature) || temperature < 0)
      throw new Error("temperature must be >= 0 (0 is greedy), got " + temperature);
    if (topK !== null && topK !== undefined &&
        !(Number.isInteger(topK) && topK >= 1))
      throw new Error("top_k must be an integer >= 1 or None, got " + topK);
    if (topP !== null && topP !== undefined) {
      if (typeof topP !== "number" || isNaN(topP))
        throw new Error("top_p must be a number in (0, 1] or None, got " + topP);
      if (!(topP > 0 && topP <= 1))
        throw new Error("top_p must be in (0, 1] (the mass kept), got " + topP);
    }
    return {temperature: temperature, topK: topK === undefined ? null : topK,
            topP: topP === undefined ? null : topP};
  }

  // Token ids, most probable first; equal probabilities: the smaller id first
  // (a stable sort of -p, as argsort(-p, stable=True)).
  function order(p) {
    var ids = [];
    for (var i = 0; i < p.length; i++) ids.push(i);
    return ids.sort(function (a, b) { return p[b] - p[a] || a - b; });
  }

  function renormalise(p, keep) {
    var kept = new Float64Array(p.length), z = 0, i;
    for (i = 0; i < p.length; i++) if (keep[i]) { kept[i] = p[i]; z += p[i]; }
    for (i = 0; i < p.length; i++) kept[i] /= z;
    return kept;
  }

  // The probabilities a sampler draws the next token from (sampling_distribution):
  // p = softmax(o / tau); tau = 0: one-hot on the largest logit (the smallest id
  // among equal ones); then top-k keeps the k most probable, then top-p the
  // smallest set of most probable tokens whose mass reaches p (at least one),
  // each renormalised.
  function samplingDistribution(logits, temperature, topK, topP) {
    var s = checkSettings(temperature === undefined ? 1 : temperature, topK, topP);
    var n = logits.length, i, m = -Infinity;
    if (!n) throw new Error("logits must hold at least one score");
    for (i = 0; i < n; i++) {
      if (isNaN(logits[i]))
        throw new Error("logits hold NaN: no distribution to sample from");
      if (logits[i] === Infinity)
        throw new Error("logits hold +inf: no distribution to sample from");
      if (logits[i] > m) m = logits[i];
    }
    if (m === -Infinity)
      throw new Error("every logit of a row is -inf: no token can be drawn");
    var p = new Float64Array(n);
    if (s.temperature === 0) {
      for (i = 0; i < n; i++) if (logits[i] === m) { p[i] = 1; break; }
      return p;
    }
    var x = new Float64Array(n);                     // o / tau
    for (i = 0; i < n; i++)
      x[i] = s.temperature === Infinity ? (isFinite(logits[i]) ? 0 : logits[i]) :
        s.temperature === 1 ? logits[i] : logits[i] / s.temperature;
    var mx = -Infinity, z = 0;
    for (i = 0; i < n; i++) if (x[i] > mx) mx = x[i];
    for (i = 0; i < n; i++) { p[i] = Math.exp(x[i] - mx); z += p[i]; }
    for (i = 0; i < n; i++) p[i] /= z;
    var ranked, keep;
    if (s.topK !== null && s.topK < n) {
      ranked = order(p);
      keep = new Uint8Array(n);
      for (i = 0; i < s.topK; i++) keep[ranked[i]] = 1;
      p = renormalise(p, keep);
    }
    if (s.topP !== null && s.topP < 1) {
      ranked = order(p);
      keep = new Uint8Array(n);
      var cumulative = 0;
      for (i = 0; i < n; i++) {
        var q = p[ranked[i]];
        cumulative += q;
        if (cumulative - q < s.topP) keep[ranked[i]] = 1;  // the mass ranked above
      }
      p = renormalise(p, keep);
    }
    return p;
  }

  // One token drawn from probs with u uniform in [0, 1): the first id whose
  // cumulative mass exceeds u * total; never a token of zero probability.
  function draw(probs, u) {
    var cdf = 0, total = 0, i, last = 0, count = 0;
    for (i = 0; i < probs.length; i++) { total += probs[i]; if (probs[i] > 0) last = i; }
    var target = u * total;
    for (i = 0; i < probs.length; i++) {
      cdf += probs[i];
      if (cdf <= target) count++;
    }
    return Math.min(count, last);
  }

  function argmax(p) {
    var best = 0;
    for (var i = 1; i < p.length; i++) if (p[i] > p[best]) best = i;
    return best;
  }

  // The page's own random numbers: mulberry32, a small 32-bit generator, two
  // outputs making one double in [0, 1) with 53 random bits. Seeded by the page;
  // NumPy's generator is another one, so the same seed draws other bytes.
  function Random(seed) {
    var a = seed >>> 0;
    function next32() {
      a = (a + 0x6D2B79F5) >>> 0;
      var t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0);
    }
    this.random = function () {
      var hi = next32() >>> 5, lo = next32() >>> 6;        // 27 + 26 bits
      return (hi * 67108864 + lo) / 9007199254740992;
    };
  }

  // --- bytes and text -----------------------------------------------------------

  function encode(text) { return Array.from(new TextEncoder().encode(text)); }
  function decode(tokens) {
    return new TextDecoder("utf-8").decode(new Uint8Array(tokens));
  }

  // A byte as a reader can see it: a space as the open box, the line break as \n.
  function showByte(b) {
    if (b === 32) return "\u2423";
    if (b === 10) return "\\n";
    if (b === 9) return "\\t";
    if (b === 13) return "\\r";
    if (b < 32 || b === 127) return "\\x" + (b < 16 ? "0" : "") + b.toString(16);
    if (b < 128) return String.fromCharCode(b);
    return "0x" + b.toString(16).toUpperCase();
  }

  // The prompt's tokens as generate reads them on the command line: a help
  // page's context first (the separator), then the prompt's UTF-8 bytes.
  function promptTokens(text) { return encode(D.separator + text); }

  // Continue a text: opts {temperature, topK, topP, seed}; as lm.generate with the
  // model's context, but the draws come from the page's generator.
  function generate(text, n, opts) {
    opts = opts || {};
    var t = opts.temperature === undefined ? 1 : opts.temperature;
    checkSettings(t, opts.topK, opts.topP);
    var rng = new Random(opts.seed === undefined ? 0 : opts.seed);
    var state = start(promptTokens(text)), prompt = state.tokens.length;
    for (var i = 0; i < n; i++) {
      var probs = samplingDistribution(state.logits, t, opts.topK, opts.topP);
      var token = t === 0 ? argmax(probs) : draw(probs, rng.random());
      state = advance(state, token);
    }
    return {tokens: state.tokens, text: decode(state.tokens.slice(prompt)),
            newTokens: state.tokens.slice(prompt)};
  }

  return {
    data: D, start: start, advance: advance, step: step,
    samplingDistribution: samplingDistribution, checkSettings: checkSettings,
    draw: draw, argmax: argmax, Random: Random, encode: encode, decode: decode,
    showByte: showByte, promptTokens: promptTokens, generate: generate, order: order,
    // the next token's logits after a text (the separator first), as the page reads it
    logits: function (text) { return Array.from(start(promptTokens(text)).logits); }
  };
})();

// --- the page -------------------------------------------------------------------
// Controls are native inputs and buttons with labels (keyboard and screen reader);
// the readout is an aria-live region. A bad value in any control gets a message in
// the readout, and the buttons wait until it is fixed.
window.mtLm.mount = function (root) {
  "use strict";
  var M = window.mtLm, D = M.data, V = D.vocab_size;
  var SHOWN = 20, MAX_CHARS = 10000, MAX_BYTES = 500, MAX_SEED = 4294967295;
  var DEFAULT_PROMPT = "Numeric literals\n****************\n\nThere are three";

  var el = window.mtModelCore.el, svg = window.mtModelCore.svg;
  function quote(b) { return "\u2018" + M.showByte(b) + "\u2019"; }

  // Controls.
  var form = root.appendChild(el("form", {"class": "mtl-controls",
                                          "aria-label": "sampler controls"}));
  var row0 = form.appendChild(el("div", {"class": "mtl-row"}));
  row0.appendChild(el("label", {"for": "mtl-prompt", "class": "mtl-label"},
                      "Text to continue (the model reads it as the start of a help page)"));
  var prompt = row0.appendChild(el("textarea", {id: "mtl-prompt", rows: "4",
    "class": "mtl-prompt", "data-testid": "prompt", spellcheck: "false",
    "aria-describedby": "mtl-readout"}));
  prompt.value = DEFAULT_PROMPT;
  var row1 = form.appendChild(el("div", {"class": "mtl-row"}));
  function field(label, testid, value, hint) {
    var wrap = row1.appendChild(el("label", {"class": "mtl-control"}, label + " "));
    var input = wrap.appendChild(el("input", {type: "text", inputmode: "decimal",
      "class": "mtl-number", "data-testid": testid, autocomplete: "off",
      spellcheck: "false", "aria-describedby": "mtl-readout"}));
    input.value = value;
    if (hint) input.setAttribute("placeholder", hint);
    return input;
  }
  var temperature = field("temperature \u03c4", "temperature", "1");
  var topK = field("top-k", "top-k", "", "all");
  var topP = field("top-p", "top-p", "", "1");
  var seed = field("seed", "seed", "0");
  var count = field("bytes", "count", "100");
  var row2 = form.appendChild(el("div", {"class": "mtl-row"}));
  var next = row2.appendChild(el("button", {type: "button", "data-testid": "next"},
                                 "Next byte"));
  var gen = row2.appendChild(el("button", {type: "submit", "data-testid": "generate"},
                                "Generate"));
  var again = row2.appendChild(el("button", {type: "button", "data-testid": "reset"},
                                  "Start again"));
  var readout = root.appendChild(el("p", {id: "mtl-readout", "class": "mtl-readout",
    "aria-live": "polite", "data-testid": "readout"}));
  var textBox = root.appendChild(el("pre", {"class": "mtl-text",
                                            "data-testid": "text"}));
  var chartBox = root.appendChild(el("div", {"class": "mtl-chart-box"}));

  // Reading the controls: {value} or {error}; the rules of check_settings, and the
  // page's own limits on the seed, the length and the text.
  var NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i;
  function read(input, what, rule, empty) {
    var s = input.value.trim();
    if (s === "") return empty !== undefined ? {value: empty} :
      {error: what + " is empty: it must be " + rule};
    if (!NUMBER.test(s)) return {error: what + " must be " + rule +
                                 ", got \u201c" + s + "\u201d"};
    return {value: Number(s), text: s};
  }
  function settings() {
    var out = {}, r, rules = [
      ["temperature", temperature, "the temperature \u03c4",
       "a number \u2265 0 (0 is greedy)", undefined,
       function (v) { return v >= 0 && isFinite(v); }],
      ["topK", topK, "top-k", "a whole number \u2265 1 (empty: all " + V + " bytes)",
       null, function (v) { return Number.isInteger(v) && v >= 1; }],
      ["topP", topP, "top-p", "a number in (0, 1], the mass kept (empty: 1)",
       null, function (v) { return v > 0 && v <= 1; }],
      ["seed", seed, "the seed", "a whole number from 0 to " +
       MAX_SEED.toLocaleString("en"), undefined,
       function (v) { return Number.isInteger(v) && v >= 0 && v <= MAX_SEED; }],
      ["count", count, "the number of bytes", "a whole number from 1 to " +
       MAX_BYTES.toLocaleString("en"), undefined,
       function (v) { return Number.isInteger(v) && v >= 1 && v <= MAX_BYTES; }]];
    for (var i = 0; i < rules.length; i++) {
      var x = rules[i];
      r = read(x[1], x[2], x[3], x[4]);
      if (!r.error && r.value !== null && !x[5](r.value))
        r = {error: x[2] + " must be " + x[3] + ", got " + r.text};
      if (r.error) return {error: r.error, kind: x[0]};
      out[x[0]] = r.value;
    }
    var chars = Array.from(prompt.value).length;
    if (chars > MAX_CHARS)
      return {kind: "prompt", error: "the text has " + chars.toLocaleString("en") +
              " characters, more than the " + MAX_CHARS.toLocaleString("en") +
              " the page takes (the model reads only its last " + D.context +
              " bytes)"};
    return out;
  }

  // The page's state: the model's window (start / advance), the bytes drawn so
  // far and the generator, restarted from the seed with the text.
  var state = null, promptLength = 0, rng = null, current = null, lastDraw = null;
  var startedWith = null;

  function restart(s) {
    state = M.start(M.promptTokens(prompt.value));
    promptLength = state.tokens.length;
    rng = new M.Random(s.seed);
    startedWith = {prompt: prompt.value, seed: s.seed};
    lastDraw = null;
  }

  var inputs = {prompt: prompt, temperature: temperature, topK: topK, topP: topP,
                seed: seed, count: count};
  function mark(kind) {                 // the field a message is about, for readers
    Object.keys(inputs).forEach(function (k) {
      if (k === kind) inputs[k].setAttribute("aria-invalid", "true");
      else inputs[k].removeAttribute("aria-invalid");
    });
  }

  function fail(s) {
    current = null;
    mark(s.kind);
    readout.className = "mtl-readout mtl-error";
    readout.setAttribute("data-kind", s.kind);
    readout.textContent = s.error;
    [next, gen].forEach(function (b) { b.disabled = true; });
    chartBox.textContent = "";
  }

  // Redraw: the distribution of the next byte under the current settings.
  function show() {
    var s = settings();
    if (s.error) return fail(s);
    if (!state || startedWith.prompt !== prompt.value || startedWith.seed !== s.seed)
      restart(s);
    [next, gen].forEach(function (b) { b.disabled = false; });
    mark(null);
    gen.textContent = "Generate " + s.count + (s.count === 1 ? " byte" : " bytes");
    var probs = M.samplingDistribution(state.logits, s.temperature, s.topK, s.topP);
    var before = s.temperature === 0 ? probs :
      M.samplingDistribution(state.logits, s.temperature, null, null);
    current = {settings: s, probs: probs, before: before, logits: state.logits};
    readout.className = "mtl-readout";
    readout.removeAttribute("data-kind");
    var added = state.tokens.length - promptLength, kept = 0, best = M.argmax(probs);
    for (var i = 0; i < V; i++) if (probs[i] > 0) kept++;
    readout.textContent = (lastDraw ? lastDraw + " " : "") + "Next byte: the sampler " +
      "draws from " + kept + " of the " + V + " bytes; the most probable is " +
      quote(best) + " (" + probs[best].toFixed(4) + "). " + added +
      (added === 1 ? " byte" : " bytes") + " added so far.";
    textBox.textContent = "";
    textBox.appendChild(el("span", {"class": "mtl-given"}, prompt.value));
    textBox.appendChild(el("span", {"class": "mtl-new", "data-testid": "new"},
                           M.decode(state.tokens.slice(promptLength))));
    drawChart();
  }

  function drawChart() {
    var c = current, ranked = M.order(c.logits).slice(0, SHOWN);
    var top = 26, rowH = 22, left = 50, barW = 250, width = left + barW + 120;
    var height = top + rowH * ranked.length + 6, scale = 0;
    ranked.forEach(function (b) { scale = Math.max(scale, c.probs[b], c.before[b]); });
    var kept = 0, mass = 0, shownMass = 0;
    for (var i = 0; i < V; i++) if (c.probs[i] > 0) { kept++; mass += c.before[i]; }
    ranked.forEach(function (b) { shownMass += c.probs[b]; });
    var fig = svg("svg", {viewBox: "0 0 " + width + " " + height, width: String(width),
      "class": "mtl-chart", role: "img", "data-testid": "chart",
      "aria-label": "The next byte's distribution, the " + ranked.length +
        " most probable bytes: " + ranked.map(function (b) {
          return M.showByte(b) + " " + (c.probs[b] > 0 ? c.probs[b].toFixed(4) :
                                        "cut"); }).join(", ") + "."});
    fig.appendChild(svg("text", {x: 4, y: 16, "class": "mtl-axis"}, "byte"));
    fig.appendChild(svg("text", {x: left, y: 16, "class": "mtl-axis"},
                        "solid: drawn from; pale: softmax(o/\u03c4)"));
    ranked.forEach(function (b, r) {
      var y = top + r * rowH, p = c.probs[b], q = c.before[b];
      var g = fig.appendChild(svg("g", {"data-byte": String(b),
        "data-prob": String(p), "data-kept": p > 0 ? "1" : "0",
        "class": p > 0 ? "mtl-kept" : "mtl-cut"}));
      g.appendChild(svg("text", {x: 4, y: y + 15, "class": "mtl-byte"},
                        M.showByte(b)));
      if (p > 0) g.appendChild(svg("rect", {x: left, y: y + 3, height: 11,
        width: (barW * p / scale).toFixed(2), "class": "mtl-bar"}));
      g.appendChild(svg("rect", {x: left, y: y + (p > 0 ? 15 : 3),
        height: p > 0 ? 4 : 15, width: (barW * q / scale).toFixed(2),
        "class": "mtl-bar-before"}));
      g.appendChild(svg("text", {x: left + barW + 8, y: y + 15,
        "class": "mtl-prob"}, p > 0 ? p.toFixed(4) : "cut (" + q.toFixed(4) + ")"));
    });
    chartBox.textContent = "";
    chartBox.appendChild(el("div", {"class": "mtl-chart-wrap"})).appendChild(fig);
    var s = c.settings, how = s.temperature === 0 ? "\u03c4 = 0 is greedy: all the " +
      "mass on the largest score" : "softmax(o/\u03c4) with \u03c4 = " +
      s.temperature + (s.topK !== null ? ", then top-k = " + s.topK : "") +
      (s.topP !== null ? ", then top-p = " + s.topP : "");
    chartBox.appendChild(el("p", {"class": "mtl-caption", "data-testid": "kept"},
      "Kept: " + kept + " of " + V + " bytes (" + how + "), " +
      (s.temperature === 0 ? "" : "which held " + mass.toFixed(4) +
       " of softmax(o/\u03c4) before the cut; ") + "the " + ranked.length +
      " bytes with the largest scores, drawn here, hold " + shownMass.toFixed(4) +
      " of what the sampler draws from. A solid bar is a kept byte's " +
      "probability, renormalised, the pale bar under it its probability before " +
      "the cut; \u201ccut\u201d marks a byte top-k or top-p removed."));
  }

  function once(s) {
    var probs = M.samplingDistribution(state.logits, s.temperature, s.topK, s.topP);
    var token, u = null;
    if (s.temperature === 0) token = M.argmax(probs);
    else { u = rng.random(); token = M.draw(probs, u); }
    lastDraw = "Drew " + quote(token) + " (probability " + probs[token].toFixed(4) +
      (u === null ? ", the most probable" : ", u = " + u.toFixed(4)) + ").";
    state = M.advance(state, token);
  }

  function run(n) {
    var s = settings();
    if (s.error) return fail(s);
    if (!state || startedWith.prompt !== prompt.value || startedWith.seed !== s.seed)
      restart(s);
    for (var i = 0; i < (n === undefined ? s.count : n); i++) once(s);
    if (n === undefined && s.count > 1) lastDraw = "Drew " + s.count + " bytes.";
    show();
  }

  form.addEventListener("submit", function (e) { e.preventDefault(); run(); });
  next.addEventListener("click", function () { run(1); });
  again.addEventListener("click", function () { state = null; show(); });
  [prompt, temperature, topK, topP, seed, count].forEach(function (i) {
    i.addEventListener("input", show);
  });

  // For the console and the test: the distribution on the page now.
  M.page = {
    distribution: function () { return current && Array.from(current.probs); },
    tokens: function () { return state && state.tokens.slice(); },
    added: function () { return state && state.tokens.slice(promptLength); },
    settings: function () { return current && current.settings; }
  };
  show();
  root.setAttribute("data-mounted", "1");
};

(function () {
  "use strict";
  var css = [
    ".mtl { margin: 1rem 0 1.5rem; }",
    ".mtl-row { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: center;",
    "  margin: 0.4rem 0; }",
    ".mtl-label { font-weight: 600; flex-basis: 100%; }",
    ".mtl-prompt { flex: 1 1 100%; min-width: 0; max-width: 100%;",
    "  font-family: var(--pst-font-family-monospace, monospace); font-size: 0.9rem;",
    "  padding: 0.3rem 0.5rem; }",
    ".mtl-number { width: 6rem; }",
    ".mtl-control { display: inline-flex; align-items: center; gap: 0.4rem; }",
    ".mtl button { padding: 0.2rem 0.6rem; border: 1px solid currentColor;",
    "  border-radius: 0.25rem; background: transparent; color: inherit;",
    "  cursor: pointer; }",
    ".mtl button:disabled { opacity: 0.4; cursor: default; }",
    ".mtl button:focus-visible, .mtl input:focus-visible,",
    ".mtl textarea:focus-visible { outline: 3px solid #d97706; outline-offset: 2px; }",
    ".mtl-readout { margin: 0.6rem 0; padding: 0.5rem 0.75rem;",
    "  border-left: 4px solid #2563eb;",
    "  background: rgba(37, 99, 235, 0.07); overflow-wrap: anywhere; }",
    ".mtl-readout.mtl-error { border-left-color: #b91c1c;",
    "  background: rgba(185, 28, 28, 0.08); }",
    ".mtl-text { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 24rem;",
    "  overflow-y: auto; }",
    ".mtl-new { background: rgba(22, 163, 74, 0.18); }",
    ".mtl-chart-wrap { max-width: 100%; }",
    ".mtl-chart { max-width: 100%; height: auto; }",
    ".mtl-axis, .mtl-byte, .mtl-prob { font-size: 13px; fill: currentColor; }",
    ".mtl-byte { font-family: var(--pst-font-family-monospace, monospace); }",
    ".mtl-bar { fill: #2563eb; }",
    ".mtl-bar-before { fill: rgba(37, 99, 235, 0.35); }",
    ".mtl-cut .mtl-bar-before { stroke: currentColor; stroke-dasharray: 3 2;",
    "  stroke-width: 0.8; }",
    ".mtl-cut .mtl-byte, .mtl-cut .mtl-prob { font-style: italic; }",
    ".mtl-caption { font-size: 0.85rem; }"
  ];
  window.mtModelCore.startPage(css, "mtl-root", "mtl", window.mtLm.mount);
})();

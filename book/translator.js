// The translator page: the committed English-to-German number model, run in the
// reader's browser. Plain JavaScript, no library, no network.
// Part of the mini_transformer book, under the repository's licence.
//
// The page loads translator_data.js first (window.mtTranslatorData, written from
// book/data by _ext/translator_data.py), then model_core.js (embed, layerNorm,
// attend and the other building blocks, shared with the language-model page), then
// this file. Each function below is one function of mini_transformer, in the same
// order of operations:
//   encoderLayer          post-LN: LN(x + MultiHead(x)), LN(x + FFN(x)) encoder
//   decoderStep           post-LN, one new position, key/value cache  decoder
//   greedy, beamSearch    greedy_decode, beam_search (fairseq's rule) transformer, beam
// Arithmetic is in float64 on the float32 weights; NumPy's float32 run differs by
// rounding only (the browser test checks 1e-4).
window.mtTranslator = (function () {
  "use strict";
  var D = window.mtTranslatorData;
  if (!D) throw new Error("translator_data.js did not load before translator.js");
  if (!window.mtModelCore)
    throw new Error("model_core.js did not load before translator.js");
  var d = D.d_model, H = D.n_heads, dk = d / H, V = D.vocab_size, EOW = "</w>";
  // the held-out numbers (development and test), from the gaps between them
  var HELD_OUT = [], held = 0;
  D.held_out_gaps.forEach(function (g) { held += g; HELD_OUT.push(held); });

  // The weights and the building blocks (linear, add, layerNorm, feedForward,
  // embed, attend, tiedLogits): model_core.js, shared with the language-model page.
  var M = window.mtModelCore.model(D, "translator_data.js", {float32Positional: true});
  var linear = M.linear, add = M.add, layerNorm = M.layerNorm, embed = M.embed,
      feedForward = M.feedForward, attend = M.attend;

  function norms(prefix, n) {
    var out = [];
    for (var i = 1; i <= n; i++) out.push(M.norm(prefix + ".norm" + i));
    return out;
  }

  var enc = [], dec = [];
  for (var l = 0; l < D.n_encoder_layers; l++) {
    var p = "encoder_layers." + l;
    enc.push({attn: M.mha(p + ".attn"), ffn: M.ffn(p + ".ffn"), norm: norms(p, 2)});
  }
  for (l = 0; l < D.n_decoder_layers; l++) {
    p = "decoder_layers." + l;
    dec.push({self: M.mha(p + ".self_attn"), cross: M.mha(p + ".cross_attn"),
              ffn: M.ffn(p + ".ffn"), norm: norms(p, 3)});
  }
  var finalNorm = M.has("decoder_norm.gamma") ? M.norm("decoder_norm") : null;
  var encNorm = M.has("encoder_norm.gamma") ? M.norm("encoder_norm") : null;

  // --- the layers -------------------------------------------------------------

  // Post-LN encoder layer: X' = LN(X + MultiHead(X)), X'' = LN(X' + FFN(X')).
  function encoderLayer(X, L) {
    var a = L.attn, hd = H * dk;
    var Q = X.map(function (x) { return linear(x, a.WQ, a.bQ, hd); });
    var K = X.map(function (x) { return linear(x, a.WK, a.bK, hd); });
    var Vs = X.map(function (x) { return linear(x, a.WV, a.bV, hd); });
    var X1 = X.map(function (x, i) {
      var heads = attend(Q[i], K, Vs).out;
      return layerNorm(add(x, linear(heads, a.WO, a.bO, d)), L.norm[0]);
    });
    return X1.map(function (x) {
      return layerNorm(add(x, feedForward(x, L.ffn)), L.norm[1]);
    });
  }

  // memory = Encoder(Embed(src)): one vector per source position.
  function encode(ids) {
    var X = ids.map(function (t, i) { return embed(t, i); });
    enc.forEach(function (L) { X = encoderLayer(X, L); });
    return encNorm ? X.map(function (x) { return layerNorm(x, encNorm); }) : X;
  }

  // The cross-attention's keys and values of the memory, once per decoder layer.
  function memoryKV(memory) {
    return dec.map(function (L) {
      var c = L.cross, hd = H * dk;
      return {keys: memory.map(function (m) { return linear(m, c.WK, c.bK, hd); }),
              values: memory.map(function (m) { return linear(m, c.WV, c.bV, hd); })};
    });
  }

  // The decoder on the newest position only. cache: per layer {keys, values}, the
  // earlier positions' self-attention keys and values (never changed: a step
  // returns new lists, so hypotheses of a beam may share their past).
  // Post-LN: Y1 = LN(Y + SelfAttn(Y)), Y2 = LN(Y1 + CrossAttn(Y1, mem)),
  // Y3 = LN(Y2 + FFN(Y2)). Returns the next token's logits h E^T, the new cache and
  // the cross-attention weights (per layer, per head, over the source).
  function decoderStep(token, pos, cache, memKV) {
    var y = embed(token, pos), next = [], cross = [], hd = H * dk;
    dec.forEach(function (L, i) {
      var s = L.self, c = L.cross;
      var keys = cache[i].keys.concat([linear(y, s.WK, s.bK, hd)]);
      var values = cache[i].values.concat([linear(y, s.WV, s.bV, hd)]);
      next.push({keys: keys, values: values});
      var a = attend(linear(y, s.WQ, s.bQ, hd), keys, values);
      var y1 = layerNorm(add(y, linear(a.out, s.WO, s.bO, d)), L.norm[0]);
      var b = attend(linear(y1, c.WQ, c.bQ, hd), memKV[i].keys, memKV[i].values);
      cross.push(b.weights);
      var y2 = layerNorm(add(y1, linear(b.out, c.WO, c.bO, d)), L.norm[1]);
      y = layerNorm(add(y2, feedForward(y2, L.ffn)), L.norm[2]);
    });
    if (finalNorm) y = layerNorm(y, finalNorm);
    return {logits: M.tiedLogits(y), cache: next, cross: cross};
  }

  function emptyCache() {
    return dec.map(function () { return {keys: [], values: []}; });
  }

  // log softmax(logits) = logits - logsumexp(logits).
  function logSoftmax(logits) {
    var m = -Infinity, i, z = 0, out = new Float64Array(logits.length);
    for (i = 0; i < logits.length; i++) if (logits[i] > m) m = logits[i];
    for (i = 0; i < logits.length; i++) z += Math.exp(logits[i] - m);
    var lse = m + Math.log(z);
    for (i = 0; i < logits.length; i++) out[i] = logits[i] - lse;
    return out;
  }

  // lp(Y) = ((5 + |Y|) / 6)^alpha (Wu et al., 2016), |Y| counting EOS, not BOS.
  function lengthPenalty(n, alpha) { return Math.pow((5 + n) / 6, alpha); }

  // Greedy decoding: the most likely next token until EOS or max_len tokens
  // (BOS included), as greedy_decode.
  function greedy(src, maxLen) {
    var mem = memoryKV(encode(src)), cache = emptyCache(), tokens = [D.bos_id];
    var logP = 0, cross = [], logits = [];
    for (var t = 0; t < maxLen - 1; t++) {
      var step = decoderStep(tokens[t], t, cache, mem);
      cache = step.cache;
      var best = 0;
      for (var v = 1; v < V; v++) if (step.logits[v] > step.logits[best]) best = v;
      logP += logSoftmax(step.logits)[best];
      logits.push(step.logits);
      cross.push(step.cross);
      tokens.push(best);
      if (best === D.eos_id) break;
    }
    return {tokens: tokens, logP: logP, cross: cross, logits: logits};
  }

  // Beam search as mini_transformer.beam_search, for one source, with a record of
  // every step. Each step extends every live hypothesis by every token; of the
  // 2K most probable extensions (by log P, ties to the earlier row and token), an
  // EOS among the first K finishes its hypothesis, with score log P / lp(|Y|), and
  // the first K that are not EOS stay live. The search stops at max_len tokens
  // (live hypotheses then finish without EOS), or when the best finished score is
  // at least the best live log P / lp(max_len - 1): no live one can still win.
  function beamSearch(src, K, alpha, maxLen) {
    var mem = memoryKV(encode(src)), steps = [];
    var live = [{tokens: [D.bos_id], logP: 0, cache: emptyCache(), cross: []}];
    var best = null, lpMax = lengthPenalty(maxLen - 1, alpha), stop = null;
    if (maxLen === 1) best = {tokens: [D.bos_id], logP: 0, score: 0, cross: []};
    for (var t = 0; t < maxLen - 1 && !stop; t++) {
      var n = t + 1, top = [];                          // the 2K best, sorted
      var outs = live.map(function (hyp) {
        return decoderStep(hyp.tokens[t], t, hyp.cache, mem);
      });
      live.forEach(function (hyp, r) {
        var lp = logSoftmax(outs[r].logits);
        for (var v = 0; v < V; v++) {
          var c = hyp.logP + lp[v];
          if (top.length === 2 * K && !(c > top[top.length - 1].logP)) continue;
          var i = top.length;
          while (i > 0 && c > top[i - 1].logP) i--;       // after equal ones: stable
          top.splice(i, 0, {row: r, token: v, logP: c});
          if (top.length > 2 * K) top.pop();
        }
      });
      var finished = [], next = [];
      top.forEach(function (c, i) {
        c.eos = c.token === D.eos_id;
        if (c.eos && i < K) {
          c.score = c.logP / lengthPenalty(n, alpha);
          finished.push(c);
        } else if (!c.eos && next.length < K) {
          next.push(c);
          c.live = true;
        }
      });
      var record = {t: t, n: n, live: live.map(function (h) {
        return {tokens: h.tokens.slice(), logP: h.logP}; }), candidates: top,
        finished: [], bestChanged: false};
      function consider(list, withToken) {
        var pick = null;
        list.forEach(function (c) {
          if (pick === null || c.score > pick.score) pick = c;
        });
        if (pick !== null && (best === null || pick.score > best.score)) {
          var parent = live[pick.row];
          best = {tokens: withToken ? parent.tokens.concat([pick.token]) : pick.tokens,
                  logP: pick.logP, score: pick.score,
                  cross: withToken ? parent.cross.concat([outs[pick.row].cross])
                                   : pick.cross};
          record.bestChanged = true;
        }
      }
      consider(finished, true);
      record.finished = finished.map(function (c) {
        return {tokens: live[c.row].tokens.concat([c.token]), logP: c.logP,
                score: c.score};
      });
      live = next.map(function (c) {
        var parent = live[c.row];
        return {tokens: parent.tokens.concat([c.token]), logP: c.logP,
                cache: outs[c.row].cache,
                cross: parent.cross.concat([outs[c.row].cross])};
      });
      if (t === maxLen - 2) {
        var ends = live.map(function (h) {
          return {tokens: h.tokens, logP: h.logP, cross: h.cross,
                  score: h.logP / lengthPenalty(n, alpha)};
        });
        consider(ends, false);
        record.finished = record.finished.concat(ends.map(function (h) {
          return {tokens: h.tokens, logP: h.logP, score: h.score, noEos: true}; }));
        stop = "out of room: " + maxLen + " tokens (BOS included) is the longest " +
          "output allowed (source length + 50), so the live hypotheses finish " +
          "without EOS";
      } else {
        var m = -Infinity;
        live.forEach(function (h) { if (h.logP > m) m = h.logP; });
        record.bound = m / lpMax;
        if (best !== null && best.score >= record.bound) {
          stop = "no live hypothesis can still win: the best finished score " +
            fmt(best.score) + " \u2265 " + fmt(record.bound) +
            ", the best live log P " +
            "divided by lp(" + (maxLen - 1) + "), the most any of them could score";
        }
      }
      record.best = best && {tokens: best.tokens, logP: best.logP, score: best.score};
      record.next = live.map(function (h) { return {tokens: h.tokens, logP: h.logP}; });
      record.stop = stop;
      steps.push(record);
    }
    return {tokens: best.tokens, logP: best.logP, score: best.score, cross: best.cross,
            steps: steps};
  }

  // --- BPE (mini_transformer.BPE) ----------------------------------------------

  var ids = {}, rank = {};
  D.vocab.forEach(function (s, i) { ids[s] = i; });
  D.merges.forEach(function (m, i) { rank[m[0] + "\u0000" + m[1]] = i; });

  // A word's symbols: its characters, the last one marked with </w>; then the
  // merges, the earliest learned first, each applied left to right.
  function encodeWord(word) {
    var chars = Array.from(word);
    var symbols = chars.slice(0, -1).concat([chars[chars.length - 1] + EOW]);
    while (symbols.length > 1) {
      var bestRank = Infinity, pair = null;
      for (var i = 0; i + 1 < symbols.length; i++) {
        var r = rank[symbols[i] + "\u0000" + symbols[i + 1]];
        if (r !== undefined && r < bestRank) {
          bestRank = r;
          pair = [symbols[i], symbols[i + 1]];
        }
      }
      if (pair === null) break;
      var out = [];
      for (i = 0; i < symbols.length; i++) {
        if (i + 1 < symbols.length && symbols[i] === pair[0] &&
            symbols[i + 1] === pair[1]) {
          out.push(pair[0] + pair[1]);
          i++;
        } else out.push(symbols[i]);
      }
      symbols = out;
    }
    return symbols;
  }

  function bpeEncode(text) {
    var out = [];
    text.split(" ").forEach(function (w) {
      encodeWord(w).forEach(function (s) { out.push(ids[s]); });
    });
    return out;
  }

  // The text of token ids: symbols joined, each </w> a space, specials skipped.
  function bpeDecode(tokenIds) {
    var s = tokenIds.filter(function (i) { return i >= D.specials.length; })
      .map(function (i) { return D.vocab[i]; }).join("").split(EOW).join(" ");
    return s.endsWith(" ") ? s.slice(0, -1) : s;
  }

  // --- number words (num2words' spelling, checked by the browser test) --------

  var ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
              "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
              "sixteen", "seventeen", "eighteen", "nineteen"];
  var TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy",
              "eighty", "ninety"];
  function below100(n) {
    if (n < 20) return ONES[n];
    return TENS[Math.floor(n / 10)] + (n % 10 ? "-" + ONES[n % 10] : "");
  }
  function below1000(n) {
    if (n < 100) return below100(n);
    var r = n % 100;
    return ONES[Math.floor(n / 100)] + " hundred" + (r ? " and " + below100(r) : "");
  }
  function english(n) {
    var a = Math.floor(n / 1000), b = n % 1000;
    if (a === 0) return below1000(b);
    var head = below1000(a) + " thousand";
    return b === 0 ? head : head + (b >= 100 ? ", " : " and ") + below1000(b);
  }

  var DE_ONES = ["null", "eins", "zwei", "drei", "vier", "f\u00fcnf", "sechs", "sieben",
                 "acht", "neun", "zehn", "elf", "zw\u00f6lf", "dreizehn", "vierzehn",
                 "f\u00fcnfzehn", "sechzehn", "siebzehn", "achtzehn", "neunzehn"];
  var DE_TENS = ["", "", "zwanzig", "drei\u00dfig", "vierzig", "f\u00fcnfzig",
                 "sechzig",
                 "siebzig", "achtzig", "neunzig"];
  function deBelow1000(n) {
    var h = Math.floor(n / 100), r = n % 100, s = "";
    if (h) s = (h === 1 ? "ein" : DE_ONES[h]) + "hundert";
    if (r === 1) s += "eins";                // also before tausend: 101000
    else if (r > 0 && r < 20) s += DE_ONES[r];
    else if (r >= 20) {
      var u = r % 10;
      s += (u ? (u === 1 ? "ein" : DE_ONES[u]) + "und" : "") +
        DE_TENS[Math.floor(r / 10)];
    }
    return s;
  }
  function german(n) {
    if (n === 0) return "null";
    var a = Math.floor(n / 1000), b = n % 1000;
    return (a === 1 ? "eintausend" : a ? deBelow1000(a) + "tausend" : "") +
      (b ? deBelow1000(b) : "");
  }

  // English number words -> n, or null if the text is not num2words' English of
  // a number below a million.
  function parseEnglish(text) {
    var total = 0, current = 0, any = false, words = text.split(" ");
    for (var i = 0; i < words.length; i++) {
      var w = words[i].replace(/,$/, "");
      if (w === "and") continue;
      if (w === "hundred") { current *= 100; continue; }
      if (w === "thousand") { total += current * 1000; current = 0; continue; }
      var parts = w.split("-");
      for (var j = 0; j < parts.length; j++) {
        var v = ONES.indexOf(parts[j]);
        if (v < 0) v = TENS.indexOf(parts[j]) * 10;
        if (v < 0 || parts[j] === "") return null;
        current += v;
        any = true;
      }
    }
    var n = total + current;
    return any && n <= D.max_number && english(n) === text ? n : null;
  }

  // --- reading what people type (mini_transformer.number_words.normalize) -------
  // The same rules and the same messages as the package: any case; spaces around,
  // repeated, tabs or non-breaking; "forty two" or "forty-two", the hyphen also a
  // Unicode hyphen or dash (U+2010 to U+2014, U+2212); with or without "and" and
  // the comma after "thousand"; "a" for "one" before "hundred" or "thousand";
  // hundreds counted past ten ("nineteen hundred and eighty-four"); punctuation at
  // the end. Anything else is refused, with its kind: empty, too-long (checked
  // first), not-text (control characters, undecodable bytes), digits, beyond,
  // word, form.

  var MAX_CHARS = 300;            // the longest number below a million has 73
  var BEYOND = ["million", "millions", "billion", "billions", "trillion",
                "trillions"];
  var ACCEPTS = "the translator takes English number words from zero to 999,999, " +
    "such as \"forty-two\" or \"twelve thousand, three hundred and forty-five\"";

  var DASHES = /[\u2010\u2011\u2012\u2013\u2014\u2212]/g;
  var SPACES = " \t\n\r\f\v\u00a0";

  // a control character other than a space, a lone surrogate or U+FFFD
  function notText(t) {
    for (var i = 0; i < t.length; i++) {
      var c = t.charCodeAt(i);
      if ((c < 32 || (c >= 127 && c < 160)) && SPACES.indexOf(t[i]) < 0) return true;
      if (c === 0xfffd) return true;
      if (c >= 0xd800 && c < 0xdc00) {
        var d = t.charCodeAt(i + 1);
        if (!(d >= 0xdc00 && d < 0xe000)) return true;
        i += 1;
      } else if (c >= 0xdc00 && c < 0xe000) return true;
    }
    return false;
  }

  function quoted(t) {                   // cut by characters, as Python slices
    var chars = Array.from(t);
    return "\"" + (chars.length > 63 ? chars.slice(0, 60).join("") + "..." : t) +
      "\"";
  }

  // {n} for a number in words, or {kind, error}.
  function readNumber(text) {
    var length = Array.from(text).length;
    if (length > MAX_CHARS)
      return {kind: "too-long", error: "the input has " + length.toLocaleString("en") +
              " characters, more than the " + MAX_CHARS + " the translator reads " +
              "(the longest number below a million has 73 in words)"};
    if (notText(text))
      return {kind: "not-text", error: "the input holds control characters or bytes " +
              "that are not text (binary data?): " + ACCEPTS};
    var spaced = text.replace(DASHES, "-").toLowerCase()
      .replace(/[ \t\n\r\f\v\u00a0]+/g, " ").replace(/^ +| +$/g, "")
      .replace(/[.!?;:, ]+$/, "");
    var words = spaced.replace(/,/g, " , ").replace(/-/g, " - ").split(" ")
      .filter(function (w) { return w !== ""; });
    var shown = quoted(spaced);
    if (!words.length) return {kind: "empty", error: "the input is empty: " + ACCEPTS};
    if (/[0-9]/.test(text))
      return {kind: "digits", error: shown + " is written in digits: " + ACCEPTS};
    var thousands = words.filter(function (w) { return w === "thousand"; }).length;
    if (thousands > 1 || words.some(function (w) { return BEYOND.indexOf(w) >= 0; }))
      return {kind: "beyond", error: shown + " is a million or more: " + ACCEPTS};
    var unknown = words.filter(function (w) {
      return ONES.indexOf(w) < 0 && (TENS.indexOf(w) < 2) &&
        ["hundred", "thousand", "and", ",", "-", "a"].indexOf(w) < 0;
    });
    if (unknown.length)
      return {kind: "word", error: quoted(unknown[0]) +
              " is not an English number word: " + ACCEPTS};
    var n = parseWords(words);
    if (n === null)
      return {kind: "form", error: shown + " is not a number in words: " + ACCEPTS};
    return {n: n};
  }

  // number = "zero" | part ["thousand" ["," | "and" | ", and"] part] | part
  // "thousand"; part = unit "hundred" ["and"] [tens] | tens; tens = 1..19 | ty |
  // ty ["-"] unit. Returns the number, or null.
  function parseWords(words) {
    if (words.length === 1 && words[0] === "zero") return 0;
    var h = hundredsPastTen(words);
    if (h !== null) return h;
    if (words[0] === "a" && words[1] === "thousand")
      words = ["one"].concat(words.slice(1));
    var r = part(words, 0);
    if (r.n === null) return null;
    var n = r.n, i = r.i;
    if (words[i] === "thousand") {
      i += 1;
      var joined = false;
      if (words[i] === ",") { i += 1; joined = true; }
      if (words[i] === "and") { i += 1; joined = true; }
      var rest = i < words.length ? part(words, i) : {n: null, i: i};
      if (rest.n === null && joined) return null;
      i = rest.i;
      n = 1000 * n + (rest.n || 0);
    }
    return i === words.length ? n : null;
  }

  function isUnit(w) { var k = ONES.indexOf(w); return k >= 1 && k <= 9; }

  // 1,100 ... 9,999 said in hundreds ("nineteen hundred [and] [eighty-four]"), or
  // null
  function hundredsPastTen(words) {
    var c = tens(words, 0), i = c.i;
    if (c.n === null || c.n < 11 || words[i] !== "hundred") return null;
    i += 1;
    if (i === words.length) return 100 * c.n;
    if (words[i] === "and") i += 1;
    var rest = tens(words, i);
    return rest.n !== null && rest.i === words.length ? 100 * c.n + rest.n : null;
  }

  // {n, i}: the number 1..999 at words[i] and the next index, or {n: null, i}.
  function part(words, i) {
    var unit = words[i] === "a" && words[i + 1] === "hundred" ? "one" : words[i];
    if (isUnit(unit) && words[i + 1] === "hundred") {
      var n = 100 * ONES.indexOf(unit);
      i += 2;
      if (words[i] === "and") {
        var after = tens(words, i + 1);
        return after.n !== null ? {n: n + after.n, i: after.i} : {n: null, i: after.i};
      }
      var rest = tens(words, i);
      return rest.n !== null ? {n: n + rest.n, i: rest.i} : {n: n, i: i};
    }
    return tens(words, i);
  }

  // {n, i}: the number 1..99 at words[i] and the next index, or {n: null, i}.
  function tens(words, i) {
    var w = words[i], k = ONES.indexOf(w);
    if (k >= 1) return {n: k, i: i + 1};
    k = TENS.indexOf(w);
    if (w === undefined || k < 2) return {n: null, i: i};
    var n = 10 * k, hyphen = words[i + 1] === "-", j = hyphen ? i + 2 : i + 1;
    if (isUnit(words[j])) return {n: n + ONES.indexOf(words[j]), i: j + 1};
    return hyphen ? {n: null, i: i + 1} : {n: n, i: i + 1};
  }

  // {text, ids, n, note} for an input the model can take: the number in the
  // training form, its tokens (then EOS); or {error, kind}.
  function check(raw) {
    var r = readNumber(String(raw === undefined || raw === null ? "" : raw));
    if (r.error) return r;
    var text = english(r.n);
    return {text: text, ids: bpeEncode(text).concat([D.eos_id]), n: r.n, note: ""};
  }

  function options(opts) {
    opts = opts || {};
    var greedyMode = opts.beamSize === null || opts.beamSize === "greedy" ||
      opts.greedy;
    var K = greedyMode ? null : (opts.beamSize === undefined ? 4 : opts.beamSize);
    var alpha = opts.alpha === undefined ? 0.6 : opts.alpha;
    if (K !== null && !(Number.isInteger(K) && K >= 1 && K <= 8))
      throw new Error("beamSize must be an integer from 1 to 8 (or null for greedy), " +
                      "got " + K);
    if (!(typeof alpha === "number" && alpha >= 0 && alpha <= 2))
      throw new Error("alpha must be a number from 0 to 2, got " + alpha);
    return {K: K, alpha: alpha};
  }

  // The whole translation: {text, tokens, score, ...}; throws the page's message
  // for an input the model cannot take.
  function translate(raw, opts) {
    var o = options(opts), c = check(raw);
    if (c.error) throw new Error(c.error);
    var maxLen = c.ids.length + 50, r;
    if (o.K === null) {
      r = greedy(c.ids, maxLen);
      var n = r.tokens.length - 1;
      r.score = r.logP / lengthPenalty(n, o.alpha);
    } else r = beamSearch(c.ids, o.K, o.alpha, maxLen);
    var out = r.tokens.slice(1);
    var end = out.indexOf(D.eos_id);
    var body = end < 0 ? out : out.slice(0, end);
    return {text: bpeDecode(body), tokens: r.tokens.slice(1).map(function (i) {
      return D.vocab[i]; }), ids: r.tokens, score: r.score, logP: r.logP,
      source: c.text, sourceIds: c.ids, sourceTokens: c.ids.map(function (i) {
        return D.vocab[i]; }), n: c.n, note: c.note, cross: r.cross, steps: r.steps};
  }

  function fmt(x) {
    return x === -Infinity ? "\u2212\u221e" : x.toFixed(4).replace("-", "\u2212");
  }

  return {
    data: D, check: check, translate: translate, encode: encode, embed: embed,
    bpeEncode: bpeEncode, bpeDecode: bpeDecode, english: english, german: german,
    parseEnglish: parseEnglish, readNumber: readNumber, lengthPenalty: lengthPenalty,
    fmt: fmt,
    // the next token's logits after a prefix (BOS first), through the cache
    logits: function (src, prefix) {
      var mem = memoryKV(encode(src)), cache = emptyCache(), out = [];
      prefix.forEach(function (tok, t) {
        var s = decoderStep(tok, t, cache, mem);
        cache = s.cache;
        out.push(Array.from(s.logits));
      });
      return out;
    }
  };
})();

window.mtTranslate = function (text, opts) {
  "use strict";
  var r = window.mtTranslator.translate(text, opts);
  return {text: r.text, tokens: r.tokens, score: r.score};
};

// --- the page -------------------------------------------------------------------
// Controls are native inputs and buttons with labels (keyboard and screen reader);
// the readout is an aria-live region; the beam's steps are also buttons, and the
// arrow keys step while the step panel has focus.
window.mtTranslator.mount = function (root) {
  "use strict";
  var T = window.mtTranslator, D = T.data, fmt = T.fmt;
  var K_DEFAULT = 4, ALPHA_DEFAULT = 0.6;

  var el = window.mtModelCore.el, svg = window.mtModelCore.svg;
  function sym(id) { return D.vocab[id]; }
  function hyp(tokens) { return tokens.map(sym).join(" "); }
  function chips(tokens, testid) {
    var box = el("span", {"class": "mtt-chips", "data-testid": testid});
    tokens.forEach(function (t) {
      box.appendChild(el("span", {"class": "mtt-chip"}, t));
    });
    return box;
  }

  // Controls.
  var form = el("form", {"class": "mtt-controls", "aria-label": "translator controls"});
  var row1 = form.appendChild(el("div", {"class": "mtt-row"}));
  var textLabel = row1.appendChild(el("label", {"for": "mtt-text"},
                                      "English number in words"));
  textLabel.className = "mtt-label";
  var text = row1.appendChild(el("input", {id: "mtt-text", type: "text",
    "class": "mtt-text",
    "data-testid": "text", autocomplete: "off", spellcheck: "false",
    "aria-describedby": "mtt-readout"}));
  text.value = "three hundred and forty-two";
  var go = row1.appendChild(el("button", {type: "submit", "data-testid": "translate"},
                               "Translate"));
  var row2 = form.appendChild(el("div", {"class": "mtt-row"}));
  var pickLabel = row2.appendChild(el("label", {"class": "mtt-control"},
                                      "or pick a number "));
  var pick = pickLabel.appendChild(el("input", {type: "number", min: "0", max: "999999",
    step: "1", "data-testid": "number", "class": "mtt-number"}));
  var random = row2.appendChild(el("button", {type: "button", "data-testid": "random",
    "aria-label": "a random held-out number (never trained on)"},
    "random held-out number"));
  var row3 = form.appendChild(el("div", {"class": "mtt-row"}));
  function range(label, testid, min, max, step, value) {
    var wrap = row3.appendChild(el("label", {"class": "mtt-control"}, label + " "));
    var input = wrap.appendChild(el("input", {type: "range", min: min, max: max,
                                              step: step, "data-testid": testid}));
    input.value = String(value);
    var out = wrap.appendChild(el("output", {"class": "mtt-value",
                                             "data-testid": testid + "-value"},
                                  String(value)));
    return {input: input, out: out};
  }
  var beam = range("beam size", "beam", "1", "8", "1", K_DEFAULT);
  var alpha = range("length penalty \u03b1", "alpha", "0", "2", "0.1", ALPHA_DEFAULT);
  root.appendChild(form);
  var readout = root.appendChild(el("div", {id: "mtt-readout", "class": "mtt-readout",
    role: "status", "aria-live": "polite", "data-testid": "readout"}));

  // Results.
  var result = root.appendChild(el("div", {"class": "mtt-result"}));
  var stepsBox = root.appendChild(el("section", {"class": "mtt-steps",
    "aria-label": "beam search, step by step", tabindex: "-1"}));
  var heatBox = root.appendChild(el("section", {"class": "mtt-heat",
    "aria-label": "cross-attention of the beam's output"}));

  var current = null, stepIndex = 0;

  function table(head, rows, testid) {
    var t = el("table", {"class": "mtt-table", "data-testid": testid});
    var tr = t.appendChild(el("thead")).appendChild(el("tr"));
    head.forEach(function (h) { tr.appendChild(el("th", {scope: "col"}, h)); });
    var body = t.appendChild(el("tbody"));
    rows.forEach(function (r) {
      var row = body.appendChild(el("tr", r.cls ? {"class": r.cls} : {}));
      r.cells.forEach(function (c) { row.appendChild(el("td", {}, c)); });
    });
    return t;
  }

  function showResult(r, g, ms) {
    result.textContent = "";
    var p = result.appendChild(el("p", {}, "Source tokens (BPE, then EOS): "));
    p.appendChild(chips(r.sourceTokens, "src-tokens"));
    var rows = [
      {cells: ["greedy", g.text, fmt(g.logP), fmt(g.score)]},
      {cells: ["beam " + r.K + ", \u03b1 " + r.alpha.toFixed(1), r.text, fmt(r.logP),
               fmt(r.score)], cls: "mtt-chosen"}];
    result.appendChild(table(["decoding", "German", "log P", "score"], rows,
                             "outputs"));
    var out = result.appendChild(el("p", {}, "Beam output tokens: "));
    out.appendChild(chips(r.tokens, "out-tokens"));
    var runs = r.steps.reduce(function (a, s) { return a + s.live.length; }, 0);
    result.appendChild(el("p", {"data-testid": "work"}, "The encoder turned the " +
      r.sourceIds.length + " source tokens into " + r.sourceIds.length +
      " vectors of " +
      D.d_model + " numbers, once. The decoder then ran " + (g.ids.length - 1) +
      " times for greedy decoding and " + runs + " times for the beam (one run per " +
      "live hypothesis per step), each time on one new position only: every layer " +
      "keeps the keys and values of the earlier positions (its cache) and of the " +
      "source."));
    if (r.n !== null) {
      var want = T.german(r.n);
      result.appendChild(el("p", {"data-testid": "check"}, "num2words' German for " +
        r.n.toLocaleString("en") + ": \u201c" + want + "\u201d. The beam's answer is " +
        (r.text === want ? "the same." : "different: the model is wrong here.") +
        (g.text === r.text ? "" :
         " Greedy decoding gives \u201c" + g.text + "\u201d.")));
    }
    result.appendChild(el("p", {"class": "mtt-speed", "data-testid": "speed"},
      "Computed in your browser: greedy " + ms.greedy.toFixed(1) + " ms, beam " +
      ms.beam.toFixed(1) + " ms."));
  }

  function showStep() {
    var steps = current.steps, s = steps[stepIndex];
    stepsBox.textContent = "";
    stepsBox.appendChild(el("h2", {"class": "mtt-h"}, "The beam, step by step"));
    var nav = stepsBox.appendChild(el("div", {"class": "mtt-row"}));
    function button(label, aria, testid, to) {
      var b = nav.appendChild(el("button", {type: "button", "aria-label": aria,
                                            "data-testid": testid}, label));
      b.disabled = to < 0 || to >= steps.length;
      b.addEventListener("click", function () {
        stepIndex = to;
        showStep();
        focus(testid);
      });
      return b;
    }
    button("\u00ab first", "first step", "step-first", 0);
    button("\u25c0 back", "back one step", "step-back", stepIndex - 1);
    nav.appendChild(el("span", {"class": "mtt-value", "data-testid": "step"},
                       "step " + (stepIndex + 1) + " of " + steps.length));
    button("forward \u25b6", "forward one step", "step-forward", stepIndex + 1);
    button("last \u00bb", "last step", "step-last", steps.length - 1);
    var summary = s.finished.length + " finished, " + s.next.length + " live";
    stepsBox.appendChild(el("p", {"class": "mtt-step-summary", "aria-live": "polite",
      "data-testid": "step-summary"}, "Step " + (stepIndex + 1) + ": " +
      s.live.length + " live " + (s.live.length === 1 ? "hypothesis" : "hypotheses") +
      " extended by every token; " + summary + (s.stop ? ". The search stops." : ".")));
    stepsBox.appendChild(el("p", {}, "Live hypotheses entering the step:"));
    stepsBox.appendChild(table(["#", "tokens", "log P", "log P / lp(\u2113)"],
      s.live.map(function (h, i) {
        var ell = h.tokens.length - 1;                     // tokens written, not BOS
        return {cells: [String(i), hyp(h.tokens), fmt(h.logP),
                        ell ? fmt(h.logP / T.lengthPenalty(ell, current.alpha))
                            : "\u2013"]};
      }), "live"));
    stepsBox.appendChild(el("p", {}, "The " + s.candidates.length + " most probable " +
      "extensions (twice the beam size), by log P; an EOS among the first " +
      current.K +
      " finishes, with score = log P / lp(" + s.n + ") = log P / " +
      T.lengthPenalty(s.n, current.alpha).toFixed(4) + ":"));
    stepsBox.appendChild(table(["from", "+ token", "log P", "what happens"],
      s.candidates.map(function (c, i) {
        var K = current.K, what = c.eos ?
          (i < K ? "finishes, score " + fmt(c.score) : "EOS after the first " + K +
           ": dropped") :
          (c.live ? "stays live" : "dropped (" + K + " live already)");
        return {cells: ["#" + c.row, sym(c.token), fmt(c.logP), what],
                cls: c.eos && i < K ? "mtt-finished" :
                  c.live ? "mtt-live" : "mtt-dropped"};
      }), "candidates"));
    var best = s.best;
    stepsBox.appendChild(el("p", {"data-testid": "best"}, best ?
      "Best finished so far: " + hyp(best.tokens) + ", log P " + fmt(best.logP) +
      ", score " + fmt(best.score) + (s.bestChanged ? " (new at this step)." : ".") :
      "No hypothesis has finished yet."));
    if (s.bound !== undefined) stepsBox.appendChild(el("p", {}, "The most a live " +
      "hypothesis could still score: its best log P / lp(" + (current.maxLen - 1) +
      ") = " + fmt(s.bound) + "."));
    stepsBox.appendChild(el("p", {"class": "mtt-stop", "data-testid": "stop"}, s.stop ?
      "Why it stopped: " + s.stop + "." : "The search goes on."));
  }

  function focus(testid) {
    var b = stepsBox.querySelector('[data-testid="' + testid + '"]');
    if (b && !b.disabled) b.focus();
    else {
      var f = stepsBox.querySelector('[data-testid="step-forward"]');
      var back = stepsBox.querySelector('[data-testid="step-back"]');
      (f && !f.disabled ? f : back).focus();
    }
  }

  stepsBox.addEventListener("keydown", function (e) {
    if (!current || (e.key !== "ArrowLeft" && e.key !== "ArrowRight")) return;
    if (e.target && e.target.tagName === "INPUT") return;
    var to = stepIndex + (e.key === "ArrowRight" ? 1 : -1);
    if (to >= 0 && to < current.steps.length) {
      stepIndex = to;
      showStep();
      focus(e.key === "ArrowRight" ? "step-forward" : "step-back");
      e.preventDefault();
    }
  });

  var layerSel = null, headSel = null;
  function showHeat() {
    heatBox.textContent = "";
    heatBox.appendChild(el("h2", {"class": "mtt-h"},
                           "Cross-attention of the beam's output"));
    var row = heatBox.appendChild(el("div", {"class": "mtt-row"}));
    function select(label, testid, opts, value) {
      var wrap = row.appendChild(el("label", {"class": "mtt-control"}, label + " "));
      var s = wrap.appendChild(el("select", {"data-testid": testid}));
      opts.forEach(function (o) {
        var opt = s.appendChild(el("option", {value: String(o[0])}, o[1]));
        if (String(o[0]) === String(value)) opt.selected = true;
      });
      s.addEventListener("change", showHeat);
      return s;
    }
    var L = current.cross[0].length, nH = D.n_heads;
    var layers = [], headOpts = [["mean", "mean of the " + nH + " heads"]];
    for (var l = 0; l < L; l++) layers.push([l, "decoder layer " + (l + 1)]);
    for (var h = 0; h < nH; h++) headOpts.push([h, "head " + (h + 1)]);
    var lv = layerSel ? layerSel.value : String(L - 1);
    var hv = headSel ? headSel.value : "mean";
    layerSel = select("layer", "layer", layers, lv);
    headSel = select("head", "head", headOpts, hv);
    var li = Number(layerSel.value), hi = headSel.value;
    var rows = current.cross.map(function (step) {   // one row per output token
      var w = step[li];
      if (hi !== "mean") return Array.from(w[Number(hi)]);
      return Array.from(w[0]).map(function (_, j) {
        var z = 0;
        for (var k = 0; k < w.length; k++) z += w[k][j];
        return z / w.length;
      });
    });
    var src = current.sourceTokens, out = current.tokens;
    var cell = 40, left = 12 + 7.4 * Math.max.apply(null, out.map(function (t) {
      return t.length; })), top = 14 + 5.6 * Math.max.apply(null, src.map(function (t) {
      return t.length; }));
    var width = left + cell * src.length + 40, height = top + cell * out.length + 8;
    var strongest = rows.map(function (r, i) {
      var j = r.indexOf(Math.max.apply(null, r));
      return out[i] + " \u2190 " + src[j];
    });
    var fig = svg("svg", {viewBox: "0 0 " + width + " " + height, width: String(width),
      "class": "mtt-heatmap", role: "img", "data-testid": "heatmap",
      "aria-label": "Cross-attention, " + layerSel.selectedOptions[0].textContent +
        ", " +
        headSel.selectedOptions[0].textContent + ": rows are the output tokens, " +
        "columns the source tokens. Each output token's strongest source token: " +
        strongest.join("; ") + "."});
    src.forEach(function (t, j) {
      var x = left + cell * j + cell / 2 - 4, y = top - 6;
      fig.appendChild(svg("text", {x: x, y: y,
                                   transform: "rotate(-45 " + x + " " + y + ")",
                                   "class": "mtt-axis-label"}, t));
    });
    rows.forEach(function (r, i) {
      fig.appendChild(svg("text", {x: left - 6, y: top + cell * i + cell / 2 + 4,
                                   "text-anchor": "end", "class": "mtt-axis-label"},
                          out[i]));
      r.forEach(function (w, j) {
        var rect = svg("rect", {x: left + cell * j, y: top + cell * i, width: cell - 1,
          height: cell - 1, "class": "mtt-cell",
          "fill-opacity": (0.04 + 0.96 * w).toFixed(3),
          "data-weight": w.toFixed(6)});
        rect.appendChild(svg("title", {},
                             out[i] + " \u2190 " + src[j] + ": " + w.toFixed(3)));
        fig.appendChild(rect);
        fig.appendChild(svg("text", {x: left + cell * j + cell / 2 - 0.5,
          y: top + cell * i + cell / 2 + 3.5, "text-anchor": "middle",
          "class": w > 0.5 ? "mtt-cell-value mtt-on-dark" : "mtt-cell-value"},
          w.toFixed(2).replace(/^0/, "")));
      });
    });
    heatBox.appendChild(el("div", {"class": "mtt-heatmap-wrap"})).appendChild(fig);
    heatBox.appendChild(el("p", {"class": "mtt-caption"},
      "Row i: the weights with which " +
      "the decoder, predicting output token i, reads each source position (" +
      "one row sums to 1); the stronger the blue, the larger the weight."));
  }

  function run() {
    var K = Number(beam.input.value), a = Number(alpha.input.value);
    beam.out.textContent = String(K);
    alpha.out.textContent = a.toFixed(1);
    var c = T.check(text.value);
    if (c.error) {
      current = null;
      readout.className = "mtt-readout mtt-error";
      readout.textContent = c.error;
      readout.setAttribute("data-kind", c.kind);
      result.textContent = "";
      stepsBox.textContent = "";
      heatBox.textContent = "";
      return;
    }
    var t0 = performance.now();
    var g = T.translate(text.value, {beamSize: null, alpha: a});
    var t1 = performance.now();
    var r = T.translate(text.value, {beamSize: K, alpha: a});
    var t2 = performance.now();
    r.K = K;
    r.alpha = a;
    r.maxLen = r.sourceIds.length + 50;
    current = r;
    stepIndex = r.steps.length - 1;
    readout.className = "mtt-readout";
    readout.removeAttribute("data-kind");
    readout.textContent = (c.note ? c.note + " " : "") + "\u201c" + r.source +
      "\u201d \u2192 \u201c" + r.text + "\u201d (beam " + K + ", \u03b1 " +
      a.toFixed(1) + ", score " +
      fmt(r.score) + "; " + r.steps.length + " steps).";
    showResult(r, g, {greedy: t1 - t0, beam: t2 - t1});
    showStep();
    showHeat();
  }

  form.addEventListener("submit", function (e) { e.preventDefault(); run(); });
  text.addEventListener("input", run);
  [beam.input, alpha.input].forEach(function (i) {
    i.addEventListener("input", run);
    i.addEventListener("change", run);
  });
  pick.addEventListener("input", function () {
    if (pick.value === "") return;
    var n = Number(pick.value);
    if (Number.isInteger(n) && n >= 0 && n <= D.max_number) text.value = T.english(n);
    else text.value = pick.value;
    run();
  });
  random.addEventListener("click", function () {
    var n = HELD_OUT[Math.floor(Math.random() * HELD_OUT.length)];
    pick.value = String(n);
    text.value = T.english(n);
    run();
  });
  void go;
  T.translate("one", {beamSize: null});       // compile once before the first timing
  T.translate("one", {beamSize: 2});
  run();
  root.setAttribute("data-mounted", "1");
};

(function () {
  "use strict";
  var css = [
    ".mtt { margin: 1rem 0 1.5rem; }",
    ".mtt-row { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: center;",
    "  margin: 0.4rem 0; }",
    ".mtt-label { font-weight: 600; flex-basis: 100%; }",
    ".mtt-text { flex: 1 1 14rem; min-width: 0; max-width: 100%; font-size: 1rem;",
    "  padding: 0.3rem 0.5rem; }",
    ".mtt-number { width: 7rem; }",
    ".mtt-control { display: inline-flex; align-items: center; gap: 0.4rem;",
    "  flex-wrap: wrap; }",
    ".mtt-value { font-variant-numeric: tabular-nums; min-width: 2.2rem; }",
    ".mtt button { padding: 0.2rem 0.6rem; border: 1px solid currentColor;",
    "  border-radius: 0.25rem; background: transparent; color: inherit;",
    "  cursor: pointer; }",
    ".mtt button:disabled { opacity: 0.4; cursor: default; }",
    ".mtt button:focus-visible, .mtt input:focus-visible, .mtt select:focus-visible,",
    ".mtt-steps:focus-visible { outline: 3px solid #d97706; outline-offset: 2px; }",
    ".mtt-readout { margin: 0.6rem 0; padding: 0.5rem 0.75rem;",
    "  border-left: 4px solid #2563eb;",
    "  background: rgba(37, 99, 235, 0.07); overflow-wrap: anywhere; }",
    ".mtt-readout.mtt-error { border-left-color: #b91c1c;",
    "  background: rgba(185, 28, 28, 0.08); }",
    ".mtt-chips { display: inline-flex; flex-wrap: wrap; gap: 0.25rem;",
    "  vertical-align: middle; }",
    ".mtt-chip { font-family: var(--pst-font-family-monospace, monospace);",
    "  font-size: 0.85em; padding: 0 0.3rem; border-radius: 0.2rem;",
    "  border: 1px solid rgba(127, 127, 127, 0.5); }",
    ".mtt-table { width: 100%; table-layout: fixed; font-size: 0.85rem; }",
    ".mtt-table td, .mtt-table th { overflow-wrap: anywhere;",
    "  padding: 0.15rem 0.35rem; }",
    ".mtt-table td:nth-child(2) {",
    "  font-family: var(--pst-font-family-monospace, monospace); }",
    ".mtt-finished td { background: rgba(22, 163, 74, 0.14); }",
    ".mtt-dropped td { font-style: italic; }",
    ".mtt-chosen td { font-weight: 600; }",
    ".mtt-heatmap-wrap { max-width: 100%; }",
    ".mtt-heatmap { max-width: 100%; height: auto; }",
    ".mtt-cell { fill: #2563eb; }",
    ".mtt-axis-label { font-size: 12px; fill: currentColor;",
    "  font-family: var(--pst-font-family-monospace, monospace); }",
    ".mtt-cell-value { font-size: 10px; fill: currentColor; pointer-events: none; }",
    ".mtt-cell-value.mtt-on-dark { fill: #fff; }",
    ".mtt-h { font-size: 1.25rem; margin: 1.2rem 0 0.4rem; }",
    ".mtt-table td:first-child, .mtt-table th:first-child { width: 3.4rem; }",
    ".mtt-table td:nth-child(3), .mtt-table th:nth-child(3) { width: 5.2rem; }",
    "[data-testid=live] td:nth-child(4), [data-testid=live] th:nth-child(4) {",
    "  width: 6rem; }",
    "[data-testid=outputs] td:first-child, [data-testid=outputs] th:first-child {",
    "  width: 6.5rem; }",
    "[data-testid=outputs] td:nth-child(4), [data-testid=outputs] th:nth-child(4) {",
    "  width: 5.2rem; }",
    ".mtt-caption, .mtt-speed { font-size: 0.85rem; opacity: 0.85; }"
  ];
  window.mtModelCore.startPage(css, "mtt-root", "mtt", window.mtTranslator.mount);
})();

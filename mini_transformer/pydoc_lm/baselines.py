"""Count-based baselines: n-gram models of bytes, the language models that came
before neural ones. Each predicts a byte from the n − 1 bytes before it, with
probabilities made of how often things followed each other in the training text.

    add-k:   P(c | h) = (C(h c) + k) / (C(h) + k V)
    Kneser–Ney (interpolated, trigram):
             P(c | a b) = max(C(a b c) − D, 0) / C(a b) + D T(a b) / C(a b) · P₂(c | b)
    P₂ and P₁ are the same formula with continuation counts (in how many different
    contexts a string was seen) in place of counts, and P₁ falls back on 1 / V.

C counts in the training text, h is the history (the n − 1 bytes before), V = 256
bytes, T(h) the number of different bytes seen after h; k and D are chosen on the
development text.
"""

from __future__ import annotations

import numpy as np

from . import data

V = data.VOCAB_SIZE


def ngram_keys(tokens, n: int):
    """Each n-gram of ``tokens`` as one integer, Σ_i tokens[j + i] V^(n − 1 − i), for
    j = 0 .. len − n; (len − n + 1,) int64."""
    tokens = np.asarray(tokens, dtype=np.int64)
    keys = np.zeros(len(tokens) - n + 1, dtype=np.int64)
    for i in range(n):
        keys = keys * V + tokens[i:len(tokens) - n + 1 + i]
    return keys


def lookup(table, keys):
    """The counts of ``keys`` in ``table`` = (sorted unique keys, counts); 0 if
    absent."""
    unique, counts = table
    if len(unique) == 0:
        return np.zeros(len(keys), dtype=np.int64)
    i = np.minimum(np.searchsorted(unique, keys), len(unique) - 1)
    return np.where(unique[i] == keys, counts[i], 0)


def count(keys):
    return np.unique(keys, return_counts=True)


def targets(text: str, n: int):
    """(the n-grams ending at every scored byte, their histories) as keys: the
    bytes after the text's leading ``data.SEPARATOR``, each with the n − 1 before."""
    tokens = data.encode(text)
    start = len(data.SEPARATOR) - (n - 1)        # the first scored n-gram
    grams = ngram_keys(tokens, n)[start:]
    return grams, grams // V


def add_k_bpc(train_text: str, text: str, n: int, k: float) -> float:
    """Bits per character of ``text`` under the add-k n-gram model of
    ``train_text``."""
    train = data.encode(train_text)
    grams, hist = targets(text, n)
    c_gram = lookup(count(ngram_keys(train, n)), grams)
    c_hist = (lookup(count(ngram_keys(train[:-1], n - 1)), hist) if n > 1
              else np.full(len(grams), len(train)))
    log_p = np.log2((c_gram + k) / (c_hist + k * V))
    return float(-log_p.sum() / (len(text) - len(data.SEPARATOR)))


def kneser_ney_bpc(train_text: str, text: str, d: float) -> float:
    """Bits per character of ``text`` under the interpolated Kneser–Ney trigram
    model of ``train_text``, with one discount ``d`` for every order."""
    grams, _ = targets(text, 3)
    p = kneser_ney_probs(data.encode(train_text), grams, d)
    return float(-np.log2(p).sum() / (len(text) - len(data.SEPARATOR)))


def kneser_ney_probs(train, grams, d: float):
    """P(c | a b) of the trigrams ``grams`` (keys, ``ngram_keys``) under the
    interpolated Kneser–Ney model of the training tokens ``train``."""
    tri = count(ngram_keys(train, 3))                      # C(a b c)
    bi_cont = count(tri[0] % V ** 2)                  # N(• b c), over trigram types
    uni_cont = count(bi_cont[0] % V)                       # N(• c), over bigram types
    ab, bc, b, c = grams // V, grams % V ** 2, (grams // V) % V, grams % V
    # P₁(c): continuation counts N(• c), interpolated with the uniform 1 / V
    n_bigram_types = len(bi_cont[0])
    p1 = (np.maximum(lookup(uni_cont, c) - d, 0)
          + d * len(uni_cont[0]) / V) / n_bigram_types
    # P₂(c | b) from N(• b c): N(• b •) = Σ_c N(• b c), T₂(b) = #{c: N(• b c) > 0}
    n_b = np.bincount(bi_cont[0] // V, weights=bi_cont[1], minlength=V)[b]
    t_b = np.bincount(bi_cont[0] // V, minlength=V)[b]
    p2 = np.where(n_b > 0, (np.maximum(lookup(bi_cont, bc) - d, 0) + d * t_b * p1)
                  / np.maximum(n_b, 1), p1)
    # P(c | a b) from C(a b c): C(a b) = Σ_c C(a b c), T(a b) = #{c: C(a b c) > 0}
    hist, first = np.unique(tri[0] // V, return_index=True)
    c_ab = lookup((hist, np.add.reduceat(tri[1], first)), ab)
    t_ab = lookup((hist, np.diff(np.r_[first, len(tri[0])])), ab)
    return np.where(c_ab > 0, (np.maximum(lookup(tri, grams) - d, 0) + d * t_ab * p2)
                    / np.maximum(c_ab, 1), p2)


def tune(score, grid):
    """(the setting of ``grid`` with the smallest score(setting), that score)."""
    results = [(score(g), g) for g in grid]
    best = min(results)
    return best[1], best[0]


K_GRID = (1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001)
D_GRID = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def baselines(train_text: str, dev_text: str, test_text: str) -> dict:
    """Each baseline tuned on the development text, scored on the test text:
    {name: {"setting": ..., "dev_bpc": ..., "test_bpc": ...}}."""
    out = {}
    for n, name in ((1, "unigram"), (2, "bigram"), (3, "trigram")):
        k, dev = tune(lambda k: add_k_bpc(train_text, dev_text, n, k), K_GRID)
        out[f"{name}, add-k"] = {"setting": k, "dev_bpc": dev,
                                 "test_bpc": add_k_bpc(train_text, test_text, n, k)}
    d, dev = tune(lambda d: kneser_ney_bpc(train_text, dev_text, d), D_GRID)
    out["trigram, Kneser–Ney"] = {"setting": d, "dev_bpc": dev,
                                 "test_bpc": kneser_ney_bpc(train_text, test_text, d)}
    return out


"""Byte-pair encoding (Sennrich et al., 2016), the paper's §5.1 subword vocabulary.

Start from characters; count every pair of adjacent symbols, weighted by how often
its word occurs; merge the most frequent pair into one new symbol; repeat until the
vocabulary has ``vocab_size`` entries. A word ends with the end-of-word marker
``</w>`` on its last symbol (as ``subword-nmt`` writes it), so "drei" and the
"drei" inside "dreihundert" become different tokens, and decoding knows where the
spaces go: the tokens are concatenated and each ``</w>`` becomes a space.

A pre-tokenizer (``split``, a regular expression of places inside a word, as GPT-2's
splits text before its BPE) may cut a word into pieces that no merge crosses:
German writes a number as one word, and with ``split`` at "hundert", "tausend" and
"und", "dreihundertzwei" is learnt and encoded as "drei" "hundert" "zwei</w>". Only
the last piece carries ``</w>``, so decoding is the same.

    >>> bpe = BPE.learn(["low lower lowest"] * 3, vocab_size=20)
    >>> bpe.decode(bpe.encode("lower low")) == "lower low"
    True
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

END = "</w>"  # the end-of-word marker, part of a word's last symbol
FORMAT = "mini_transformer.BPE"


def _word_symbols(word: str) -> tuple:
    """"low" -> ("l", "o", "w</w>"): characters, the last one marked."""
    return (*word[:-1], word[-1] + END)


def _pieces(word: str, split) -> list:
    """The pieces of ``word`` that ``split`` (a compiled pattern or None) cuts it
    into, e.g. "dreihundertzwei" -> ["drei", "hundert", "zwei"]."""
    return [word] if split is None else [p for p in split.split(word) if p]


def _piece_symbols(word: str, split) -> list:
    """Each piece's characters, the word's last one marked: "dreihundert" ->
    [("d", "r", "e", "i"), ("h", "u", "n", "d", "e", "r", "t</w>")]."""
    pieces = _pieces(word, split)
    return [tuple(p) for p in pieces[:-1]] + [_word_symbols(pieces[-1])]


def _compile(split):
    if split is None:
        return None
    if not isinstance(split, str) or not split:
        raise ValueError(f"split must be a regular expression (a non-empty str) or "
                         f"None, got {split!r}")
    try:
        return re.compile(split)
    except re.error as e:
        raise ValueError(f"split {split!r} is not a regular expression: {e}") from None


def _merge(symbols: tuple, pair: tuple) -> tuple:
    """Every occurrence of ``pair`` in ``symbols``, left to right, made one symbol."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def pair_counts(words: dict) -> Counter:
    """count(a, b) = Σ over words w of freq(w) · (occurrences of "a b" in w)."""
    counts = Counter()
    for symbols, freq in words.items():
        for pair in zip(symbols, symbols[1:]):
            counts[pair] += freq
    return counts


def _split_words(text: str) -> list:
    if not isinstance(text, str) or not text or "  " in text \
            or text != text.strip(" ") or any(c in text for c in "\n\t\r"):
        raise ValueError(f"BPE text must be non-empty words separated by single spaces "
                         f"(no leading, trailing or double spaces, tabs or newlines), "
                         f"got {text!r}")
    return text.split(" ")


class BPE:
    """A learned byte-pair encoding: ``specials`` (ids 0, 1, ...), then the
    alphabet (every character of the training texts, plain and with ``</w>``,
    sorted), then one symbol per merge, in the order the merges were learned.
    split: the pre-tokenizer's pattern (None: words are not cut)."""

    def __init__(self, alphabet, merges, specials=("<pad>", "<bos>", "<eos>"),
                 split=None):
        self._split = _compile(split)
        self.split = split
        self.specials = tuple(specials)
        self.alphabet = tuple(alphabet)
        self.merges = tuple(tuple(pair) for pair in merges)
        self.vocab = [*self.specials, *self.alphabet,
                      *(a + b for a, b in self.merges)]
        self.ids = {symbol: i for i, symbol in enumerate(self.vocab)}
        self.rank = {pair: i for i, pair in enumerate(self.merges)}
        self._cache = {}

    def pieces(self, word: str) -> list:
        """The pieces the pre-tokenizer (``split``) cuts ``word`` into, which no merge
        crosses: "dreihundertzwei" -> ["drei", "hundert", "zwei"] with the German
        split; [word] without one."""
        return _pieces(word, self._split)

    # --- learning -----------------------------------------------------------------

    @classmethod
    def learn(cls, texts, vocab_size: int, specials=("<pad>", "<bos>", "<eos>"),
              min_frequency: int = 2, split=None):
        """Learn merges from ``texts`` until the vocabulary has ``vocab_size``
        entries (specials + alphabet + merges), or no pair occurs ``min_frequency``
        times. split: the pre-tokenizer's pattern; a pair is counted inside a
        piece only.

        Tie-break: among pairs with the same count, the largest pair (a, b) in
        Python's string order wins, which is ``subword-nmt``'s rule
        (``max(stats, key=lambda x: (stats[x], x))``).
        """
        words = Counter()
        for text in texts:
            words.update(_split_words(text))
        pieces, pattern = Counter(), _compile(split)  # merges work inside a piece
        for w, n in words.items():
            for symbols in _piece_symbols(w, pattern):
                pieces[symbols] += n
        words = pieces
        chars = {c for symbols in words for s in symbols for c in s.removesuffix(END)}
        alphabet = sorted(chars | {c + END for c in chars})  # any word of these chars
        n_merges = vocab_size - len(specials) - len(alphabet)
        if len(set(specials)) != len(specials) or set(specials) & set(alphabet):
            raise ValueError(f"specials must be distinct and not symbols of the texts, "
                             f"got {specials!r}")
        if not isinstance(vocab_size, int) or n_merges < 0:
            raise ValueError(f"vocab_size={vocab_size!r} is smaller than the "
                             f"{len(specials)} specials plus the {len(alphabet)} "
                             f"characters of the texts")
        merges = []
        for _ in range(n_merges):
            counts = pair_counts(words)
            if not counts:
                break
            best = max(counts, key=lambda pair: (counts[pair], pair))  # most frequent
            if counts[best] < min_frequency:
                break
            merges.append(best)
            words = {_merge(symbols, best): n for symbols, n in words.items()}
        return cls(alphabet, merges, specials, split)

    # --- encoding and decoding ------------------------------------------------------

    def _encode_word(self, word: str) -> tuple:
        """Apply the merges in the order they were learned: repeatedly merge the
        adjacent pair that was learned first (subword-nmt's ``apply_bpe``)."""
        if word in self._cache:
            return self._cache[word]
        out = ()
        for symbols in _piece_symbols(word, self._split):
            unknown = sorted({s.removesuffix(END) for s in symbols
                              if s not in self.ids})
            if unknown:
                raise ValueError(f"the word {word!r} has characters that are not in "
                                 f"the BPE alphabet: {unknown}")
            while len(symbols) > 1:
                pairs = [p for p in zip(symbols, symbols[1:]) if p in self.rank]
                if not pairs:
                    break
                symbols = _merge(symbols, min(pairs, key=self.rank.__getitem__))
            out += symbols
        self._cache[word] = out
        return out

    def encode(self, text: str) -> list:
        """Token ids of ``text`` (no BOS or EOS added)."""
        return [self.ids[s] for w in _split_words(text) for s in self._encode_word(w)]

    def decode(self, ids) -> str:
        """The text of token ids: symbols concatenated, each ``</w>`` a space; the
        special tokens (padding, BOS, EOS) are skipped."""
        n = len(self.vocab)
        ids = [int(i) for i in ids]
        bad = [i for i in ids if not 0 <= i < n]
        if bad:
            raise ValueError(f"token ids must lie in [0, {n}), got {bad[:5]}")
        text = "".join(self.vocab[i] for i in ids if i >= len(self.specials))
        return text.replace(END, " ").removesuffix(" ")

    def tokens(self, text: str) -> list:
        """The symbols of ``text``, e.g. ["drei", "hundert", "zwei", ...]."""
        return [self.vocab[i] for i in self.encode(text)]

    # --- the special tokens ---------------------------------------------------------

    def __len__(self) -> int:
        return len(self.vocab)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def _special(self, name):
        for s in self.specials:
            if s.strip("<>") == name:
                return self.ids[s]
        raise ValueError(f"this BPE has no <{name}> token (specials: {self.specials})")

    @property
    def pad_id(self) -> int:
        return self._special("pad")

    @property
    def bos_id(self) -> int:
        return self._special("bos")

    @property
    def eos_id(self) -> int:
        return self._special("eos")

    # --- files ------------------------------------------------------------------------

    def to_dict(self) -> dict:
        """Version 1 without a pre-tokenizer; version 2 adds ``split`` (a reader
        that knew no pre-tokenizer would encode differently, so it must refuse)."""
        data = {"format": FORMAT, "version": 1 if self.split is None else 2,
                "specials": list(self.specials), "alphabet": list(self.alphabet),
                "merges": [list(pair) for pair in self.merges]}
        return data if self.split is None else data | {"split": self.split}

    def save(self, path) -> None:
        """Write the BPE as JSON (specials, alphabet, merges in order, and the
        pre-tokenizer's pattern if it has one)."""
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=0)
                              + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path):
        """Read a file written by ``save``; a truncated, corrupted or foreign file
        raises ValueError saying what is wrong."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{path} is not a BPE file: not valid JSON ({e}); "
                             f"truncated or corrupted?") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data, where="the data"):
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{where} is not a BPE file: expected a JSON object with "
                             f"\"format\": \"{FORMAT}\"")
        if data.get("version") not in (1, 2):
            raise ValueError(f"{where}: unknown BPE file version "
                             f"{data.get('version')!r}")
        split = data.get("split")
        if (data["version"] == 2) != isinstance(split, str):
            raise ValueError(f"{where}: a version 2 BPE file has a \"split\" pattern "
                             f"(a str), version 1 none; got version {data['version']} "
                             f"with split {split!r}")
        for key in ("specials", "alphabet", "merges"):
            if not isinstance(data.get(key), list):
                raise ValueError(f"{where}: \"{key}\" must be a list, got "
                                 f"{type(data.get(key)).__name__}")
        specials, alphabet = data["specials"], data["alphabet"]
        if not all(isinstance(s, str) and s for s in specials + alphabet):
            raise ValueError(f"{where}: specials and alphabet must be non-empty "
                             f"strings")
        known = set(alphabet)
        if len(known) != len(alphabet) or set(specials) & known \
                or len(set(specials)) != len(specials):
            raise ValueError(f"{where}: specials and alphabet must be distinct symbols")
        for i, pair in enumerate(data["merges"]):
            if not (isinstance(pair, list) and len(pair) == 2
                    and all(isinstance(s, str) for s in pair)):
                raise ValueError(f"{where}: merge {i} must be a pair of strings, "
                                 f"got {pair!r}")
            if not set(pair) <= known:
                raise ValueError(f"{where}: merge {i} {pair!r} joins a symbol that "
                                 f"neither the alphabet nor an earlier merge makes")
            if pair[0].endswith(END):
                raise ValueError(f"{where}: merge {i} {pair!r} continues past the "
                                 f"end of a word")
            known.add(pair[0] + pair[1])
        return cls(alphabet, data["merges"], specials, split)

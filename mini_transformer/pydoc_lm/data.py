"""The corpus: the help pages of Python's ``pydoc_data.topics`` (what ``help("if")``
prints), split by topic into training, development and test text, and its tokens,
the bytes of its UTF-8 encoding (one token per byte, 256 in all).

The split is written once, from Python 3.11's pages, by ``write_corpus`` and shipped
in ``corpus/`` with the Python Software Foundation's licence, so that the text does
not change with the Python that runs it. The rule: the topic names, sorted, are
permuted by ``numpy.random.default_rng(SEED)``; in that order the first topics go to
the test text until it holds at least ``SHARE`` of the characters, the next to the
development text until it does too, and the rest to the training text. A topic is
never cut: a test page is one the model has never seen a line of.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

CORPUS_DIR = Path(__file__).with_name("corpus")
SPLITS = ("train", "dev", "test")
SEED = 0
SHARE = 0.1
SEPARATOR = "\n\n"    # between two topics, and before the first (the context of a
VOCAB_SIZE = 256      # text's first character): every byte is a token


def split_topics(topics: dict, seed: int = SEED, share: float = SHARE) -> dict:
    """{"test": [names], "dev": [names], "train": [names]} by the module's rule."""
    names = sorted(topics)
    order = [names[i] for i in np.random.default_rng(seed).permutation(len(names))]
    total = sum(len(topics[n]) for n in names)
    split, held = {"test": [], "dev": [], "train": []}, ("test", "dev")
    for name in order:
        part = next((s for s in held if sum(len(topics[n]) for n in split[s])
                     < share * total), "train")
        split[part].append(name)
    return split


def join(topics: dict, names) -> str:
    """The pages of ``names``, in that order, each after a blank line."""
    return "".join(SEPARATOR + topics[n] for n in names)


def write_corpus(out_dir=CORPUS_DIR, seed: int = SEED) -> dict:
    """Write train.txt, dev.txt, test.txt and split.json from this Python's
    ``pydoc_data.topics`` (run once, with Python 3.11.7, to make the shipped files).
    """
    import sys

    from pydoc_data.topics import topics

    out_dir = Path(out_dir)
    split = split_topics(topics, seed)
    for name in SPLITS:
        (out_dir / f"{name}.txt").write_text(join(topics, split[name]),
                                             encoding="utf-8")
    info = {"python": sys.version.split()[0], "seed": seed, "share": SHARE,
            "topics": split, "chars": {n: len(topics[n]) for n in sorted(topics)}}
    (out_dir / "split.json").write_text(json.dumps(info, indent=1) + "\n")
    return split


def pages(split: str) -> dict:
    """{topic: its text} of one split, in the order of the split's text."""
    info = json.loads((CORPUS_DIR / "split.json").read_text())
    text, out, at = load_text(split), {}, 0
    for name in info["topics"][split]:
        at += len(SEPARATOR)
        out[name] = text[at:at + info["chars"][name]]
        at += info["chars"][name]
    return out


def load_text(split: str) -> str:
    """The shipped text of one split: "train", "dev" or "test"."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return (CORPUS_DIR / f"{split}.txt").read_text(encoding="utf-8")


def encode(text: str) -> np.ndarray:
    """The token ids of ``text``: its UTF-8 bytes, (n_bytes,) int64."""
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)


def decode(tokens) -> str:
    """The text of byte tokens; a character cut in the middle of its bytes (a
    sample can stop anywhere) shows as U+FFFD."""
    return bytes(int(t) for t in np.asarray(tokens).reshape(-1)).decode(
        "utf-8", errors="replace")

"""The help-page language model against count-based baselines, in bits per
character, and the package's BPE against bytes as its tokens.

Tokens: the package's BPE learns words separated by single spaces, so the text's
layout (newlines, indentation, runs of spaces) must first be normalised away; for
each vocabulary size it reports the share of the development text's characters
that normalising drops, tokens per character on the normalised development text,
whether every line decodes back, and the seconds ``BPE.learn`` took. Bytes: 256
tokens, one per byte, nothing dropped.

Baselines: unigram, bigram and trigram byte models with add-k smoothing and the
interpolated Kneser–Ney trigram (``mini_transformer.pydoc_lm.baselines``), each
tuned on the development text and scored on the test text. The model: the shipped
weights, scored on the development and test text (``bits_per_character``).

    python benchmarks/lm_baselines.py            # all (BPE learning takes minutes)
    python benchmarks/lm_baselines.py --no-bpe   # baselines and the model only

Results go to benchmarks/results/lm_baselines.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import cpu_model, load_average  # noqa: E402

import mini_transformer as mt  # noqa: E402
from mini_transformer.pydoc_lm import baselines, data, load_model  # noqa: E402
from mini_transformer.pydoc_lm.files import trained_context  # noqa: E402
from mini_transformer.pydoc_lm.score import bits_per_character  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "lm_baselines.json"
BPE_SIZES = (300, 1000)


def normalised_lines(text):
    """The lines of ``text`` with their whitespace normalised (what BPE can read)."""
    return [" ".join(line.split()) for line in text.splitlines() if line.split()]


def bpe_rows(train, dev):
    lines, dev_lines = normalised_lines(train), normalised_lines(dev)
    kept = sum(len(line) for line in dev_lines) + len(dev_lines) - 1  # + a space each
    rows = []
    for size in BPE_SIZES:
        start = time.process_time()
        bpe = mt.BPE.learn(lines, vocab_size=size)
        seconds = time.process_time() - start
        n = sum(len(bpe.encode(line)) for line in dev_lines)
        rows.append({"vocab_size": len(bpe), "learn_cpu_s": round(seconds, 1),
                     "tokens_per_char": round(n / kept, 4),
                     "dropped_share": round(1 - kept / len(dev), 4),
                     "lines_round_trip": all(bpe.decode(bpe.encode(line)) == line
                                             for line in dev_lines)})
    rows.append({"vocab_size": data.VOCAB_SIZE, "learn_cpu_s": 0.0,
                 "tokens_per_char": round(len(data.encode(dev)) / len(dev), 4),
                 "dropped_share": 0.0,
                 "lines_round_trip": data.decode(data.encode(dev)) == dev,
                 "bytes": True})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-bpe", action="store_true", help="skip the BPE measurement")
    args = ap.parse_args(argv)
    train, dev, test = (data.load_text(s) for s in data.SPLITS)
    out = json.loads(OUT.read_text()) if OUT.exists() else {}
    if not args.no_bpe:
        out["tokens"] = bpe_rows(train, dev)
    start = time.process_time()
    out["baselines"] = {k: {kk: round(vv, 4) if isinstance(vv, float) else vv
                            for kk, vv in v.items()}
                        for k, v in baselines.baselines(train, dev, test).items()}
    out["baselines_cpu_s"] = round(time.process_time() - start, 2)
    params, context = load_model(), trained_context()
    out["model"] = {"dev_bpc": round(bits_per_character(params, dev, context), 4),
                    "test_bpc": round(bits_per_character(params, test, context), 4),
                    "parameters": mt.count_parameters(params), "context": context}
    out["machine"] = {"cpu": cpu_model(), "load_average": load_average(),
                      "python": platform.python_version()}
    OUT.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()

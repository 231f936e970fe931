"""The shipped translator by shape of number, and its scores on the development
and test sets.

A number's shape is its digits with each non-zero digit written d (42 -> "dd",
100,001 -> "d0000d"; 0 is its own shape): 64 shapes below a million. Each shape is
decoded whole when it has at most ``--per-shape`` numbers (2,000), else a seeded
sample of that many (``numpy.random.default_rng(0)``, shape by shape in the order
of ``SHAPES``), greedily and by beam 4 (α = 0.6), and compared with num2words'
German character for character. The table counts every number of the sample,
trained on or held out, and says how many of them are held out.

    python benchmarks/number_classes.py                   # the shape table
    python benchmarks/number_classes.py --dev MODEL ...   # development scores
    python benchmarks/number_classes.py --test            # the test set: once
    python benchmarks/number_classes.py --draws           # each shape's draws
    python benchmarks/number_classes.py --quick           # a smoke test

``--dev`` decodes the development numbers with each model given (a .npz with its
BPE beside it, or a folder) and writes their exact match, with the numbers each
gets wrong, to ``results/dev_choices.json``: the choices are made there.
``--draws`` counts each shape's share of 1,000,000 training draws, drawn by
length alone (the earlier recipe) and with a quarter of the draws uniform over the
shapes (the shipped recipe), into ``results/shape_draws.json``. ``--test`` decodes the test numbers with the shipped model, greedy and beam 4,
into ``results/test_score.json``: it is run once, for the model shipped.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from mini_transformer.number_words import load_model
from mini_transformer.number_words.data import (SHAPES, dev_test_numbers,
                                                is_held_out, number_words,
                                                shape_members)
from mini_transformer.translation import translate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cpu_model, load_average  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def shape_sample(per_shape, seed=0):
    """{shape: int64 array}: all of a shape's numbers if at most per_shape, else a
    seeded sample of per_shape of them (increasing)."""
    rng = np.random.default_rng(seed)
    out = {}
    for shape in SHAPES:
        members = shape_members(shape)
        if len(members) > per_shape:
            members = np.sort(rng.choice(members, per_shape, replace=False))
        out[shape] = members
    return out


def decode(numbers, params, bpe, beam_size, log, chunk=5000):
    """(hypotheses, references) for the numbers, in their order."""
    src, ref = (list(x) for x in zip(*number_words(numbers)))
    hyp, t0 = [], time.perf_counter()
    for start in range(0, len(src), chunk):
        hyp += translate(src[start: start + chunk], params, bpe, beam_size=beam_size)
        seconds = time.perf_counter() - t0
        log(f"  {len(hyp):,}/{len(src):,} numbers ({'greedy' if beam_size is None else f'beam {beam_size}'}),"
            f" {seconds:.0f} s")
    return hyp, ref


def score(numbers, hyp, ref):
    ok = np.array([h == r for h, r in zip(hyp, ref)])
    return dict(n=len(ok), correct=int(ok.sum()),
                exact_match=round(float(ok.mean()), 6),
                wrong=[dict(n=int(n), output=h, reference=r)
                       for n, h, r, good in zip(numbers, hyp, ref, ok) if not good])


def machine():
    return dict(cpus=os.cpu_count(), cpu=cpu_model(), python=platform.python_version(),
                numpy=np.__version__, load_average=load_average())


def shape_table(params, bpe, per_shape, log):
    sample = shape_sample(per_shape)
    numbers = np.concatenate(list(sample.values()))
    rows, t = {}, {}
    results = {}
    for name, beam in (("greedy", None), ("beam4", 4)):
        t0 = time.perf_counter()
        log(f"{name}: {len(numbers):,} numbers")
        results[name] = decode(numbers, params, bpe, beam, log)
        t[name] = round(time.perf_counter() - t0, 1)
    start = 0
    for shape, members in sample.items():
        end = start + len(members)
        row = dict(numbers=len(shape_members(shape)), decoded=len(members),
                   held_out=int(sum(is_held_out(int(n)) for n in members)))
        for name, (hyp, ref) in results.items():
            s = score(members, hyp[start:end], ref[start:end])
            row[name] = s["correct"]
            row[f"{name}_wrong"] = s["wrong"][:5]
        rows[shape] = row
        start = end
    worst = {name: min(rows, key=lambda k: rows[k][name] / rows[k]["decoded"])
             for name in results}
    return dict(
        what="every shape of number: all of a shape's numbers if at most "
             f"{per_shape:,}, else a seeded sample of {per_shape:,} (seed 0); greedy "
             "and beam 4 (alpha 0.6); trained-on and held-out numbers alike",
        bpe_tokens=len(bpe), decoded=len(numbers), seconds=t,
        minimum={name: dict(shape=k, correct=rows[k][name],
                            decoded=rows[k]["decoded"],
                            exact_match=round(rows[k][name] / rows[k]["decoded"], 6))
                 for name, k in worst.items()},
        shapes=rows, machine=machine())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="the model to score (default: the shipped one)")
    ap.add_argument("--per-shape", type=int, default=2000)
    ap.add_argument("--dev", nargs="+", metavar="MODEL",
                    help="score these models on the development set")
    ap.add_argument("--test", action="store_true",
                    help="score the shipped model on the test set (once)")
    ap.add_argument("--out", default=None,
                    help="the results file's name in results/ (default: per mode)")
    ap.add_argument("--greedy-only", action="store_true",
                    help="with --dev: greedy decoding alone")
    ap.add_argument("--draws", action="store_true",
                    help="each shape's share of the training draws, both recipes")
    ap.add_argument("--quick", action="store_true", help="20 per shape, no file")
    args = ap.parse_args(argv)

    def log(msg):
        print(msg, flush=True)

    def write(name, result):
        if not args.quick:
            path = RESULTS / name
            path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n",
                            encoding="utf-8")
            log(f"wrote {path}")

    dev, test = dev_test_numbers()
    if args.draws:
        from mini_transformer.number_words.data import shape_index, training_numbers

        n = 20_000 if args.quick else 1_000_000
        result = dict(what=f"each shape's draws among {n:,} training numbers (seed "
                           f"0): by length alone with 5% of the long ones rounded to "
                           f"thousands (earlier), and with a quarter of the draws "
                           f"uniform over the 64 shapes (shipped)")
        for name, share in (("earlier", 0.0), ("shipped", 0.25)):
            drawn = training_numbers(np.random.default_rng(0), n, 0.05, share)
            counts = np.bincount(shape_index(drawn), minlength=len(SHAPES))
            result[name] = dict(zip(SHAPES, (int(c) for c in counts)))
        for shape in SHAPES:
            log(f"{shape:>7} {result['earlier'][shape]:>8,} {result['shipped'][shape]:>8,}")
        write(args.out or "shape_draws.json", result)
        return result
    if args.dev:
        out = {}
        path = RESULTS / (args.out or "dev_choices.json")
        if path.exists() and not args.quick:
            out = json.loads(path.read_text(encoding="utf-8"))
        numbers = dev[::50] if args.quick else dev
        for model in args.dev:
            params, bpe = load_model(model)
            row = {}
            for name, beam in (("greedy", None), ("beam4", 4))[
                    :1 if args.greedy_only else 2]:
                s = score(numbers, *decode(numbers, params, bpe, beam, log))
                row[name] = s
                log(f"{model} {name}: {s['correct']}/{s['n']} = {s['exact_match']:.4%}")
            out[str(model)] = out.get(str(model), {}) | row
        write(path.name, out)
        return out
    params, bpe = load_model(args.model)
    if args.test:
        numbers = test[::50] if args.quick else test
        result = dict(what="the test set, scored once for the shipped model",
                      model=str(args.model or "shipped"), machine=machine())
        for name, beam in (("greedy", None), ("beam4", 4)):
            result[name] = score(numbers, *decode(numbers, params, bpe, beam, log))
            log(f"test {name}: {result[name]['correct']}/{result[name]['n']} = "
                f"{result[name]['exact_match']:.4%}")
        write(args.out or "test_score.json", result)
        return result
    result = shape_table(params, bpe, 20 if args.quick else args.per_shape, log)
    result["model"] = str(args.model or "shipped")
    for shape, row in result["shapes"].items():
        log(f"{shape:>7} {row['decoded']:>5} greedy {row['greedy']:>5} "
            f"beam4 {row['beam4']:>5} held out {row['held_out']}")
    log(f"minimum: {result['minimum']}")
    write(args.out or "number_classes.json", result)
    return result


if __name__ == "__main__":
    main()

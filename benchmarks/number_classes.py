"""The shipped translator on every number below a million, by class of number.

Every number 0 ... 999,999 is translated greedily by the shipped model (the
package's ``translate``) and compared with num2words' German, character for
character. The classes (a number may be in several):

    0-99, 100-999, round hundreds (n % 100 == 0, n > 0), round thousands
    (n % 1000 == 0, n > 0), 1,000-9,999, 10,000-99,999, 100,000-999,999,
    held out (n % 97 == 0, n > 0: never trained on), and all of them.

Beam 4 (α = 0.6) decodes the held-out numbers and a sample of every class (all of
a class smaller than the sample), as it is several times slower than greedy.

The references: num2words for 0 ... 999 in both languages, then for n = 1000 a + b
the rule num2words follows ("<a> thousand", then ", <b>" for b >= 100 or " and
<b>" for 0 < b < 100; German "<a>tausend<b>" with "ein" for a = 1). The rule is
checked against num2words itself on ``--check`` numbers of every class (num2words
on all million would take longer than the translation).

    python benchmarks/number_classes.py                       # all (long on 2 cores)
    python benchmarks/number_classes.py --parts 4 --part 0    # a quarter: run parts
    python benchmarks/number_classes.py --beam-part           # the beam-4 part
    python benchmarks/number_classes.py --parts 4 --merge     # 0..3, then merge
    python benchmarks/number_classes.py --quick               # a smoke test

Results go to benchmarks/results/number_classes.json.
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

import mini_transformer as mt
from mini_transformer.tasks import MAX_NUMBER, number_words
from mini_transformer.translation import translate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cpu_model, load_average  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "number_classes.json"
BOOK_DATA = ROOT / "book" / "data"


def classes(n):
    """{name: bool mask} over the int array n."""
    return {
        "0-99": n < 100,
        "100-999": (n >= 100) & (n < 1000),
        "round hundreds": (n % 100 == 0) & (n > 0),
        "round thousands": (n % 1000 == 0) & (n > 0),
        "1,000-9,999": (n >= 1000) & (n < 10_000),
        "10,000-99,999": (n >= 10_000) & (n < 100_000),
        "100,000-999,999": n >= 100_000,
        "held out": (n % mt.tasks.HELD_OUT_MODULUS == 0) & (n > 0),
        "all": np.ones(n.shape, dtype=bool),
    }


def references(numbers):
    """(English, German) of each number by the rule above, from num2words' words
    for 0 ... 999."""
    small = number_words(range(1000))
    en, de = [e for e, _ in small], [d for _, d in small]
    src, tgt = [], []
    for n in numbers:
        a, b = divmod(int(n), 1000)
        if a == 0:
            src.append(en[b])
            tgt.append(de[b])
            continue
        head = en[a] + " thousand"
        src.append(head if b == 0 else
                   head + (", " if b >= 100 else " and ") + en[b])
        tgt.append(("ein" if a == 1 else de[a]) + "tausend" + (de[b] if b else ""))
    return src, tgt


def check_references(rng, per_class):
    """The rule equals num2words on ``per_class`` random numbers of each class."""
    n = np.arange(MAX_NUMBER + 1)
    sample = np.unique(np.concatenate([
        rng.choice(n[m], min(per_class, int(m.sum())), replace=False)
        for m in classes(n).values()]))
    assert list(zip(*references(sample))) == number_words(sample), \
        "the reference rule differs from num2words"
    return len(sample)


def load(model, bpe):
    """The shipped model (the package's ``load_model`` where it exists, else
    book/data), or the files given."""
    if model is None:
        try:
            from mini_transformer.number_words import load_model
        except ImportError:
            model, bpe = BOOK_DATA / "numbers_en_de.npz", \
                BOOK_DATA / "numbers_en_de_bpe.json"
        else:
            return load_model()
    return mt.TransformerParams.load(model), mt.BPE.load(bpe)


def decode(numbers, params, bpe, beam_size, batch_size, log, chunk=20_000):
    """A bool per number: its translation equals the reference."""
    src, tgt = references(numbers)
    ok, t0 = np.zeros(len(numbers), dtype=bool), time.perf_counter()
    for start in range(0, len(numbers), chunk):
        end = min(start + chunk, len(numbers))
        hyp = translate(src[start:end], params, bpe, beam_size=beam_size,
                        batch_size=batch_size)
        ok[start:end] = [h == r for h, r in zip(hyp, tgt[start:end])]
        seconds = time.perf_counter() - t0
        log(f"  {end:,}/{len(numbers):,} numbers, {seconds:.0f} s, about "
            f"{seconds / end * (len(numbers) - end):.0f} s left")
    return ok


def table(numbers, ok):
    """{class: {n, correct, exact_match}} over the decoded numbers."""
    out = {}
    for name, m in classes(numbers).items():
        k = int(m.sum())
        if k:
            out[name] = dict(n=k, correct=int(ok[m].sum()),
                             exact_match=round(float(ok[m].mean()), 6))
    return out


def wrong(numbers, ok, params, bpe, beam_size, per_class=5):
    """A few wrong translations of each class, for the reader."""
    out = {}
    for name, m in classes(numbers).items():
        bad = numbers[m & ~ok][:per_class]
        if len(bad):
            src, tgt = references(bad)
            hyp = translate(src, params, bpe, beam_size=beam_size)
            out[name] = [dict(n=int(n), source=s, output=h, reference=r)
                         for n, s, h, r in zip(bad, src, hyp, tgt)]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="a .npz (default: the shipped model)")
    ap.add_argument("--bpe", help="its BPE .json (with --model)")
    ap.add_argument("--parts", type=int, default=1)
    ap.add_argument("--part", type=int, help="decode only numbers part, part + parts,"
                    " ... greedily, into a parts folder beside --out")
    ap.add_argument("--beam-part", action="store_true",
                    help="decode only the beam-4 numbers, into the parts folder")
    ap.add_argument("--merge", action="store_true", help="merge the parts' files")
    ap.add_argument("--beam-sample", type=int, default=1000,
                    help="numbers of each class decoded by beam 4 (held out: all)")
    ap.add_argument("--check", type=int, default=2000,
                    help="numbers of each class the reference rule is checked on")
    ap.add_argument("--batch-size", type=int, default=500,
                    help="sources per decoding batch (beam 4: a quarter)")
    ap.add_argument("--quick", action="store_true",
                    help="every 997th number, small samples: a smoke test")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)

    def log(msg):
        print(msg, flush=True)

    params, bpe = load(args.model, args.bpe)
    every = 997 if args.quick else 1
    numbers = np.arange(0, MAX_NUMBER + 1, every, dtype=np.int64)
    parts_dir = args.out.with_suffix(".parts")
    if args.part is not None:
        mine = numbers[args.part::args.parts]
        log(f"part {args.part} of {args.parts}: {len(mine):,} numbers, greedy")
        t = time.perf_counter()
        ok = decode(mine, params, bpe, None, args.batch_size, log)
        parts_dir.mkdir(parents=True, exist_ok=True)
        np.savez(parts_dir / f"part{args.part}of{args.parts}.npz", numbers=mine,
                 ok=ok, seconds=time.perf_counter() - t)
        return
    rng = np.random.default_rng(0)
    sample = args.beam_sample // (50 if args.quick else 1)
    masks = classes(numbers)
    beam_numbers = np.unique(np.concatenate(
        [numbers[masks["held out"]]] + [
            rng.choice(numbers[m], min(sample, int(m.sum())), replace=False)
            for name, m in masks.items() if name != "held out" and m.any()]))
    beam_file = parts_dir / f"beam{len(beam_numbers)}.npz"
    if args.beam_part or not (args.merge and beam_file.exists()):
        log(f"beam 4: {len(beam_numbers):,} numbers (held out, and up to {sample:,} "
            f"of each class)")
        t = time.perf_counter()
        ok_beam = decode(beam_numbers, params, bpe, 4, args.batch_size // 4, log)
        beam_seconds = time.perf_counter() - t
        if args.beam_part:
            parts_dir.mkdir(parents=True, exist_ok=True)
            np.savez(beam_file, numbers=beam_numbers, ok=ok_beam, seconds=beam_seconds)
            return
    else:
        f = np.load(beam_file)
        assert np.array_equal(f["numbers"], beam_numbers)
        ok_beam, beam_seconds = f["ok"], float(f["seconds"])
    checked = check_references(rng, 20 if args.quick else args.check)
    log(f"the reference rule equals num2words on {checked:,} numbers")
    if args.merge:
        files = [np.load(parts_dir / f"part{k}of{args.parts}.npz")
                 for k in range(args.parts)]
        ok = np.zeros(len(numbers), dtype=bool)
        for k, f in enumerate(files):
            assert np.array_equal(f["numbers"], numbers[k::args.parts])
            ok[k::args.parts] = f["ok"]
        greedy_seconds = float(sum(f["seconds"] for f in files))
    else:
        t = time.perf_counter()
        log(f"greedy: {len(numbers):,} numbers")
        ok = decode(numbers, params, bpe, None, args.batch_size, log)
        greedy_seconds = time.perf_counter() - t
    greedy_on_beam = ok[np.searchsorted(numbers, beam_numbers)]
    result = dict(
        numbers=f"0..{MAX_NUMBER} every {every}" if every > 1 else f"0..{MAX_NUMBER}",
        model=str(args.model or "shipped"), bpe_tokens=len(bpe),
        reference_rule_checked_on=checked,
        greedy=dict(classes=table(numbers, ok), seconds=round(greedy_seconds, 1),
                    wrong=wrong(numbers, ok, params, bpe, None)),
        beam4=dict(alpha=0.6, sample_per_class=sample,
                   classes=table(beam_numbers, ok_beam),
                   greedy_on_same=table(beam_numbers, greedy_on_beam),
                   seconds=round(beam_seconds, 1),
                   wrong=wrong(beam_numbers, ok_beam, params, bpe, 4)),
        machine=dict(cpus=os.cpu_count(), cpu=cpu_model(),
                     python=platform.python_version(), numpy=np.__version__, load_average=load_average()),
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    for name, row in result["greedy"]["classes"].items():
        beam = result["beam4"]["classes"].get(name, dict(n=0, exact_match=np.nan))
        log(f"{name:>16}  {row['n']:>9,}  greedy {row['exact_match']:.4%}  "
            f"beam 4 {beam['exact_match']:.4%} ({beam['n']:,})")
    log(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()

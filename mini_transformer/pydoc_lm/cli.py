"""The command line: ``pydoc-lm sample | score | train`` (or ``python -m
mini_transformer.pydoc_lm``).

    pydoc-lm sample "The while statement" --length 300 --temperature 0.8 --top-p 0.9
    pydoc-lm score --split test
    pydoc-lm train --out-dir my_model --steps 3000

Every error is one line on standard error, never a traceback. Exit status: 0 done;
1 the run failed (a model that cannot be loaded, a file that cannot be written);
2 a usage error (an option's value, an output folder that already holds a model,
without --force), found before any work; 130 stopped by Ctrl-C.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from ..lm import generate
from ..sampling import check_settings as check_sampling
from . import data
from .files import MODEL, load_model, trained_context
from .score import bits_per_character
from .train import Settings, check_settings, train

PROG = "pydoc-lm"
OUT_DIR = "pydoc_lm_model"


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (and exit status 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _number(kind, low, high=math.inf, low_open=False, high_open=False):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'a whole number' if kind is int else 'a number'}"
            ) from None
        if (math.isnan(value) or value < low or (low_open and value == low)
                or value > high or (high_open and value == high)):
            lo, hi = "(" if low_open else "[", ")" if high_open else "]"
            raise argparse.ArgumentTypeError(f"must be in {lo}{low}, {high}{hi}, got "
                                             f"{value}")
        return value
    return parse


def parser():
    s = Settings()
    ap = _Parser(prog=PROG, description="A small GPT-style language model of Python's "
                 "help pages, trained in NumPy (chapter 18 of the book).",
                 epilog="Exit status: 0 done; 1 the run failed; 2 a usage error; 130 "
                 "stopped by Ctrl-C. Errors are one line on standard error.")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sa = sub.add_parser("sample", help="continue a text with the model",
                        description="Continue PROMPT with bytes drawn from the model.")
    sa.add_argument("prompt", nargs="?", default="", metavar="PROMPT",
                    help="the text to continue, read as the start of a help page "
                         "(default: nothing, a page from its first line)")
    sa.add_argument("--length", type=_number(int, 0, 5000), default=200,
                    help="bytes to add (default: %(default)s)")
    sa.add_argument("--temperature", type=_number(float, 0, 100), default=1.0,
                    help="τ: divides the scores before the softmax; 0 is greedy "
                         "(default: %(default)s)")
    sa.add_argument("--top-k", type=_number(int, 1), default=None, metavar="K",
                    help="draw only from the K most probable bytes (default: all)")
    sa.add_argument("--top-p", type=_number(float, 0, 1, low_open=True), default=None,
                    metavar="P", help="draw only from the smallest set of most "
                    "probable bytes whose mass reaches P (default: all)")
    sa.add_argument("--seed", type=int, default=0,
                    help="seed of the draws (default: %(default)s)")
    sa.add_argument("--model", default=None, metavar="PATH",
                    help="a folder written by train, or its .npz (default: the "
                         "model shipped with the package)")
    sc = sub.add_parser("score", help="bits per character on a split of the corpus",
                        description="The model's bits per character on the training, "
                        "development or test text.")
    sc.add_argument("--split", choices=data.SPLITS, default="test",
                    help="which text (default: %(default)s)")
    sc.add_argument("--model", default=None, metavar="PATH",
                    help="as for sample (default: the shipped model)")
    tr = sub.add_parser("train", help="train a model from scratch into a folder",
                        description="Train the model from scratch (NumPy, "
                        "hand-derived gradients) and write its best weights (by the "
                        "development text) and its log to --out-dir.")
    tr.add_argument("--out-dir", default=OUT_DIR, metavar="DIR",
                    help="where to write (default: %(default)s)")
    tr.add_argument("--force", action="store_true",
                    help="overwrite a model already in --out-dir (default: refuse)")
    for name in ("steps", "seed", "d_model", "n_heads", "n_layers", "context", "batch",
                 "warmup", "eval_every"):
        tr.add_argument(f"--{name.replace('_', '-')}",
                        type=int if name == "seed" else _number(int, 1),
                        default=getattr(s, name), help="(default: %(default)s)")
    tr.add_argument("--lr", type=_number(float, 0, 1, True, True), default=s.lr,
                    help="peak learning rate (default: %(default)s)")
    tr.add_argument("--dtype", choices=("float32", "float64"), default=s.dtype,
                    help="(default: %(default)s)")
    return ap


def main(argv=None):
    """Run the command; returns its exit status (module doc)."""
    args = parser().parse_args(argv)
    try:
        return {"sample": _sample, "score": _score, "train": _train}[args.command](args)
    except KeyboardInterrupt:
        print(f"{PROG}: stopped by Ctrl-C", file=sys.stderr)
        return 130
    except (OSError, ValueError) as e:
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return 1


def _usage(command, error):
    print(f"{PROG} {command}: error: {_one_line(error)}", file=sys.stderr)
    return 2


def _sample(args):
    try:
        check_sampling(args.temperature, args.top_k, args.top_p)
    except ValueError as e:
        return _usage("sample", e)
    params = load_model(args.model)
    start = len(data.encode(data.SEPARATOR))   # a page's context: a blank line first
    tokens, _ = generate(params, data.encode(data.SEPARATOR + args.prompt), args.length,
                         temperature=args.temperature, top_k=args.top_k,
                         top_p=args.top_p, rng=np.random.default_rng(args.seed),
                         context=trained_context(args.model))
    sys.stdout.write(data.decode(tokens[start:]) + "\n")
    return 0


def _score(args):
    params = load_model(args.model)
    bpc = bits_per_character(params, data.load_text(args.split),
                             trained_context(args.model))
    print(f"{args.split}: {bpc:.4f} bits per character")
    return 0


def _train(args):
    names = [f.name for f in Settings.__dataclass_fields__.values()]
    settings = Settings(**{n: getattr(args, n) for n in names})
    try:
        check_settings(settings)
        out = Path(args.out_dir)
        if out.exists() and not out.is_dir():
            raise ValueError(f"--out-dir {out} is a file, not a folder")
        if (out / MODEL).exists() and not args.force:
            raise ValueError(f"--out-dir {out} already holds a model; --force "
                             f"overwrites it")
    except ValueError as e:
        return _usage("train", e)
    train(settings, out, log=lambda text: print(text, flush=True))
    return 0


def _one_line(error):
    return " ".join(str(error).split()) or type(error).__name__

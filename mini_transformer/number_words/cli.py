"""The command line: ``python -m mini_transformer.number_words train | translate``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..bpe import BPE
from ..params import TransformerParams
from ..translation import translate
from .train import BPE_FILE, DATA, MODEL, Settings, train


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m mini_transformer.number_words",
        description="English number words to German, the paper's experiment in "
                    "miniature.")
    sub = ap.add_subparsers(dest="command", required=True)
    tr = sub.add_parser("train", help="train from scratch, write the model")
    tr.add_argument("--steps", type=int, default=Settings.steps)
    tr.add_argument("--seed", type=int, default=Settings.seed)
    tr.add_argument("--device", default=None,
                    help="run on torch tensors on this device (e.g. cuda, cpu)")
    tr.add_argument("--dtype", default=Settings.dtype)
    tr.add_argument("--p-drop", type=float, default=Settings.p_drop)
    tr.add_argument("--max-tokens", type=int, default=Settings.max_tokens)
    tr.add_argument("--warmup", type=int, default=Settings.warmup)
    tr.add_argument("--out-dir", default=str(DATA))
    tr.add_argument("--average-last", type=int, default=Settings.average_last)
    tr.add_argument("--n-bpe", type=int, default=Settings.n_bpe)
    tl = sub.add_parser("translate", help="translate English number words")
    tl.add_argument("texts", nargs="+")
    tl.add_argument("--beam", type=int, default=4)
    tl.add_argument("--alpha", type=float, default=0.6)
    tl.add_argument("--model-dir", default=str(DATA))
    args = ap.parse_args(argv)
    if args.command == "train":
        settings = Settings(steps=args.steps, seed=args.seed, device=args.device,
                            dtype=args.dtype, p_drop=args.p_drop,
                            max_tokens=args.max_tokens, warmup=args.warmup,
                            average_last=args.average_last, n_bpe=args.n_bpe)
        train(settings, out_dir=args.out_dir, log=_print_line,
              progress=_status if sys.stderr.isatty() else None)
    else:
        params = TransformerParams.load(Path(args.model_dir) / MODEL)
        bpe = BPE.load(Path(args.model_dir) / BPE_FILE)
        for text, out in zip(args.texts, translate(args.texts, params, bpe,
                                                   args.beam, args.alpha)):
            print(f"{text} -> {out}")
    return 0


def _status(text):
    """The progress bar: one status line on the terminal, rewritten in place."""
    sys.stderr.write("\r" + text)
    sys.stderr.flush()


def _print_line(text):
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")  # clear the status line first
    print(text, flush=True)

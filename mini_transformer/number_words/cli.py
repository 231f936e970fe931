"""The command line: ``number-words train | translate`` (or ``python -m
mini_transformer.number_words``).

    number-words translate "three hundred and forty-two" "Forty two"
    printf 'seven\\nninety nine\\n' | number-words translate --format tsv
    number-words train --out-dir my_model

``translate`` reads its inputs from the arguments, or from standard input (one a
line) when it is given none or ``-``; it prints one line per input, in order. Every
error is one line on standard error, never a traceback. Exit status: 0 done; 1 the
run failed (a model that cannot be loaded, a file that cannot be written, an input
the translator refuses); 2 a usage error (an option's value, a device this machine
lacks, an output folder that already holds a run's files, without --force), found
before any work; 130 stopped by Ctrl-C (``train`` saves its work first and says
where); 141 the reader of the output went away (``| head``): it ends quietly.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import metadata

from ..translation import translate
from .files import load_model
from .normalize import NotANumber, normalize
from .train import Interrupted, SettingError, Settings, check_device, \
    check_out_dir, check_settings, train

PROG = "number-words"
OUT_DIR = "number_words_model"


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (and exit status 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _int_at_least(low):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") \
                from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {low} or more, got {value}")
        return value
    return parse


def _float_in(low, high):
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not low <= value < high:
            raise argparse.ArgumentTypeError(f"must be in [{low}, {high}), got {value}")
        return value
    return parse


def _version():
    try:
        return metadata.version("mini_transformer")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def parser():
    s = Settings()
    ap = _Parser(prog=PROG, description="English number words to German, the "
                 "paper's experiment in miniature (chapter 17 of the book).",
                 epilog="Exit status: 0 done; 1 the run failed (a model that cannot "
                 "be loaded, a file that cannot be written, an input refused); 2 a "
                 "usage error; 130 stopped by Ctrl-C. Errors are one line on "
                 "standard error.")
    ap.add_argument("--version", action="version",
                    version=f"{PROG} (mini_transformer {_version()})")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    tl = sub.add_parser(
        "translate", help="translate English number words into German",
        description="Translate English number words (zero to 999,999) into German "
        "with the trained model (every shape of number right on its test set). Any "
        "case, extra spaces, \"forty two\" or \"forty-two\" (or a Unicode dash), with "
        "or without \"and\" and commas, \"a hundred\", \"nineteen hundred\", "
        "punctuation at the end; anything else gets a message instead of a "
        "translation.")
    tl.add_argument("texts", nargs="*", metavar="TEXT",
                    help="the numbers in words, one argument each (none, or -: read "
                         "standard input, one a line)")
    how = tl.add_mutually_exclusive_group()
    how.add_argument("--beam", type=_int_at_least(1), default=4, metavar="N",
                     help="beam search with N hypotheses (default: %(default)s, the "
                          "paper's)")
    how.add_argument("--greedy", action="store_true",
                     help="greedy decoding instead of a beam (default: off)")
    tl.add_argument("--alpha", type=_float_in(0, float("inf")), default=0.6,
                    help="length penalty exponent, lp = ((5 + |Y|) / 6)^alpha "
                         "(default: %(default)s, the paper's)")
    tl.add_argument("--format", choices=("text", "json", "tsv"), default="text",
                    help="text: 'input -> German'; json: one object per line; tsv: "
                         "input, German, score, error (default: %(default)s)")
    tl.add_argument("--model", default=None, metavar="PATH",
                    help="a folder written by train, or its .npz (default: the model "
                         "shipped with the package)")
    tr = sub.add_parser(
        "train", help="train a model from scratch and write it to a folder",
        description="Train the model from scratch (NumPy, hand-derived gradients; "
        "or torch with --device) and write it, its BPE, its log and checkpoints to "
        "--out-dir. Ctrl-C saves the weights so far.")
    tr.add_argument("--out-dir", default=OUT_DIR, metavar="DIR",
                    help="where to write (default: %(default)s, in the current "
                         "folder)")
    tr.add_argument("--force", action="store_true",
                    help="replace the files of an earlier run in --out-dir, all of "
                         "them (default: refuse)")
    tr.add_argument("--steps", type=_int_at_least(1), default=s.steps,
                    help="training steps (default: %(default)s)")
    tr.add_argument("--final", type=_int_at_least(0), default=None, metavar="N",
                    help="development numbers the final evaluation decodes, 0 to "
                         "skip it and the last step's check (default: all)")
    tr.add_argument("--seed", type=_int_at_least(0), default=s.seed,
                    help="seed of every random draw (default: %(default)s)")
    tr.add_argument("--device", default=None,
                    help="run on torch tensors on this device, e.g. cpu, cuda "
                         "(default: NumPy)")
    tr.add_argument("--dtype", choices=("float32", "float64"), default=s.dtype,
                    help="floating-point type (default: %(default)s)")
    tr.add_argument("--p-drop", type=_float_in(0, 1), default=s.p_drop,
                    help="dropout rate (default: %(default)s)")
    tr.add_argument("--max-tokens", type=_int_at_least(1), default=s.max_tokens,
                    help="tokens per batch, each side (default: %(default)s)")
    tr.add_argument("--warmup", type=_int_at_least(1), default=s.warmup,
                    help="learning-rate warm-up steps (default: %(default)s)")
    tr.add_argument("--average-last", type=_int_at_least(0), default=None,
                    help="checkpoints averaged into the model, one every "
                         f"{s.average_every} steps; 0 or 1: the last weights "
                         f"(default: {s.average_last}, or as many as --steps keeps)")
    tr.add_argument("--n-bpe", type=_int_at_least(1), default=s.n_bpe,
                    help="training numbers the BPE is learned on "
                         "(default: %(default)s)")
    return ap


def main(argv=None):
    """Run the command; returns its exit status (module doc)."""
    args = parser().parse_args(argv)
    try:
        return _translate(args) if args.command == "translate" else _train(args)
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    except Interrupted as e:
        _print_line(f"{PROG}: {e}", sys.stderr)
        return 130
    except KeyboardInterrupt:
        _print_line(f"{PROG}: stopped by Ctrl-C" + (" before the first step: "
                    "nothing to save" if args.command == "train" else ""), sys.stderr)
        return 130
    except (OSError, ValueError) as e:
        _print_line(f"{PROG}: error: {_one_line(e)}", sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 (one line, as every error; never a traceback)
        _print_line(f"{PROG}: error: {type(e).__name__}: {_one_line(e)}", sys.stderr)
        return 1


def _train(args):
    settings = Settings(steps=args.steps, seed=args.seed, device=args.device,
                        dtype=args.dtype, p_drop=args.p_drop,
                        max_tokens=args.max_tokens, warmup=args.warmup,
                        average_last=_average_last(args), n_bpe=args.n_bpe,
                        n_final=args.final)
    try:   # every check before the first step: a usage error loses no work
        check_settings(settings)
        check_device(settings.device, settings.dtype)
        out_dir = check_out_dir(args.out_dir, args.force)
    except SettingError as e:
        option = "--" + {"n_final": "final"}.get(e.name, e.name).replace("_", "-")
        print(f"{PROG} train: error: {option}: {_one_line(e)}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as e:
        option = "--device" if str(e).startswith(("device", "dtype")) \
            else "--out-dir"
        print(f"{PROG} train: error: {option}: {_one_line(e)}", file=sys.stderr)
        return 2
    train(settings, out_dir=out_dir, log=lambda text: _print_line(text, sys.stdout),
          progress=_status if sys.stderr.isatty() else None, force=args.force)
    return 0


def _average_last(args):
    """--average-last as given (checked), or the default capped at the checkpoints
    --steps keeps (one every average_every steps, and the last)."""
    s = Settings()
    if args.average_last is not None:
        return args.average_last
    return min(s.average_last, -(-args.steps // s.average_every))


def _translate(args):
    texts = args.texts
    if texts in ([], ["-"]):
        if sys.stdin.isatty():
            print("reading numbers in words, one a line (Ctrl-D to end)",
                  file=sys.stderr)
        # bytes that are not UTF-8 stay as lone surrogates: that line is refused
        raw = getattr(sys.stdin, "buffer", None)      # None: a text stream given
        texts = (raw.read().decode("utf-8", "surrogateescape") if raw is not None
                 else sys.stdin.read()).splitlines()
    readable, refused = {}, {}
    for i, text in enumerate(texts):
        try:
            readable[i] = normalize(text)
        except NotANumber as e:
            refused[i] = e
    german, scores = [], []
    if readable or args.model is not None:      # a model named is always checked
        params, bpe = load_model(args.model)
    if readable:
        german, scores = translate(list(readable.values()), params, bpe,
                                   beam_size=None if args.greedy else args.beam,
                                   alpha=args.alpha, return_scores=True)
    done = dict(zip(readable, zip(german, scores)))
    for i, text in enumerate(texts):
        print(_line(args.format, text, readable.get(i), *done.get(i, (None, None)),
                    refused.get(i)))
    return 1 if refused else 0


def _line(fmt, text, normal, german, score, error):
    """One output line: for an input, its translation and score, or its error."""
    if fmt == "json":
        record = {"input": _printable(text)}
        record |= ({"error": str(error), "kind": error.kind} if error else
                   {"normalized": normal, "german": german, "score": round(score, 6)})
        return json.dumps(record, ensure_ascii=False)
    if fmt == "tsv":
        cells = [_printable(text), "", "", str(error)] if error else [text, german,
                                                           f"{score:.6f}", ""]
        return "\t".join(" ".join(c.split()) for c in cells)
    text = _printable(" ".join(text.split()))
    text = text if len(text) <= 100 else text[:97] + "..."
    return f"{text} -> error: {error}" if error else f"{text} -> {german}"


def _printable(text):
    """text with control characters and undecodable bytes written as escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _one_line(error):
    text = " ".join(str(error).split()) or type(error).__name__
    return text.removeprefix("[Errno 2] ")


def _status(text):
    """The progress bar: one status line on the terminal, rewritten in place."""
    sys.stderr.write("\r\033[K" + text)
    sys.stderr.flush()


def _print_line(text, stream):
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")  # clear the status line first
        sys.stderr.flush()
    try:
        print(text, file=stream, flush=True)
    except BrokenPipeError:   # train's log read by a reader gone: train on, quietly
        if stream is not sys.stdout:
            raise
        _quiet_stdout()


def _quiet_stdout():
    """Send what is left for standard output to /dev/null (its reader is gone), so
    that the interpreter's last flush says nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass

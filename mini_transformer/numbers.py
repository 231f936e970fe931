"""English number words to German, the paper's experiment in miniature.

    python -m mini_transformer.numbers train        # writes book/data/numbers_en_de*
    python -m mini_transformer.numbers translate "three hundred and forty-two"

``train`` learns a shared BPE on training numbers (never a held-out one, n % 97 ==
0), then trains the paper's post-LN model at d_model 64 (2 + 2 layers, 4 heads)
from scratch with the NumPy hand gradients (``loss_and_grads``), label smoothing
0.1, dropout, Adam and the paper's learning-rate schedule, and keeps the average of
the last 5 checkpoints (§6.1); ``--device cuda`` runs the same functions on torch
tensors. It prints step, loss, learning rate and the held-out exact match, and writes
the model, its BPE and the training log.
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

from .batching import batch_by_length
from .bpe import BPE
from .checkpoint import average_params
from .optim import AdamState, adam_step, learning_rate
from .params import TransformerParams
from .tasks import HELD_OUT_MODULUS, MAX_NUMBER, number_words, split_numbers
from .transformer import loss_and_grads
from .translation import exact_match, translate

DATA = Path(__file__).resolve().parents[1] / "book" / "data"
MODEL, BPE_FILE, LOG = "numbers_en_de.npz", "numbers_en_de_bpe.json", \
    "numbers_en_de_log.json"
LAST, EARLY = "numbers_en_de_last.npz", "numbers_en_de_step{step}.npz"


DIGIT_SHARE = np.array([10, 90, 900, 9_000, 90_000, 900_000]) / 1_000_000


def training_numbers(rng, n):
    """n training numbers (held-out ones skipped): a number of digits d = 1..6, then a
    number of d digits uniformly. d is drawn half from the uniform 1/6 and half from
    its share of the numbers below a million (90% have six digits): the long numbers
    that dominate the held-out set are drawn most, and the short ones, which a model
    trained on six digits alone may never learn to end early, are still seen."""
    p_digits = 0.5 / 6 + 0.5 * DIGIT_SHARE
    digits = rng.choice(np.arange(1, 7), size=4 * n, p=p_digits)
    low = np.where(digits == 1, 0, 10 ** (digits - 1))
    numbers = low + (rng.random(4 * n) * (10 ** digits - low)).astype(np.int64)
    numbers = numbers[numbers % HELD_OUT_MODULUS != 0]
    return np.minimum(numbers[:n], MAX_NUMBER)


def encode_pairs(pairs, bpe):
    """(src, tgt) id lists: source + EOS, and BOS + target + EOS (so that tgt[:-1]
    is the decoder's input and tgt[1:] what it must predict)."""
    src = [bpe.encode(s) + [bpe.eos_id] for s, _ in pairs]
    tgt = [[bpe.bos_id, *bpe.encode(t), bpe.eos_id] for _, t in pairs]
    return src, tgt


def train(steps=2000, seed=0, d_model=64, n_heads=4, n_layers=2, vocab_size=500,
          p_drop=0.1, label_smoothing=0.1, warmup=200, max_tokens=3000,
          eval_every=250, n_eval=300, device=None, dtype="float32", out_dir=DATA,
          n_chunk=10_000, n_bpe=5000, n_final=None, average_last=5,
          average_every=50, keep_steps=(500,), log=print, progress=None):
    """Train from scratch; write the model, the BPE and the log to ``out_dir``.

    The data is a stream: chunks of ``n_chunk`` fresh training numbers, each cut into
    batches by length (``batch_by_length``, a budget of ``max_tokens``) that are used
    in random order. Every ``average_every`` steps the weights are kept, and the model
    written is the average of the last ``average_last`` of them (§6.1; 0 or 1: the
    last weights). Also written: the last weights (``LAST``) and the weights after
    each step in ``keep_steps`` (``EARLY``, formatted with the step).
    n_final: how many held-out numbers the final evaluation decodes (None: all, 0:
    none); n_bpe: how many training numbers make the BPE's corpus; out_dir None:
    write nothing; progress: called with a one-line status after every step (the
    command's progress bar), log: with each evaluation's line. The random draws come
    in a fixed order (BPE corpus, weights, then
    the data chunks), so a shorter run repeats the first steps of a longer one.
    Returns (params as NumPy, bpe, log dict)."""
    t_start = time.perf_counter()
    rng = np.random.default_rng(seed)
    _, held = split_numbers()
    bpe = BPE.learn([t for p in number_words(training_numbers(rng, n_bpe)) for t in p],
                    vocab_size)
    params = TransformerParams.random(rng, vocab_size=len(bpe), d_model=d_model,
                                      n_heads=n_heads, n_layers=n_layers)
    eval_rng = np.random.default_rng(seed + 2)
    eval_src, eval_ref = zip(*number_words(eval_rng.choice(held, n_eval,
                                                           replace=False)))
    xp_params, to_array, drop_rng = _backend(params, device, dtype, seed)
    state = AdamState.zeros_like(xp_params)
    history, losses, batches, snapshots, kept = [], [], [], [], {}
    log(f"BPE of {len(bpe)} tokens, {len(held)} numbers held out; "
        f"{time.perf_counter() - t_start:.1f} s")
    t0, step = time.perf_counter(), 0
    while step < steps:
        if not batches:  # a new chunk of the data stream
            src, tgt = encode_pairs(number_words(training_numbers(rng, n_chunk)), bpe)
            batches = batch_by_length(src, tgt, max_tokens, bpe.pad_id, rng)
        s, t = batches.pop()
        step += 1
        lr = learning_rate(step, d_model, warmup)
        loss, grads = loss_and_grads(
            xp_params, to_array(s), to_array(t[:, :-1]), to_array(t[:, 1:]),
            label_smoothing, bpe.pad_id, src_mask=_key_mask(s, bpe.pad_id),
            p_drop=p_drop, rng=drop_rng)
        xp_params, state = adam_step(xp_params, grads, state, lr)
        losses.append(round(float(loss), 5))
        if progress is not None:
            progress(f"step {step:5d}/{steps}  loss {losses[-1]:.4f}  lr {lr:.2e}")
        if step % average_every == 0 or step == steps:
            snapshots = [*snapshots, xp_params][-max(average_last, 1):]
        if step in keep_steps:
            kept[step] = _to_numpy(xp_params)
        if step % eval_every == 0 or step == steps:
            em = exact_match(translate(eval_src, xp_params, bpe, beam_size=None),
                             eval_ref)
            seconds = time.perf_counter() - t0
            history.append(dict(step=step, loss=losses[-1], lr=lr,
                                held_out_exact_match=em, seconds=round(seconds, 2)))
            log(f"step {step:5d}  loss {float(loss):.4f}  lr {lr:.2e}  "
                f"held-out exact match {em:.3f} (greedy, {n_eval})  {seconds:.0f} s")
    train_seconds = time.perf_counter() - t0
    last = _to_numpy(xp_params)
    params = _to_numpy(average_params(snapshots)) if average_last > 1 else last
    final = {}
    if n_final != 0:
        sources, refs = zip(*number_words(held[:n_final]))
        for name, p, beam in (("greedy", params, None), ("beam4", params, 4),
                              ("last_greedy", last, None)):
            final[name] = exact_match(translate(sources, p, bpe, beam_size=beam), refs)
            log(f"held-out exact match, all {len(refs)}: {name} {final[name]:.4f}")
    record = dict(task="English number words to German (num2words), n < 1,000,000",
                  held_out=f"n % {HELD_OUT_MODULUS} == 0 ({len(held)} numbers)",
                  settings=dict(steps=steps, seed=seed, d_model=d_model,
                                n_heads=n_heads, n_layers=n_layers,
                                vocab_size=len(bpe), p_drop=p_drop,
                                label_smoothing=label_smoothing, warmup=warmup,
                                max_tokens=max_tokens, dtype=dtype, n_chunk=n_chunk,
                                average_last=average_last,
                                average_every=average_every, n_bpe=n_bpe,
                                keep_steps=list(keep_steps),
                                device=str(device or "numpy")),
                  machine=dict(cpus=os.cpu_count(), processor=platform.machine(),
                               numpy=np.__version__),
                  train_seconds=round(train_seconds, 1),
                  held_out_exact_match=final, log=history, losses=losses)
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        params.save(out_dir / MODEL)
        last.save(out_dir / LAST)
        for k, p in kept.items():
            p.save(out_dir / EARLY.format(step=k))
        bpe.save(out_dir / BPE_FILE)
        (out_dir / LOG).write_text(json.dumps(record, indent=1) + "\n")
        log(f"wrote {out_dir / MODEL} and the rest to {out_dir}")
    return params, bpe, record


def _to_numpy(params):
    return params.map(lambda a: np.asarray(a.cpu() if hasattr(a, "cpu") else a,
                                           dtype=np.float32))


def _key_mask(src, pad_id):
    """True where a source position holds a token (not padding): (batch, 1, n_src)."""
    return (src != pad_id)[:, None, :]


def _backend(params, device, dtype, seed):
    """(params, to_array, dropout rng) for NumPy (device None) or torch on device."""
    if device is None:
        dt = np.dtype(dtype)
        return (params.map(lambda a: a.astype(dt)), lambda a: a,
                np.random.default_rng(seed + 1))
    import torch

    dt = getattr(torch, dtype)
    return (params.map(lambda a: torch.as_tensor(a, dtype=dt, device=device)),
            lambda a: torch.as_tensor(a, device=device),
            torch.Generator(device=device).manual_seed(seed + 1))


def _status(text):
    """The progress bar: one status line on the terminal, rewritten in place."""
    sys.stderr.write("\r" + text)
    sys.stderr.flush()


def _print_line(text):
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")  # clear the status line first
    print(text, flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m mini_transformer.numbers",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    tr = sub.add_parser("train", help="train from scratch, write the model")
    tr.add_argument("--steps", type=int, default=2000)
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--device", default=None,
                    help="run on torch tensors on this device (e.g. cuda, cpu)")
    tr.add_argument("--dtype", default="float32")
    tr.add_argument("--p-drop", type=float, default=0.1)
    tr.add_argument("--max-tokens", type=int, default=3000)
    tr.add_argument("--warmup", type=int, default=200)
    tr.add_argument("--out-dir", default=str(DATA))
    tr.add_argument("--average-last", type=int, default=5)
    tr.add_argument("--n-bpe", type=int, default=5000)
    tl = sub.add_parser("translate", help="translate English number words")
    tl.add_argument("texts", nargs="+")
    tl.add_argument("--beam", type=int, default=4)
    tl.add_argument("--alpha", type=float, default=0.6)
    tl.add_argument("--model-dir", default=str(DATA))
    args = ap.parse_args(argv)
    if args.command == "train":
        train(steps=args.steps, seed=args.seed, device=args.device, dtype=args.dtype,
              p_drop=args.p_drop, max_tokens=args.max_tokens, warmup=args.warmup,
              out_dir=args.out_dir, average_last=args.average_last,
              n_bpe=args.n_bpe, log=_print_line,
              progress=_status if sys.stderr.isatty() else None)
    else:
        params = TransformerParams.load(Path(args.model_dir) / MODEL)
        bpe = BPE.load(Path(args.model_dir) / BPE_FILE)
        for text, out in zip(args.texts, translate(args.texts, params, bpe,
                                                   args.beam, args.alpha)):
            print(f"{text} -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

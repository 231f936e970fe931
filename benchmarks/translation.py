"""The translation chapter's model: training speed and decoding speed.

1. One training step (forward, backward, Adam) of the numbers model (post-LN,
   d_model 64, 2 + 2 layers, 4 heads, d_ff 256, BPE of 500 tokens, a batch of
   about 3,000 tokens, dropout 0.1, label smoothing 0.1, float32) three ways: NumPy
   with the hand gradients (``loss_and_grads``), and ``torch.nn.Transformer`` with
   autograd and ``torch.optim.Adam`` at the same size, the same schedule.
2. Time to >= 99% development exact match (greedy, on 500 development numbers checked
   every 50 steps; evaluation time not counted), both ways, from the same start.
3. Decoding all 5,181 development numbers with the committed model: greedy and beam 4
   (α = 0.6), seconds and exact match.
4. Characters against subwords: the same model, the same NumPy training, on the
   BPE's tokens and on single characters, for the same seconds of training; held-out
   exact match and chrF (greedy, 500 numbers) at four moments of that time.

    .venv/bin/python benchmarks/translation.py            # several minutes on 2 cores
    .venv/bin/python benchmarks/translation.py --quick    # a smoke test in seconds

Results go to benchmarks/results/translation.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import platform
import time
from pathlib import Path

import numpy as np
import torch

import mini_transformer as mt
from mini_transformer.number_words import encode_pairs, load_model, training_numbers
from mini_transformer.optim import AdamState, adam_step, learning_rate
from mini_transformer.number_words.data import dev_test_numbers, number_words

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import TorchNNTrainer, median_time  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "translation.json"
SIZE = dict(d_model=64, n_heads=4, n_layers=2, d_ff=256)
P_DROP, SMOOTHING, WARMUP, MAX_TOKENS, VOCAB = 0.1, 0.1, 200, 3000, 500


def setup(seed=0, n_pool=30_000, n_eval=500, n_bpe=5000):
    rng = np.random.default_rng(seed)
    bpe = mt.BPE.learn([t for p in number_words(training_numbers(rng, n_bpe))
                        for t in p], VOCAB)
    src, tgt = encode_pairs(number_words(training_numbers(rng, n_pool)), bpe)
    held, _ = dev_test_numbers()          # development numbers: never the test's
    held = rng.choice(held, n_eval, replace=False)
    evaluation = number_words(held)
    params = mt.TransformerParams.random(rng, vocab_size=len(bpe), d_model=64,
                                         n_heads=4, n_layers=2)
    return rng, bpe, src, tgt, evaluation, params.map(lambda a: a.astype(np.float32))


class NumpyTrainer:
    """The package: NumPy arrays, hand gradients, the package's Adam."""

    def __init__(self, params, bpe, seed):
        self.params, self.bpe = params, bpe
        self.state = AdamState.zeros_like(params)
        self.rng = np.random.default_rng(seed)

    def step(self, s, t, step):
        lr = learning_rate(step, SIZE["d_model"], WARMUP)
        loss, grads = mt.loss_and_grads(
            self.params, s, t[:, :-1], t[:, 1:], label_smoothing=SMOOTHING,
            ignore_index=self.bpe.pad_id,
            src_mask=mt.padding_mask(np.sum(s != self.bpe.pad_id, axis=1), s.shape[1]),
            p_drop=P_DROP, rng=self.rng)
        self.params, self.state = adam_step(self.params, grads, self.state, lr)
        return float(loss)

    def eval_params(self):
        return self.params


def torch_trainer(params, bpe, seed):
    """torch.nn.Transformer (post-LN, no final norms, dropout 0.1) with the same
    tied embedding, √d_model scale and sinusoidal encoding; autograd; torch Adam."""
    return TorchNNTrainer(params, pad_id=bpe.pad_id, p_drop=P_DROP,
                          label_smoothing=SMOOTHING, warmup=WARMUP, seed=seed)


def step_time(trainer, batches, n):
    """The median seconds of n steps, after 2 untimed ones."""
    i = iter(range(n + 2))

    def step():
        k = next(i)
        s, t = batches[k % len(batches)]
        trainer.step(s, t, 100 + k)

    return median_time(step, n, untimed=2)


def time_to_99(trainer, src, tgt, bpe, evaluation, rng, max_steps, every=50):
    sources, refs = [s for s, _ in evaluation], [t for _, t in evaluation]
    seconds, batches, acc = 0.0, [], 0.0
    for step in range(1, max_steps + 1):
        if not batches:
            batches = mt.batching.batch_by_length(src, tgt, MAX_TOKENS, bpe.pad_id, rng)
        s, t = batches.pop()
        t0 = time.perf_counter()
        trainer.step(s, t, step)
        seconds += time.perf_counter() - t0
        if step % every == 0:
            acc = mt.exact_match(mt.translate(sources, trainer.eval_params(), bpe,
                                              beam_size=None), refs)
            print(f"  step {step}: {seconds:.1f} s, held-out exact match {acc:.3f}",
                  flush=True)
            if acc >= 0.99:
                break
    return dict(steps=step, seconds=round(seconds, 1), exact_match=acc)


def chars_vs_subwords(bpe, pool, evaluation, seconds, seed=0):
    """Train on BPE tokens and on characters for the same training seconds."""
    sources, refs = [s for s, _ in evaluation], [t for _, t in evaluation]
    texts = [t for p in pool for t in p]  # no pair is that frequent: no merges
    chars = mt.BPE.learn(texts, vocab_size=10_000, min_frequency=10 * len(texts))
    assert not chars.merges and len(chars) == 3 + len(chars.alphabet)
    out = {}
    for name, tok in (("subwords", bpe), ("characters", chars)):
        rng = np.random.default_rng(seed)
        src, tgt = encode_pairs(pool, tok)
        params = mt.TransformerParams.random(rng, vocab_size=len(tok), **SIZE)
        trainer = NumpyTrainer(params.map(lambda a: a.astype(np.float32)), tok, 1)
        elapsed, step, batches, rows = 0.0, 0, [], []
        for mark in (seconds / 4, seconds / 2, 3 * seconds / 4, seconds):
            while elapsed < mark:
                if not batches:
                    batches = mt.batching.batch_by_length(src, tgt, MAX_TOKENS,
                                                          tok.pad_id, rng)
                s, t = batches.pop()
                step += 1
                t0 = time.perf_counter()
                trainer.step(s, t, step)
                elapsed += time.perf_counter() - t0
            hyps = mt.translate(sources, trainer.eval_params(), tok, beam_size=None)
            rows.append(dict(seconds=round(elapsed, 1), steps=step,
                             exact_match=mt.exact_match(hyps, refs),
                             chrf=round(mt.corpus_chrf(hyps, refs), 2)))
            print(f"  {name}: {rows[-1]}", flush=True)
        out[name] = dict(mean_target_tokens=round(float(np.mean(
            [len(t) - 2 for t in tgt])), 2), mean_source_tokens=round(float(np.mean(
                [len(x) - 1 for x in src])), 2), after=rows)
    return out


def decoding(n=None):
    params, bpe = load_model()
    held, _ = dev_test_numbers()          # development numbers: never the test's
    pairs = number_words(held[:n])
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    out = {}
    for name, beam in (("greedy", None), ("beam4", 4)):
        t0 = time.perf_counter()
        hyps = mt.translate(sources, params, bpe, beam_size=beam)
        out[name] = dict(seconds=round(time.perf_counter() - t0, 2),
                         exact_match=mt.exact_match(hyps, refs),
                         chrf=round(mt.corpus_chrf(hyps, refs), 3))
        print(f"  {name}: {out[name]}", flush=True)
    out["beam4_over_greedy"] = round(out["beam4"]["seconds"]
                                     / out["greedy"]["seconds"], 2)
    out["n"] = len(refs)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true",
                    help="a few steps and decodes, no time to 99%%")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--max-steps", type=int, default=3000,
                    help="give up the time to 99%% after this many steps (0: skip it)")
    ap.add_argument("--chars-seconds", type=float, default=120,
                    help="training seconds for characters vs subwords (0: skip it)")
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    n_pool, n_bpe = (500, 300) if args.quick else (30_000, 5000)
    rng, bpe, src, tgt, evaluation, params = setup(n_pool=n_pool, n_bpe=n_bpe)
    max_tokens = 300 if args.quick else MAX_TOKENS
    batches = mt.batching.batch_by_length(src, tgt, max_tokens, bpe.pad_id, rng)[:10]
    result = dict(machine=platform.processor() or platform.machine(),
                  torch_threads=torch.get_num_threads(), size=SIZE, p_drop=P_DROP,
                  max_tokens=max_tokens, warmup=WARMUP)
    n = 2 if args.quick else 10
    result["step_seconds"] = {
        "numpy_hand": step_time(NumpyTrainer(params, bpe, 1), batches, n),
        "torch_nn_transformer": step_time(torch_trainer(params, bpe, 1), batches, n)}
    result["step_ratio_numpy_over_torch"] = round(
        result["step_seconds"]["numpy_hand"]
        / result["step_seconds"]["torch_nn_transformer"], 2)
    print("step seconds:", result["step_seconds"], flush=True)
    result["time_to_99"] = {}
    trainers = (("numpy_hand", NumpyTrainer), ("torch_nn_transformer", torch_trainer))
    for name, cls in trainers if args.max_steps > 0 and not args.quick else ():
        print(f"time to 99%, {name}:", flush=True)
        result["time_to_99"][name] = time_to_99(
            cls(params, bpe, 1), src, tgt, bpe, evaluation,
            np.random.default_rng(2), max_steps=args.max_steps)
    if args.chars_seconds > 0 and not args.quick:
        print(f"characters vs subwords, {args.chars_seconds} s each:", flush=True)
        pool = number_words(training_numbers(np.random.default_rng(3), n_pool))
        result["chars_vs_subwords"] = chars_vs_subwords(bpe, pool, evaluation,
                                                        args.chars_seconds)
    print("decoding the held-out numbers:", flush=True)
    result["decoding"] = decoding(20 if args.quick else None)
    out = Path(args.out)
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

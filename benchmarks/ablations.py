"""Ablations of the paper's training recipe: the reverse task (chapter 15) and the
number-words translator (chapter 17).

    python benchmarks/ablations.py                  # the full run (about an hour on 2 cores)
    python benchmarks/ablations.py --only layernorm # one experiment; the others kept
    python benchmarks/ablations.py --quick          # a smoke test (seconds)
    python benchmarks/ablations.py --translation    # chapter 17's (about 20 minutes)

Four experiments, each over several seeds, each run trained from scratch with the
package's ``transformer`` on torch tensors and torch's autograd (chapter 15 shows that this
gives the package's hand-derived gradients), the package's ``adam_step`` (β₁ 0.9, β₂ 0.98,
ε 1e-9), the paper's learning-rate schedule, eq. (3), and label smoothing 0.1 unless the
experiment varies it:

- ``scale_dk64`` and ``scale_dk8``: attention with and without the 1/√d_k of the paper's
  eq. (1), at one width and one schedule (d_model 64, d_ff 128, the same peak learning
  rate): one head, so the paper's d_k = 64, against eight heads, so d_k = 8, five seeds
  each. Without the scale the scores are q·k: the package's attention is called on √d_k·q,
  which cancels its division. Also recorded: the mean largest attention weight of the
  first encoder layer at initialisation, and the norm of the first step's gradient of the
  encoder's W_Q.
- ``layernorm``: a deeper model (6 + 6 layers), 1000 steps: post-LN with warm-up (the
  paper), post-LN without warm-up, pre-LN without warm-up (Xiong et al., 2020). "Without
  warm-up" means the schedule's peak from the first step, then its decay:
  lr(step) = lrate(max(step, warmup)).
  The pre-LN model has a final LayerNorm after each stack (γ = 1, β = 0), as in torch.
- ``smoothing``: label smoothing ε = 0 against ε = 0.1 (§5.4) on the chapter's model:
  on held-out sequences, the exact-sequence accuracy (greedy decoding), the confidence (mean
  largest probability of the next token, teacher-forced) and the perplexity (exp of the mean
  negative log-likelihood of the correct next token, teacher-forced, no smoothing).

``--translation`` trains chapter 17's translator three times with the train command's
own ``train`` and its default recipe, for a short run of ``TRANSLATION["steps"]`` steps
from the same seed (so the same BPE, initial weights and batches): as the recipe stands,
without dropout (P_drop = 0), and without label smoothing (ε_ls = 0). Each model (the
last weights, no averaging) is scored on the held-out numbers chapter 17 decodes at step
500 (2,000 drawn with seed 7): greedy exact match, and the held-out loss (teacher-forced,
no dropout, no smoothing). Results go to ``benchmarks/results/ablations_translation.json``.

Every run records its training loss at every step and, every ``eval_every`` steps, the
held-out accuracy. Runs go to worker processes (two on a 2-core machine), one torch thread
each: the matrices are small, and one run per core keeps both cores busy. Results go to
``benchmarks/results/ablations.json``, which chapter 15 plots.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the repository's package, when run as a script

import mini_transformer as mt  # noqa: E402
from mini_transformer import tasks  # noqa: E402
from mini_transformer.number_words.data import number_words, split_numbers  # noqa: E402
from mini_transformer.optim import AdamState, adam_step, learning_rate  # noqa: E402

VOCAB, LENGTH = 12, 8          # the chapter's reverse task: 10 symbols, 8 tokens
N_TEST = 500                   # held-out sequences per evaluation

# model: d_model, n_heads, d_ff, n_layers; train: batch, steps, warmup, eval_every.
# settings: name -> (scale, norm_first, warmup, label_smoothing).
FULL = {
    # the scale at d_k = 64 and d_k = 8: the same d_model, d_ff, schedule and seeds
    "scale_dk64": dict(model=dict(d_model=64, n_heads=1, d_ff=128, n_layers=2),
                       batch=64, steps=400, warmup=200, eval_every=50,
                       seeds=[0, 1, 2, 3, 4],
                       settings={"scaled": (True, False, True, 0.1),
                                 "unscaled": (False, False, True, 0.1)}),
    "scale_dk8": dict(model=dict(d_model=64, n_heads=8, d_ff=128, n_layers=2),
                      batch=64, steps=400, warmup=200, eval_every=50,
                      seeds=[0, 1, 2, 3, 4],
                      settings={"scaled": (True, False, True, 0.1),
                                "unscaled": (False, False, True, 0.1)}),
    "layernorm": dict(model=dict(d_model=32, n_heads=4, d_ff=64, n_layers=6),
                      batch=32, steps=1000, warmup=100, eval_every=50, seeds=[0, 1, 2],
                      settings={"post-LN, warm-up": (True, False, True, 0.1),
                                "post-LN, no warm-up": (True, False, False, 0.1),
                                "pre-LN, no warm-up": (True, True, False, 0.1)}),
    "smoothing": dict(model=dict(d_model=32, n_heads=4, d_ff=64, n_layers=2),
                      batch=64, steps=400, warmup=200, eval_every=50, seeds=[0, 1, 2, 3],
                      settings={"eps=0": (True, False, True, 0.0),
                                "eps=0.1": (True, False, True, 0.1)}),
}
QUICK = {
    name: dict(cfg, model=dict(cfg["model"], d_model=16, d_ff=32,
                               n_layers=min(cfg["model"]["n_layers"], 2)),
               batch=8, steps=6, warmup=3, eval_every=3, seeds=[0])
    for name, cfg in FULL.items()
}


def unscaled_attention(q, k, v, mask=None):
    """softmax(Q Kᵀ) V: the package's attention on √d_k·Q, which cancels its 1/√d_k."""
    return mt.scaled_dot_product_attention(q * math.sqrt(q.shape[-1]), k, v, mask)


def initial_params(seed, model, norm_first):
    """The paper's model with random weights (``TransformerParams.random``), NumPy float64;
    a pre-LN model gets a final LayerNorm after each stack (γ = 1, β = 0)."""
    params = mt.TransformerParams.random(np.random.default_rng(seed), vocab_size=VOCAB,
                                         **model)
    if norm_first:
        d = params.d_model
        params = dataclasses.replace(
            params, encoder_norm=mt.LayerNormParams(np.ones(d), np.zeros(d)),
            decoder_norm=mt.LayerNormParams(np.ones(d), np.zeros(d)))
    return params


def lr_at(step, d_model, warmup, warm_up):
    """The paper's eq. (3); without warm-up, its peak from the first step, then its decay."""
    return learning_rate(step if warm_up else max(step, warmup), d_model, warmup)


def evaluate(params, test, attention, norm_first):
    """Held-out accuracy (greedy decoding with the cache), confidence and perplexity
    (teacher-forced), and the mean largest weight of the first encoder layer's heads."""
    import torch

    src, tgt_in, tgt_out = (torch.as_tensor(a) for a in test)
    with torch.no_grad():
        decoded = mt.greedy_decode(src, params, LENGTH + 2, tasks.BOS, tasks.EOS,
                                   norm_first=norm_first, attention=attention)
        logits = mt.transformer(src, tgt_in, params, norm_first=norm_first,
                                attention=attention)
        log_p = torch.log_softmax(logits, dim=-1)
        nll = -log_p.gather(-1, tgt_out[..., None]).mean()
        x = mt.embed(src, params.embedding)
        layer = params.encoder_layers[0]
        h = mt.layer_norm(x, layer.norm1.gamma, layer.norm1.beta, layer.eps) if norm_first else x
        _, weights = mt.multi_head_attention(h, layer.attn, attention=attention)
    return {
        "accuracy": tasks.sequence_accuracy(decoded.numpy(), test[2]),
        "confidence": float(log_p.exp().max(dim=-1).values.mean()),
        "perplexity": float(nll.exp()),
        "nll": float(nll),
        "max_weight_enc0": float(weights.max(dim=-1).values.mean()),
    }


def run(experiment, setting, seed, cfg):
    """Train one model from scratch; returns its record."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    scale, norm_first, warm_up, smoothing = cfg["settings"][setting]
    attention = None if scale else unscaled_attention
    model, d_model, warmup = cfg["model"], cfg["model"]["d_model"], cfg["warmup"]
    rng = np.random.default_rng(1000 + seed)              # the training batches
    test = tasks.reverse_task(np.random.default_rng(2000 + seed), N_TEST, LENGTH, VOCAB)
    params = initial_params(seed, model, norm_first).map(
        lambda a: torch.tensor(a, dtype=torch.float32))
    state = AdamState.zeros_like(params)
    record = {"experiment": experiment, "setting": setting, "seed": seed,
              "initial": evaluate(params, test, attention, norm_first),
              "loss": [], "lr": [], "eval_steps": [], "evals": [], "diverged": False}
    t0 = time.perf_counter()
    for step in range(1, cfg["steps"] + 1):
        src, tgt_in, tgt_out = (torch.as_tensor(a) for a in
                                tasks.reverse_task(rng, cfg["batch"], LENGTH, VOCAB))
        leaves = params.map(lambda a: a.detach().requires_grad_(True))
        logits = mt.transformer(src, tgt_in, leaves, norm_first=norm_first,
                                attention=attention)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt_out.reshape(-1),
                               label_smoothing=smoothing)
        loss.backward()
        grads = leaves.map(lambda a: a.grad)
        if step == 1:
            record["grad_norm_W_Q_step1"] = float(torch.sqrt(sum(
                (layer.attn.W_Q.grad ** 2).sum() for layer in leaves.encoder_layers)))
        lr = lr_at(step, d_model, warmup, warm_up)
        with torch.no_grad():
            params, state = adam_step(params, grads, state, lr)
        record["loss"].append(loss.item())
        record["lr"].append(lr)
        if not math.isfinite(record["loss"][-1]):
            record["diverged"] = True
            break
        if step % cfg["eval_every"] == 0 or step == cfg["steps"]:
            record["eval_steps"].append(step)
            record["evals"].append(evaluate(params, test, attention, norm_first))
    record["train_s"] = time.perf_counter() - t0
    return record


def _run_packed(args):
    return run(*args)


# Chapter 17: the translator's recipe with dropout or label smoothing removed, one at a time.
# steps: each run's length; draw_steps: how far the data stream is replayed to count the
# pairs the train command's full run drew (its default number of steps).
TRANSLATION = dict(steps=500, draw_steps=None, seed=0, n_eval=2000, eval_seed=7, train={},
                   settings={"recipe": {}, "no dropout": {"p_drop": 0.0},
                             "no label smoothing": {"label_smoothing": 0.0}})
TRANSLATION_QUICK = dict(TRANSLATION, steps=4, draw_steps=6, n_eval=20,
                         train=dict(vocab_size=120, n_bpe=200, n_chunk=300,
                                    max_tokens=600, d_model=16, n_heads=2, n_layers=1))


def translation_stream(cfg):
    """The train command's draws, in its order, from its seed: the BPE, the initial weights,
    then the training batches (chunks of fresh numbers, cut by ``batch_by_length`` and
    used from the end), each with the numbers it holds. Returns (bpe, params, batches)."""
    from mini_transformer.number_words.data import encode_pairs, training_numbers
    from mini_transformer.number_words.train import Settings

    s = Settings(**cfg["train"], seed=cfg["seed"])
    # the recipe's data options, where its version has them (rounded draws, a BPE
    # pre-tokenizer); without them, the plain draws and BPE
    more = {"round_share": s.round_share} if getattr(s, "round_share", 0) else {}
    split = {"split": s.bpe_split} if getattr(s, "bpe_split", None) else {}
    rng = np.random.default_rng(s.seed)
    texts = [t for pair in number_words(training_numbers(rng, s.n_bpe, **more))
             for t in pair]
    bpe = mt.BPE.learn(texts, s.vocab_size, **split)
    params = mt.TransformerParams.random(rng, vocab_size=len(bpe), d_model=s.d_model,
                                         n_heads=s.n_heads, n_layers=s.n_layers)

    def batches():
        while True:
            numbers = training_numbers(rng, s.n_chunk, **more)
            src, tgt = encode_pairs(number_words(numbers), bpe)
            number_of = {tuple(t): int(n) for t, n in zip(tgt, numbers)}
            chunk = mt.batching.batch_by_length(src, tgt, s.max_tokens, bpe.pad_id, rng)
            while chunk:
                b_src, b_tgt = chunk.pop()
                yield b_src, b_tgt, [number_of[tuple(row[row != bpe.pad_id])]
                                     for row in b_tgt]

    return bpe, params, batches()


def held_out_loss(params, pairs, bpe):
    """The mean of −log Pr(next token) over the reference's tokens and EOS: teacher-forced,
    no dropout, no label smoothing (padding not counted)."""
    from mini_transformer.number_words.data import encode_pairs

    src, tgt = encode_pairs(pairs, bpe)
    s = mt.batching.pad_sequences(src, bpe.pad_id)
    t = mt.batching.pad_sequences(tgt, bpe.pad_id)
    logits = mt.transformer(s, t[:, :-1], params, src_mask=(s != bpe.pad_id)[:, None, :])
    return float(mt.cross_entropy(logits, t[:, 1:], ignore_index=bpe.pad_id))


def train_translation(setting, cfg, bpe, params, batches):
    """The train command's loop (``number_words.train``) on these batches, with the
    recipe's settings changed as ``setting`` says; the last weights, scored."""
    from threadpoolctl import threadpool_limits

    from mini_transformer.attention import padding_mask
    from mini_transformer.number_words.train import Settings

    threadpool_limits(1)   # small matrices; one run per core
    changes = cfg["settings"][setting]
    s = Settings(**cfg["train"], seed=cfg["seed"], **changes)
    params = params.map(lambda a: a.astype(np.dtype(s.dtype)))
    state, drop_rng = AdamState.zeros_like(params), np.random.default_rng(s.seed + 1)
    losses, t0 = [], time.perf_counter()
    for step, (src, tgt) in enumerate(batches, 1):
        src_mask = padding_mask(np.sum(src != bpe.pad_id, axis=1), src.shape[1])
        loss, grads = mt.loss_and_grads(params, src, tgt[:, :-1], tgt[:, 1:],
                                        label_smoothing=s.label_smoothing,
                                        ignore_index=bpe.pad_id, src_mask=src_mask,
                                        p_drop=s.p_drop, rng=drop_rng)
        params, state = adam_step(params, grads, state,
                                  learning_rate(step, s.d_model, s.warmup))
        losses.append(round(float(loss), 5))
        if step % 50 == 0:
            print(f"{setting}: step {step}  loss {losses[-1]:.4f}", file=sys.stderr,
                  flush=True)
    train_s = time.perf_counter() - t0
    _, held = split_numbers()
    sample = np.sort(np.random.default_rng(cfg["eval_seed"]).choice(
        held, cfg["n_eval"], replace=False))
    pairs = number_words(sample)
    hyps = mt.translate([src for src, _ in pairs], params, bpe, beam_size=None)
    refs = [ref for _, ref in pairs]
    return {"setting": setting, "changes": changes,
            "p_drop": s.p_drop, "label_smoothing": s.label_smoothing,
            "train_seconds": train_s, "loss": losses,
            "held_out_loss": held_out_loss(params, pairs, bpe),
            "exact_match": mt.exact_match(hyps, refs),
            "wrong": [int(n) for n, h, r in zip(sample, hyps, refs) if h != r]}


def translation_main(quick, out, jobs):
    from mini_transformer.number_words.train import Settings

    cfg = TRANSLATION_QUICK if quick else TRANSLATION
    t0, load_before = time.perf_counter(), [round(x, 2) for x in os.getloadavg()]
    bpe, params, stream = translation_stream(cfg)
    first = [next(stream) for _ in range(cfg["steps"])]
    batches = [(b_src, b_tgt) for b_src, b_tgt, _ in first]
    names = list(cfg["settings"])
    import multiprocessing

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as ex:
        futures = [ex.submit(train_translation, name, cfg, bpe, params, batches)
                   for name in names]
        # meanwhile: the pairs the full run drew, by replaying its stream
        draw_steps = cfg["draw_steps"] or Settings().steps
        drawn = [n for _, _, numbers in first for n in numbers]
        for _ in range(draw_steps - cfg["steps"]):
            drawn += next(stream)[2]
        records = [f.result() for f in futures]
    drawn = np.array(drawn)
    result = {
        "meta": {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "quick": quick, "jobs": jobs, "cpu_count": os.cpu_count(),
                 "machine": platform.machine(), "python": platform.python_version(),
                 "numpy": np.__version__, "load_average_before": load_before,
                 "load_average_after": [round(x, 2) for x in os.getloadavg()],
                 "total_s": time.perf_counter() - t0},
        "config": {k: v for k, v in cfg.items() if k != "settings"},
        "bpe_size": len(bpe),
        "draws": {"steps": draw_steps, "pairs": len(drawn),
                  "distinct": len(np.unique(drawn)),
                  "round_thousands": int(np.sum((drawn % 1000 == 0) & (drawn > 0))),
                  "distinct_round_thousands": len(np.unique(
                      drawn[(drawn % 1000 == 0) & (drawn > 0)])),
                  "pairs_first_steps": sum(len(numbers) for *_, numbers in first)},
        "runs": records,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    for r in records:
        print(f"  {r['setting']:20} loss {r['loss'][0]:.3f} -> {r['loss'][-1]:.3f}  "
              f"held-out loss {r['held_out_loss']:.4f}  exact match "
              f"{r['exact_match']:.2%}  ({r['train_seconds']:.0f} s)")
    print(f"draws in {draw_steps} steps: {result['draws']}")
    print(f"total {result['meta']['total_s']:.0f} s; wrote {out}")
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny settings, seconds")
    ap.add_argument("--translation", action="store_true",
                    help="chapter 17's translator: dropout and label smoothing removed")
    ap.add_argument("--out", type=Path, default=None,
                    help="default: results/ablations.json (--translation: "
                         "results/ablations_translation.json)")
    ap.add_argument("--only", nargs="*",
                    help="run only these experiments; the others are kept from --out "
                         "when it exists (its meta under 'previous_meta')")
    ap.add_argument("--jobs", type=int, default=None,
                    help="worker processes (default: 1 with --quick, else min(2, CPUs))")
    args = ap.parse_args(argv)
    jobs = args.jobs or (1 if args.quick else min(2, os.cpu_count() or 1))
    if args.translation:
        out = args.out or HERE / "results" / "ablations_translation.json"
        return translation_main(args.quick, out, jobs)
    args.out = args.out or HERE / "results" / "ablations.json"
    import torch

    configs = QUICK if args.quick else FULL
    names = args.only or list(configs)
    work = [(name, setting, seed, configs[name]) for name in names
            for setting in configs[name]["settings"] for seed in configs[name]["seeds"]]
    t0 = time.perf_counter()
    load_before = [round(x, 2) for x in os.getloadavg()]
    if jobs == 1:
        records = [_run_packed(w) for w in work]
    else:
        import multiprocessing

        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as ex:
            records = list(ex.map(_run_packed, work))
    total = time.perf_counter() - t0
    result = {
        "meta": {
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "quick": args.quick, "jobs": jobs, "torch_threads_per_run": 1,
            "cpu_count": os.cpu_count(), "machine": platform.machine(),
            "python": platform.python_version(), "numpy": np.__version__,
            "torch": torch.__version__, "dtype": "float32",
            "vocab_size": VOCAB, "length": LENGTH, "n_test": N_TEST,
            "load_average_before": load_before,
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "total_s": total,
        },
        "experiments": {
            name: {"config": {k: v for k, v in configs[name].items() if k != "settings"}
                   | {"settings": {s: dict(zip(("scale", "norm_first", "warm_up",
                                                "label_smoothing"), v))
                                   for s, v in configs[name]["settings"].items()}},
                   "runs": [r for r in records if r["experiment"] == name]}
            for name in names
        },
    }
    if args.only and args.out.exists():     # keep the experiments not run again
        previous = json.loads(args.out.read_text())
        kept = {k: v for k, v in previous["experiments"].items() if k not in names}
        result["experiments"] = kept | result["experiments"]
        result["meta"]["only"] = names
        result["meta"]["previous_meta"] = previous["meta"]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for name in names:
        print(f"\n{name}: {configs[name]['model']}")
        for r in result["experiments"][name]["runs"]:
            last = r["evals"][-1] if r["evals"] else {}
            print(f"  {r['setting']:22} seed {r['seed']}  loss {r['loss'][0]:.3f} -> "
                  f"{r['loss'][-1]:.3f}  acc {last.get('accuracy', float('nan')):.3f}  "
                  f"conf {last.get('confidence', float('nan')):.3f}  "
                  f"ppl {last.get('perplexity', float('nan')):.3f}"
                  f"{'  DIVERGED' if r['diverged'] else ''}  ({r['train_s']:.1f} s)")
    print(f"\ntotal {total:.1f} s with {jobs} worker(s); wrote {args.out}")
    return result


if __name__ == "__main__":
    main()

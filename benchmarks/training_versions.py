"""Two versions of the package's NumPy training step and ``torch.nn.Transformer``'s, timed
side by side in one run (before, after, torch, before, after, torch, ...; median), at
``training.py``'s sizes: a before/after comparison on a machine too busy for two runs to be
comparable.

    python benchmarks/training_versions.py BEFORE AFTER --threads 1 --sizes base

BEFORE and AFTER are folders that each hold a ``mini_transformer`` package (e.g. a copy of
the package at an older commit: ``git archive OLD mini_transformer | tar -x -C BEFORE``).
Each is imported under its own name; ``torch.nn`` is built from the checkout's package
with the same weights. Prints the steps and the ratios, and the load average before and
after; ``--out`` saves them as JSON.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import training  # noqa: E402
from common import TorchNNTrainer, cpu_model, load_average  # noqa: E402


def load_package(folder: Path, name: str):
    """``folder/mini_transformer`` imported as the module ``name``."""
    init = folder / "mini_transformer" / "__init__.py"
    spec = importlib.util.spec_from_file_location(name, init,
                                                  submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def numpy_step(pkg, size):
    """``training.numpy_step`` with the package ``pkg``."""
    s = training.SIZES[size]
    params = pkg.TransformerParams.random(
        np.random.default_rng(0),
        **{k: s[k] for k in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers")}
    ).map(lambda a: a.astype(np.float32))
    optim = importlib.import_module(pkg.__name__ + ".optim")
    state = optim.AdamState.zeros_like(params)
    rng, drop_rng = np.random.default_rng(1), np.random.default_rng(2)

    def step():
        nonlocal params, state
        src, tgt = training.batch_of(rng, size)
        if s.get("pad"):
            loss, grads = pkg.loss_and_grads(
                params, src, tgt[:, :-1], tgt[:, 1:],
                label_smoothing=training.SMOOTHING, ignore_index=training.PAD,
                src_mask=(src != training.PAD)[:, None, :], p_drop=s["p_drop"],
                rng=drop_rng)
        else:
            loss, grads = pkg.loss_and_grads(params, src, tgt[:, :-1], tgt[:, 1:])
        params, state = optim.adam_step(params, grads, state, 1e-4)
        return loss

    return step


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--sizes", nargs="+", choices=list(training.SIZES),
                    default=["notebook", "translation_no_dropout", "base"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(args.threads)
    threadpool_limits(args.threads)
    before = load_package(args.before, "mt_before")
    after = load_package(args.after, "mt_after")
    meta = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "cpu": cpu_model(), "threads": args.threads, "reps": args.reps,
            "before": str(args.before), "after": str(args.after),
            "numpy": np.__version__, "torch": torch.__version__,
            "timing": "interleaved step by step (before, after, torch), median",
            "load_average_before": load_average()}
    print(f"# {meta['cpu']}, {args.threads} thread(s), load {meta['load_average_before']}")
    rows = []
    for size in args.sizes:
        s = training.SIZES[size]
        kw = dict(pad_id=training.PAD, p_drop=s["p_drop"],
                  label_smoothing=training.SMOOTHING) if s.get("pad") else {}
        trainer, rng = TorchNNTrainer(training.params_of(size), lr=1e-4, **kw), \
            np.random.default_rng(1)
        steps = {"before": numpy_step(before, size), "after": numpy_step(after, size),
                 "torch_nn": lambda: trainer.step(*training.batch_of(rng, size))}
        t = training.interleaved(steps, args.reps)
        row = {"size": size, **{f"{k}_s": v for k, v in t.items()},
               "before_over_torch": t["before"] / t["torch_nn"],
               "after_over_torch": t["after"] / t["torch_nn"],
               "after_over_before": t["after"] / t["before"]}
        rows.append(row)
        print(f"{size:24s} before {t['before'] * 1e3:9.2f} ms  after {t['after'] * 1e3:9.2f}"
              f" ms  torch.nn {t['torch_nn'] * 1e3:9.2f} ms   before/torch "
              f"{row['before_over_torch']:.2f}  after/torch {row['after_over_torch']:.2f}  "
              f"after/before {row['after_over_before']:.2f}", flush=True)
    meta["load_average_after"] = load_average()
    print(f"# load after: {meta['load_average_after']}")
    if args.out:
        args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()

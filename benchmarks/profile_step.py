"""Where one NumPy training step's time goes: cProfile of a few steps (forward, hand
backward, Adam) of ``training.py``'s model at one of its sizes, the top entries by
own time and by cumulative time.

    python benchmarks/profile_step.py                    # base width, 5 steps, 1 thread
    python benchmarks/profile_step.py --size notebook --steps 20 --threads 2

The profiler adds a fixed cost to every call, which inflates many small calls (the
chapter's size most): read the shares, and time the step without it (``training.py``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import training  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=list(training.SIZES), default="base")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    step = training.numpy_step(training.params_of(args.size), args.size)
    step()                                            # untimed: first-call costs
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(args.steps):
        step()
    profile.disable()
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).strip_dirs().sort_stats(order) \
            .print_stats(args.top)
        print(out.getvalue())


if __name__ == "__main__":
    main()

"""Run a command as another machine would: NumPy, OpenBLAS and torch forced onto other CPU
kernels than their defaults on this machine, and MPLBACKEND=Agg.

    .venv/bin/python .ci/other_machine.py -- .venv/bin/python -m pytest -n 2 --dist loadfile book

Floats computed by other SIMD kernels (NumPy's exp, arccos, sums), other BLAS kernels (other
summation orders) and other ATen kernels differ in their last bits; a notebook that stores a
float's last bits passes here and fails on the next CPU. This script finds the kernels each
library picks here (with the variables below removed from the environment, so that nothing set
by the machine decides it), picks a lower level for each, checks in a fresh interpreter that the
libraries really switched, prints both, and runs the command with the forced settings:

- NumPy: ``NPY_DISABLE_CPU_FEATURES`` disables its highest dispatched SIMD targets;
- OpenBLAS (NumPy's BLAS): ``OPENBLAS_CORETYPE`` picks an older core's kernels;
- torch: ``ATEN_CPU_CAPABILITY`` picks a lower vector ISA for ATen's kernels (and
  ``MKL_ENABLE_INSTRUCTIONS`` the same ISA for MKL, which Python cannot read back).

A library already at its lowest level here is reported and left as it is; a forced setting
that does not take effect fails the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

VARS = ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
        "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "MPLBACKEND")

PROBE = r"""
import json
import numpy as np
import threadpoolctl
import torch
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
blas = [i for i in threadpoolctl.threadpool_info() if i["internal_api"] == "openblas"]
print(json.dumps({
    "numpy_dispatch": [t for t in __cpu_dispatch__ if __cpu_features__.get(t)],
    "openblas": blas[0].get("architecture") if blas else None,
    "torch": torch.backends.cpu.get_cpu_capability(),
}))
"""

# An older core for OpenBLAS's kernels, by the core it picks on its own.
OLDER_CORE = {
    "SapphireRapids": "Haswell", "Cooperlake": "Haswell", "SkylakeX": "Haswell",
    "Zen": "Sandybridge", "Haswell": "Sandybridge", "Sandybridge": "Nehalem",
    "NeoverseV2": "ARMV8", "NeoverseV1": "ARMV8", "NeoverseN2": "ARMV8",
    "NeoverseN1": "ARMV8", "CortexA72": "ARMV8", "CortexA57": "ARMV8",
}
# A lower vector ISA for ATen, by the one it picks on its own (values of ATEN_CPU_CAPABILITY).
LOWER_ATEN = {"AVX512": "avx2", "AVX2": "default", "SVE256": "default", "ZVECTOR": "default",
              "VSX": "default"}
MKL_ISA = {"avx2": "AVX2", "default": "SSE4_2"}


def probe(env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, check=True,
                         capture_output=True, text=True)
    if out.stderr.strip():
        print(out.stderr, file=sys.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def forced_settings(default: dict) -> dict:
    env = {}
    found = default["numpy_dispatch"]
    if found:  # keep the lowest dispatched target (or none, if it is the only one)
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(found[1:] if len(found) > 1 else found)
    if default["openblas"] in OLDER_CORE:
        env["OPENBLAS_CORETYPE"] = OLDER_CORE[default["openblas"]]
    if default["torch"] in LOWER_ATEN:
        env["ATEN_CPU_CAPABILITY"] = LOWER_ATEN[default["torch"]]
        env["MKL_ENABLE_INSTRUCTIONS"] = MKL_ISA[env["ATEN_CPU_CAPABILITY"]]
    env["MPLBACKEND"] = "Agg"
    return env


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print(__doc__)
        print("usage: other_machine.py -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    command = argv[argv.index("--") + 1 :]
    base = {k: v for k, v in os.environ.items() if k not in VARS}
    default = probe(base)
    settings = forced_settings(default)
    env = {**base, **settings}
    forced = probe(env)

    rows = [("NumPy SIMD dispatch", " ".join(default["numpy_dispatch"]) or "baseline only",
             " ".join(forced["numpy_dispatch"]) or "baseline only"),
            ("OpenBLAS core", default["openblas"], forced["openblas"]),
            ("torch ATen capability", default["torch"], forced["torch"])]
    print("Kernels: this machine's default -> forced for this run")
    width = max(len(r[0]) for r in rows)
    failed = []
    for (what, before, after), key in zip(rows, ("numpy_dispatch", "openblas", "torch")):
        changed = default[key] != forced[key]
        note = "changed" if changed else "UNCHANGED"
        if not changed and key == "openblas" and default[key] not in OLDER_CORE:
            note = "unchanged: no older core known for it"
        elif not changed and key == "torch" and default[key] not in LOWER_ATEN:
            note = "unchanged: already the lowest level"
        elif not changed:
            failed.append(what)
        print(f"  {what:<{width}}  {before} -> {after}   ({note})")
    print("Settings:", " ".join(f"{k}={v!r}" for k, v in settings.items()))
    if failed:
        print(f"the forced settings did not take effect for: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    sys.stdout.flush()
    return subprocess.run(command, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

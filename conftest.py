"""nbval's kernel start, made robust to the port race between concurrent kernels.

With ``pytest -n 2`` two workers start Jupyter kernels at the same moment. jupyter_client
picks each kernel's five TCP ports by binding port 0 and releasing it, so two kernels can be
handed the same port; the one that loses never answers, and nbval then fails every cell of
that notebook after its 60 s start-up timeout (seen once in CI, on one notebook of 24, while
the other 23 passed). A kernel that answers does so within seconds, so a start that times
out is retried with a fresh kernel on fresh ports, up to three times. A kernel that fails
three times still fails the notebook, with nbval's own error.

Loaded by every ``pytest`` run under the repository root (the README's test command, the
other-machine check, the fresh-clone check).
"""

from __future__ import annotations

import logging

ATTEMPTS = 3

try:
    import nbval.plugin as _nbval_plugin
except ImportError:  # nbval is a test dependency; without it there is nothing to patch
    _nbval_plugin = None

if _nbval_plugin is not None:
    _RunningKernel = _nbval_plugin.RunningKernel

    class RetryingKernel(_RunningKernel):
        """nbval's ``RunningKernel``, started again when a start times out."""

        def __init__(self, *args, **kwargs):
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    super().__init__(*args, **kwargs)
                    return
                except RuntimeError:  # "Kernel didn't respond", "Wasn't able to establish IOPub"
                    if getattr(self, "km", None) is not None:  # started, but IOPub never came up
                        self.stop()
                    if attempt == ATTEMPTS:
                        raise
                    logging.getLogger(__name__).warning(
                        "kernel start %d of %d timed out; starting a fresh kernel", attempt, ATTEMPTS)

    _nbval_plugin.RunningKernel = RetryingKernel

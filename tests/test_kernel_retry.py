"""The root conftest's nbval kernel start: a start that times out is retried with a fresh kernel."""

from __future__ import annotations

import nbval.kernel
import nbval.plugin
import pytest


def test_a_timed_out_kernel_start_is_retried(monkeypatch):
    assert nbval.plugin.RunningKernel.__name__ == "RetryingKernel"
    real_start = nbval.kernel.start_new_kernel
    calls = []

    def first_start_hangs(*args, **kwargs):
        calls.append(kwargs.get("startup_timeout"))
        if len(calls) == 1:
            raise RuntimeError("Kernel didn't respond in 60 seconds")
        return real_start(*args, **kwargs)

    monkeypatch.setattr(nbval.kernel, "start_new_kernel", first_start_hangs)
    kernel = nbval.plugin.RunningKernel(nbval.kernel.CURRENT_ENV_KERNEL_NAME, startup_timeout=60)
    try:
        msg_id = kernel.execute_cell_input("print(6 * 7)", allow_stdin=False)
        kernel.await_idle(msg_id, 60)
        assert calls == [60, 60]
    finally:
        kernel.stop()


def test_three_timed_out_starts_fail_with_nbvals_error(monkeypatch):
    calls = []

    def never_answers(*args, **kwargs):
        calls.append(1)
        raise RuntimeError("Kernel didn't respond in 60 seconds")

    monkeypatch.setattr(nbval.kernel, "start_new_kernel", never_answers)
    with pytest.raises(RuntimeError, match="didn't respond"):
        nbval.plugin.RunningKernel(nbval.kernel.CURRENT_ENV_KERNEL_NAME)
    assert len(calls) == 3

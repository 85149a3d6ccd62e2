"""Waiting for and ending a forked child and its process group: the runners' one way to do either."""

from __future__ import annotations

import contextlib
import os
import select
import signal


def wait(pid: int, timeout_s: float) -> int | None:
    """The child's exit code, or None once it has been killed for its time (or the parent interrupted)."""
    fd = os.pidfd_open(pid)
    ready: list[int] = []
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
        if ready:
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    finally:
        os.close(fd)
        if not ready:
            kill(pid)
            os.waitpid(pid, 0)
    return None


def kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)

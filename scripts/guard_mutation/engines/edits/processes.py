"""Child processes: each in its own process group, its output in a file, killed by the kernel when this
process dies however it dies (``PR_SET_PDEATHSIG``); orphans a mutant leaves (a daemon) are ended."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

LINUX = sys.platform.startswith("linux")
# Runs first in every child: the kernel kills it when its parent dies; then it becomes the command.
LAUNCH = (
    "import ctypes, os, signal, sys\nctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)\n"
    "if os.getppid() != int(sys.argv[1]): os._exit(70)\nos.execv(sys.argv[2], sys.argv[2:])\n"
)


class Cancelled(Exception):
    """The run is being torn down."""


def become_subreaper() -> None:
    """Orphans of our children become ours, so that they can be ended."""
    if LINUX:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1)


def launched(cmd: list[str]) -> list[str]:
    head = [sys.executable, "-c", LAUNCH, str(os.getpid()), shutil.which(cmd[0]) or cmd[0]]
    return [*head, *cmd[1:]] if LINUX else cmd


def _kill(pid: int, group: bool = True) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL) if group else os.kill(pid, signal.SIGKILL)


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        with contextlib.suppress(OSError, ValueError, IndexError):
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


class Runner:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[str]] = set()
        self._cancelled = False

    def cancel_all(self) -> None:
        with self._lock:
            self._cancelled = True
            for proc in self._procs:
                _kill(proc.pid)
                with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                    proc.wait(timeout=5)
                for stream in (proc.stdin, proc.stdout):
                    stream.close() if stream is not None else None
            self._end_orphans()

    def _end_orphans(self) -> None:
        ours = {proc.pid for proc in self._procs}
        for pid in set(_children_of(os.getpid())) - ours:
            _kill(pid)
            _kill(pid, group=False)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)

    def adopt(self, start: Callable[[], subprocess.Popen[str]]) -> subprocess.Popen[str]:
        """A long-lived child (a warm server) that ``cancel_all`` ends with the rest."""
        with self._lock:
            if self._cancelled:
                raise Cancelled
            proc = start()
            self._procs.add(proc)
            return proc

    def run(self, cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str]:
        """(exit status, or None past the timeout; stdout and stderr together)."""
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as out:
            popen = partial(
                subprocess.Popen, launched(cmd), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out
            )
            proc = self.adopt(lambda: popen(stderr=subprocess.STDOUT, text=True, start_new_session=True))
            code: int | None = None
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(timeout=timeout)
            _kill(proc.pid)
            proc.wait()
            with self._lock:
                self._procs.discard(proc)
                self._end_orphans()
            if self._cancelled:
                raise Cancelled
            out.seek(0)
            return code, out.read()

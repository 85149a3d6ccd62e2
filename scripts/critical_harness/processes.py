"""Child processes: own process group, output to a file, killed with the harness, orphans reaped."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from .model import Cancelled


def _kill_group(proc: subprocess.Popen[str]) -> None:
    # also after the leader exited: what it left in its group goes with it
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36
# Runs first in every child: the kernel kills it when the harness dies, however the harness dies
# (SIGKILL included, and a child spinning in C code with the GIL held); then it becomes the command.
LAUNCH = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)\n"
    "if os.getppid() != int(sys.argv[1]): os._exit(70)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    return bool(ctypes.CDLL(None, use_errno=True).prctl(option, value) == 0)


def become_subreaper() -> bool:
    """Orphans of our children (a daemon a mutant started with setsid) become ours, so they can be ended."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            # the fields after the command name, which may itself hold spaces and parentheses
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


class Runner:
    """Starts children in their own process group so that a timeout or an interrupt kills all of it.

    A child's output goes to a file, not a pipe, so a grandchild that keeps the output open (a daemon)
    cannot hold the harness past the child's end; whatever the child left running is ended with it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[str]] = set()
        self._cancelled = False
        self._launch = sys.platform.startswith("linux")

    def cancel_all(self) -> None:
        with self._lock:
            self._cancelled = True
            for proc in self._procs:
                _kill_group(proc)
            self._end_orphans()

    def _end_orphans(self) -> None:
        """Kill and reap our children that no run started: orphans handed to us as subreaper."""
        ours = {proc.pid for proc in self._procs}
        for pid in _children_of(os.getpid()):
            if pid in ours:
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)

    def adopt(self, start: Callable[[], subprocess.Popen[str]]) -> subprocess.Popen[str]:
        """Start a long-lived child (a warm server) that cancel_all ends with the rest."""
        with self._lock:
            if self._cancelled:
                raise Cancelled
            proc = start()
            self._procs.add(proc)
            return proc

    def run(self, cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str]:
        """Return (exit status or None on timeout, combined output)."""
        if self._launch:
            cmd = [sys.executable, "-c", LAUNCH, str(os.getpid()), shutil.which(cmd[0]) or cmd[0], *cmd[1:]]
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as out:
            with self._lock:
                if self._cancelled:
                    raise Cancelled
                proc = subprocess.Popen(
                    cmd,
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    text=True,
                    start_new_session=True,
                )
                self._procs.add(proc)
            try:
                code = self._wait(proc, timeout)
            except BaseException:
                _kill_group(proc)
                proc.wait()
                raise
            finally:
                _kill_group(proc)
                with self._lock:
                    self._procs.discard(proc)
                    self._end_orphans()
            out.seek(0)
            return code, out.read()

    def _wait(self, proc: subprocess.Popen[str], timeout: float) -> int | None:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            return None
        if self._cancelled:
            raise Cancelled
        return proc.returncode

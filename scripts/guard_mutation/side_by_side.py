"""Several engines at once, each in a process of its own, its output kept apart and shown when it ends.

A change's proof is short, and most of each engine's time is fixed (a map of the tests, a clean run,
a build) and spent on one core: run side by side, the engines fill both. Each engine runs in a process
forked for it (the engines fork, change directory and set variables, so they cannot share one).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections.abc import Mapping, Sequence
from multiprocessing.connection import wait
from multiprocessing.context import ForkProcess
from pathlib import Path

from .engines import ENGINES, RunOptions


def _one(name: str, options: RunOptions, out: Path, log: Path) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    # Onto the descriptors, whatever held the streams before (a test's capture, say).
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)  # noqa: SIM115
    code = 2
    try:
        code = ENGINES[name].run(options, out)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run(names: Sequence[str], options: RunOptions, outs: Mapping[str, Path]) -> dict[str, tuple[int, float]]:
    """Run each engine into ``outs[name]``, all at once: {name: (exit status, seconds)}. Each engine's
    output goes to its log (``outs[name]`` as ``.log``) and is written out whole, under its name, as soon
    as it ends, unless it failed: its log is then named, and the caller says it failed. Each engine takes
    the workers it would alone (``options.jobs``, else its own default): one that selected nothing ends at
    once and leaves the cores to the rest, and the limits of a whole-suite job allow for the sharing."""
    fork = multiprocessing.get_context("fork")
    started = time.monotonic()
    running: dict[int, tuple[str, ForkProcess, Path]] = {}
    for name in names:
        log = outs[name].with_suffix(".log")
        process = fork.Process(target=_one, args=(name, options, outs[name], log), name=name)
        process.start()
        running[process.sentinel] = (name, process, log)
    if len(names) > 1:
        sys.stdout.write(
            f"guard-mutation: {', '.join(names)} side by side; each one's output follows as it ends\n"
        )
        sys.stdout.flush()
    ended: dict[str, tuple[int, float]] = {}
    while running:
        for sentinel in wait(list(running)):
            assert isinstance(sentinel, int)  # a process's sentinel is a file descriptor
            name, process, log = running.pop(sentinel)
            process.join()
            took = time.monotonic() - started
            code = process.exitcode if process.exitcode is not None else 2
            text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
            if code not in (0, 1):
                text = f"ended with exit status {code}; its output: {log}"
            sys.stdout.write(f"--- {name} ({took:.1f}s) ---\n{text}")
            if text and not text.endswith("\n"):
                sys.stdout.write("\n")
            sys.stdout.flush()
            ended[name] = (code, took)
    return ended

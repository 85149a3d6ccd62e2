"""The warm server, in a project copy: ``python -m guard_mutation.engines.edits.server PYTEST_ARG...``. One
pytest session imports the package, collects the tests and ``[harness] preload`` once, then reads a job
per line (JSON: tests, environment, output file, time limit, a function's code to swap in or a woven
build's switch to turn on) and forks a child per job, which swaps the mutant in and runs the items through
pytest's own protocol. It answers the exit status, null past the time limit, or ``{"cold": reason}``."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import io
import json
import os
import signal
import sys
import time
import traceback
import types
from collections.abc import Callable
from typing import Any

import pytest

from .plugin import NAME as PLUGIN

PRELOAD_ENV = "GUARD_MUTATION_PRELOAD"
SELECT = "_harness_select_"  # a woven build's switch (weave.py)


def _code_for(code: types.CodeType, qualname: str) -> list[types.CodeType]:
    nested = [
        found for c in code.co_consts if isinstance(c, types.CodeType) for found in _code_for(c, qualname)
    ]
    return [code, *nested] if getattr(code, "co_qualname", None) == qualname else nested


def _live_function(module: types.ModuleType, qualname: str) -> types.FunctionType | str:
    obj: Any = module
    for part in qualname.split("."):
        namespace = vars(obj) if hasattr(obj, "__dict__") else {}
        if part not in namespace:
            return f"{qualname}: {part!r} is not an attribute"
        obj = namespace[part]
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        elif isinstance(obj, property):
            accessors = [f for f in (obj.fget, obj.fset, obj.fdel) if f is not None]
            if len(accessors) != 1:
                return f"{qualname}: a property with {len(accessors)} accessors"
            obj = accessors[0]
    while not isinstance(obj, types.FunctionType) and hasattr(obj, "__wrapped__"):
        obj = obj.__wrapped__
    return obj if isinstance(obj, types.FunctionType) else f"{qualname}: not a plain function"


def prepare(job: dict[str, Any]) -> Callable[[], None] | str:
    """What the child does to swap the mutant in, or why it cannot be done in place."""
    if "switch" in job:
        select = getattr(importlib.import_module(job["switch"]["module"]), SELECT, None)
        number = int(job["switch"]["number"])
        return f"{job['switch']['module']} is not a woven build" if select is None else lambda: select(number)
    if "module" not in job:
        return lambda: None
    module = importlib.import_module(job["module"])
    candidates = _code_for(compile(job["source"], module.__file__ or job["module"], "exec"), job["qualname"])
    if len(candidates) != 1:
        return f"{job['qualname']}: {len(candidates)} code objects of that name in the mutated module"
    function = _live_function(module, job["qualname"])
    if isinstance(function, str):
        return function
    new = candidates[0]
    if new.co_freevars != function.__code__.co_freevars:
        return f"{job['qualname']}: the mutant changes the names it closes over"

    def swap() -> None:
        function.__code__ = new

    return swap


def wanted(nodeid: str, target: str) -> bool:
    """Whether pytest, given ``target`` on its command line, would run the item ``nodeid``."""
    target = target.rstrip("/")
    tails = (target + "::", target + "[", *([target + "/"] if "::" not in target else []))
    return nodeid == target or nodeid.startswith(tails)


def select(items: list[pytest.Item], targets: list[str]) -> list[pytest.Item] | str:
    """The items ``targets`` name, in the order pytest would run them: by target, then as collected."""
    exact, chosen = {item.nodeid: item for item in items}, dict[str, pytest.Item]()
    for target in targets:
        found = [exact[target]] if target in exact else [i for i in items if wanted(i.nodeid, target)]
        if not found:
            return f"ERROR: not found: {target}"
        chosen |= {item.nodeid: item for item in found if item.nodeid not in chosen}
    return list(chosen.values())


def run_items(session: pytest.Session, job: dict[str, Any]) -> int:
    """The job's tests, through pytest's own protocol in the collected session; pytest's exit status."""
    config = session.config
    items = select(session.items, list(job["tests"]))
    if isinstance(items, str):
        print(items)
        return int(pytest.ExitCode.USAGE_ERROR)
    outcomes = config.pluginmanager.get_plugin(PLUGIN)
    if outcomes is not None:  # what the plugin does at the start of a session and after collection
        outcomes.pytest_sessionstart(session)
        outcomes.pytest_collection_modifyitems(config, items)
    config.option.maxfail, session.testsfailed = (1 if job["exitfirst"] else 0), 0
    session.shouldfail = session.shouldstop = False
    status = pytest.ExitCode.OK if items else pytest.ExitCode.NO_TESTS_COLLECTED
    try:
        for index, item in enumerate(items):
            following = items[index + 1] if index + 1 < len(items) else None
            config.hook.pytest_runtest_protocol(item=item, nextitem=following)
            if session.shouldfail or session.shouldstop:
                break
        status = pytest.ExitCode.TESTS_FAILED if session.testsfailed else status
    except KeyboardInterrupt:
        status = pytest.ExitCode.INTERRUPTED
    session.exitstatus = status
    try:
        config.hook.pytest_sessionfinish(session=session, exitstatus=status)
    except Exception:  # raised past pytest as the session ends: a fresh interpreter exits 1 too
        traceback.print_exc()
        return 1
    return int(status)


def _child(session: pytest.Session, job: dict[str, Any], swap: Callable[[], None]) -> None:
    capture = session.config.pluginmanager.get_plugin("capturemanager")
    if capture is not None:  # restarted once the child's output is in place, it restores to that
        capture.stop_global_capturing()
    # Its own process group, death with the server, its output to a file, no stdin.
    os.setpgid(0, 0)
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    out = os.open(job["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for fd, to in ((out, 1), (out, 2), (os.open(os.devnull, os.O_RDONLY), 0)):
        os.dup2(fd, to)
    sys.stdout = sys.stderr = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
    os.environ.update(job["env"])
    if capture is not None:
        capture.start_global_capturing()
        capture.suspend_global_capture()
    try:
        swap()
        code = run_items(session, job)
    except BaseException:
        traceback.print_exc()
        code = 3
    finally:
        _flush()  # what pytest's terminal holds, written out
        os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.__stdout__):
        with contextlib.suppress(Exception):
            stream.flush() if stream is not None else None


def _wait(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while not (done := os.waitpid(pid, os.WNOHANG))[0] and time.monotonic() < deadline:
        time.sleep(0.005)
    if done[0]:
        return os.waitstatus_to_exitcode(done[1])
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


class _Server:
    def __init__(self, jobs: io.TextIOBase, reply: io.TextIOBase) -> None:
        self.jobs, self.reply, self.answered = jobs, reply, False

    def answer(self, message: dict[str, Any]) -> None:
        self.answered = True
        print(json.dumps(message), file=self.reply, flush=True)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed:  # errors while collecting
            self.answer({"ready": False, "status": int(pytest.ExitCode.INTERRUPTED)})
            return True
        try:
            for name in filter(None, os.environ.get(PRELOAD_ENV, "").split(",")):
                importlib.import_module(name)
        except Exception as exc:
            self.answer({"ready": False, "preload": f"{name}: {exc!r}"})
            return True
        # Frozen, what is imported and collected so far is out of the collector's sight in every child.
        gc.collect()
        gc.freeze()
        self.answer({"ready": True})
        for line in self.jobs:
            job = json.loads(line)
            try:
                swap = prepare(job)
            except Exception as exc:
                swap = f"{type(exc).__name__}: {exc}"
            if isinstance(swap, str):
                self.answer({"cold": swap})
                continue
            _flush()
            pid = os.fork()
            if pid == 0:
                _child(session, job, swap)
            self.answer({"returncode": _wait(pid, float(job["timeout"]))})
        return True


def serve(pytest_args: list[str]) -> int:
    # Jobs and answers on descriptors of their own: pytest's capture moves 0, 1 and 2 about.
    jobs = io.TextIOWrapper(os.fdopen(os.dup(0), "rb"))
    reply = io.TextIOWrapper(os.fdopen(os.dup(1), "wb"))
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    server = _Server(jobs, reply)
    status = pytest.main(pytest_args, plugins=[server])
    if not server.answered:
        server.answer({"ready": False, "status": int(status)})
    return 0 if server.answered else 2


if __name__ == "__main__":
    raise SystemExit(serve(sys.argv[1:]))

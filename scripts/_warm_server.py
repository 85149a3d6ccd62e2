"""The harness's warm engine, run in a project copy: ``python -m _warm_server TEST_ARG...``.

It imports the package and collects the tests once (pytest ``--collect-only``, in this process), then
reads one job per line on stdin, as JSON: the pytest arguments, variables to add to the environment,
where the output goes, the time limit and, for a mutant, a module, the qualified name of one function
and the mutated module's source. For each job it forks; the child puts the mutated function's code
into the live function (every reference to it sees the mutant, nothing is re-imported) and runs pytest
on the selected tests. A job without a mutant runs the tests as collected: the baseline. The server
answers one JSON line: the child's exit status, null when it ran past the time limit (its process
group is then killed), or ``{"cold": reason}`` when the function cannot be swapped in place.

Run as ``python -m _warm_server --build PYX...`` it is the copy's builder instead: it imports setuptools
and Cython and translates each named source once, so that Cython's caches are warm, then reads one job
per line (the build script and its arguments, the environment, where the output goes, the time limit)
and forks a child that runs the copy's own build script in this process; it answers as above.

The server makes no CUDA call: the test server serves the simulated runtime only, as CUDA is not
fork-safe once initialised. The child's parent-death signal ends it with the server, and the server's
with the harness.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import io
import json
import os
import runpy
import signal
import sys
import time
import types
from collections.abc import Callable
from typing import Any

import pytest

# critical_harness.model's names, restated: this module runs on its own inside a project copy.
OUTCOMES_PLUGIN = "_mutant_outcomes"  # the harness's plugin, registered by name (-p)
PRELOAD_ENV = "CRITICAL_MUTANTS_PRELOAD"
SELECT = "_harness_select_"  # a woven build's switch (critical_harness.switched_source)


def _code_for(code: types.CodeType, qualname: str) -> list[types.CodeType]:
    found = [code] if getattr(code, "co_qualname", None) == qualname else []
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += _code_for(const, qualname)
    return found


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
    if not isinstance(obj, types.FunctionType):
        return f"{qualname}: not a plain function ({type(obj).__name__})"
    return obj


def prepare(job: dict[str, Any]) -> Callable[[], None] | str:
    """What the child does to swap the mutant in, or why it cannot be done in place."""
    if "switch" in job:
        woven = importlib.import_module(job["switch"]["module"])
        select = getattr(woven, SELECT, None)
        if select is None:
            return f"{job['switch']['module']} is not a woven build"
        number = int(job["switch"]["number"])
        return lambda: select(number)
    module = importlib.import_module(job["module"])
    code = compile(job["source"], module.__file__ or job["module"], "exec")
    candidates = _code_for(code, job["qualname"])
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


def _detach(output: str) -> None:
    """A forked child's own process group, death with the server, output to a file, no stdin."""
    os.setpgid(0, 0)
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # die with the server
    out = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
    sys.stderr = sys.stdout
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)


def wanted(nodeid: str, target: str) -> bool:
    """Whether pytest, given ``target`` on its command line, would run the item ``nodeid``."""
    target = target.rstrip("/")
    return (
        nodeid == target
        or nodeid.startswith((target + "::", target + "["))
        or ("::" not in target and nodeid.startswith(target + "/"))
    )


def select(items: list[pytest.Item], targets: list[str]) -> list[pytest.Item] | str:
    """The items ``targets`` name, in the order pytest would run them: by target, then as collected."""
    chosen: list[pytest.Item] = []
    seen: set[str] = set()
    for target in targets:
        found = [item for item in items if wanted(item.nodeid, target)]
        if not found:
            return f"ERROR: not found: {target}"
        chosen += [item for item in found if item.nodeid not in seen]
        seen.update(item.nodeid for item in found)
    return chosen


def run_items(session: pytest.Session, job: dict[str, Any]) -> int:
    """The job's tests, through pytest's own protocol in the collected session; pytest's exit status."""
    config = session.config
    items = select(session.items, list(job["tests"]))
    if isinstance(items, str):
        print(items)
        return int(pytest.ExitCode.USAGE_ERROR)
    outcomes = config.pluginmanager.get_plugin(OUTCOMES_PLUGIN)
    if outcomes is not None:
        # What the harness's plugin does at the start of a session and after collection, for this job.
        outcomes.pytest_sessionstart(session)
        outcomes.pytest_collection_modifyitems(config, items)
    config.option.maxfail = 1 if job["exitfirst"] else 0
    session.testsfailed = 0
    session.shouldfail = session.shouldstop = False
    status = pytest.ExitCode.OK
    try:
        for index, item in enumerate(items):
            following = items[index + 1] if index + 1 < len(items) else None
            config.hook.pytest_runtest_protocol(item=item, nextitem=following)
            if session.shouldfail or session.shouldstop:
                break
        if session.testsfailed:
            status = pytest.ExitCode.TESTS_FAILED
        elif not items:
            status = pytest.ExitCode.NO_TESTS_COLLECTED
    except KeyboardInterrupt:
        status = pytest.ExitCode.INTERRUPTED
    # As the session would end: fixtures torn down, the summary, the plugin's last record.
    session.exitstatus = status
    try:
        config.hook.pytest_sessionfinish(session=session, exitstatus=status)
    except Exception:
        # Raised past pytest while the session ends: a fresh interpreter prints it and exits 1, and so
        # does this child.
        import traceback

        traceback.print_exc()
        return 1
    return int(status)


def _child(session: pytest.Session, job: dict[str, Any], swap: Callable[[], None]) -> None:
    capture = session.config.pluginmanager.get_plugin("capturemanager")
    if capture is not None:
        # pytest's capture restores the server's descriptors between tests: started again once this
        # child's output is in place, it restores to that instead.
        capture.stop_global_capturing()
    _detach(job["output"])
    os.environ.update(job["env"])
    if capture is not None:
        capture.start_global_capturing()
        capture.suspend_global_capture()
    code = 1
    try:
        swap()
        code = run_items(session, job)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 3
    finally:
        # pytest's terminal writes through the stream it found at start-up, buffered unless the
        # interpreter runs unbuffered: what it holds (the summary of failures) is written out here.
        for stream in (sys.stdout, sys.__stdout__):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.flush()
        os._exit(code)


def _wait(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.005)


class _Server:
    """The session's test loop, replaced: each job runs in a child forked from the collected session."""

    def __init__(self, jobs: io.TextIOBase, reply: io.TextIOBase) -> None:
        self.jobs, self.reply = jobs, reply
        self.answered = False

    def answer(self, message: dict[str, Any]) -> None:
        self.answered = True
        print(json.dumps(message), file=self.reply, flush=True)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed:  # errors while collecting
            self.answer({"ready": False, "status": int(pytest.ExitCode.INTERRUPTED)})
            return True
        # What the tests import only once they run (a fixture's runtime, a lazily imported helper),
        # imported here once instead of in every child.
        for name in filter(None, os.environ.get(PRELOAD_ENV, "").split(",")):
            try:
                importlib.import_module(name)
            except Exception as exc:
                self.answer({"ready": False, "preload": f"{name}: {exc!r}"})
                return True
        # Frozen, everything imported and collected so far is out of the collector's sight: a child's
        # full collections (tests and pytest's own teardown make several) cost what the child made.
        gc.collect()
        gc.freeze()
        self.answer({"ready": True})
        for line in self.jobs:
            job = json.loads(line)
            try:
                swap = prepare(job) if "module" in job or "switch" in job else (lambda: None)
            except Exception as exc:
                swap = f"{type(exc).__name__}: {exc}"
            if isinstance(swap, str):
                self.answer({"cold": swap})
                continue
            for stream in (sys.stdout, sys.__stdout__):  # nothing of the server's for the child to write
                if stream is not None:
                    stream.flush()
            pid = os.fork()
            if pid == 0:
                _child(session, job, swap)
            self.answer({"returncode": _wait(pid, float(job["timeout"]))})
        return True


def serve(pytest_args: list[str]) -> int:
    # Jobs and answers keep descriptors of their own: pytest's capture moves 0, 1 and 2 about, and its
    # own output (collection, the summary of a session that runs nothing) goes nowhere.
    jobs = io.TextIOWrapper(os.fdopen(os.dup(0), "rb"))
    reply = io.TextIOWrapper(os.fdopen(os.dup(1), "wb"))
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    server = _Server(jobs, reply)
    status = pytest.main(pytest_args, plugins=[server])
    if not server.answered:
        server.answer({"ready": False, "status": int(status)})
    return 0 if server.answered else 2


def _build_child(job: dict[str, Any]) -> None:
    _detach(job["output"])
    if job.get("cwd"):
        os.chdir(job["cwd"])
    os.environ.clear()
    os.environ.update(job["env"])
    code = 1
    try:
        sys.argv = list(job["argv"])
        runpy.run_path(sys.argv[0], run_name="__main__")
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(code)


def serve_builds(sources: list[str]) -> int:
    import tempfile

    from Cython.Build import cythonize

    importlib.import_module("setuptools")  # imported once here, for every child's setup.py
    with tempfile.TemporaryDirectory() as scratch, contextlib.redirect_stdout(io.StringIO()):
        for source in sources:
            # Translated once here (the build's own C file is left alone): every child inherits the caches.
            copy = os.path.join(scratch, os.path.basename(source))
            with open(source, "rb") as original, open(copy, "wb") as duplicate:
                duplicate.write(original.read())
            cythonize([copy], language_level=3, quiet=True, force=True)  # type: ignore[no-untyped-call]
    reply = sys.stdout
    print(json.dumps({"ready": True}), file=reply, flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _build_child(job)
        print(json.dumps({"returncode": _wait(pid, float(job["timeout"]))}), file=reply, flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--build"]:
        raise SystemExit(serve_builds(sys.argv[2:]))
    raise SystemExit(serve(sys.argv[1:]))

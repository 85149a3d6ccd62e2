"""The warm engine: a server per project copy that has imported the package and collected the tests
once, and forks a child per run with the mutated function's code swapped in (``_warm_server.py``).

Only a mutant that changes nothing but one function's body can go warm: module level, class bodies,
signatures, defaults and decorators run at import, which a code swap cannot replay; those, and the
real CUDA runtime (not fork-safe once initialised), take the cold path: a fresh interpreter per run.
A compiled mutant goes warm through a server on the switched build (``switched_build.py``), its switch on.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from .model import MODULE_SCOPE, Mutant
from .processes import LAUNCH, Runner

SERVER_MODULE = "_warm_server"
SERVER_SOURCE = Path(__file__).resolve().parents[1] / f"{SERVER_MODULE}.py"


class GoCold(Exception):
    """This mutant cannot be judged warm; the reason says why."""


def _without_body(tree: ast.Module, qualname: str) -> tuple[str, int]:
    """The module's dump with the named function's body emptied, and how many defs have that name."""
    found = 0

    def visit(body: list[ast.stmt], prefix: str) -> None:
        nonlocal found
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{node.name}"
                if name == qualname and not isinstance(node, ast.ClassDef):
                    found += 1
                    node.body = [ast.Pass()]
                    continue
                visit(node.body, f"{name}.")

    visit(tree.body, "")
    return ast.dump(tree), found


def body_only(original: str, mutated: str, qualname: str) -> bool:
    """Whether the mutant differs from the original in the body of one function and nowhere else."""
    if qualname == MODULE_SCOPE or sys.version_info < (3, 11):  # co_qualname finds the code object
        return False
    try:
        before, count = _without_body(ast.parse(original), qualname)
        after, _ = _without_body(ast.parse(mutated), qualname)
    except SyntaxError:
        return False
    return count == 1 and before == after


def module_name(file: str) -> str:
    parts = list(PurePosixPath(file).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class WarmServer:
    """One server in one project copy; one job at a time (each copy serves one worker).

    Started with the tests to collect, it runs tests (``pytest``); in a copy holding a woven build, it
    runs them with a mutant's switch turned on. Started with ``--build`` and the compiled sources, it
    rebuilds the copy's extensions, or another folder's (``build``).
    """

    def __init__(
        self,
        runner: Runner,
        project: Path,
        env: dict[str, str],
        args: list[str],
        tmp: Path,
        *,
        switches: Mapping[str, tuple[str, int]] | None = None,
    ):
        self._tmp = tmp
        # A server of a woven build: each mutant's module and the number that turns it on.
        self._switches = switches
        cmd = [sys.executable, "-m", SERVER_MODULE, *args]
        if sys.platform.startswith("linux"):
            cmd = [sys.executable, "-c", LAUNCH, str(os.getpid()), shutil.which(cmd[0]) or cmd[0], *cmd[1:]]
        # the server keeps its own descriptor of the log; this process needs none once it has started
        with (tmp / "server.log").open("w", encoding="utf-8") as log:
            self._proc = runner.adopt(
                lambda: subprocess.Popen(
                    cmd,
                    cwd=project,
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                    start_new_session=True,
                )
            )
        self._jobs = 0
        self._lock = threading.Lock()  # one job at a time, whichever thread sends it

    def _reply(self, timeout: float) -> dict[str, Any]:
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout)
        line = self._proc.stdout.readline() if ready else ""
        if not line:
            raise GoCold("the warm server did not answer")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def start(self, timeout: float) -> None:
        reply = self._reply(timeout)
        if not reply.get("ready"):
            if "preload" in reply:
                raise GoCold(f"the warm server could not import [harness] preload: {reply['preload']}")
            raise GoCold(f"the warm server could not collect the tests (pytest status {reply.get('status')})")

    def _submit(self, job: dict[str, Any], timeout: float) -> tuple[int | None, str]:
        """Send one job; (its exit status or None past the timeout, its output)."""
        with self._lock:
            return self._submit_one(job, timeout)

    def _submit_one(self, job: dict[str, Any], timeout: float) -> tuple[int | None, str]:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(job) + "\n")
            self._proc.stdin.flush()
        except OSError as exc:
            raise GoCold(f"the warm server is gone ({exc})") from exc
        # the server itself bounds the child; the margin covers the fork and the reply
        reply = self._reply(timeout + 30)
        if "cold" in reply:
            raise GoCold(str(reply["cold"]))
        code = reply.get("returncode")
        text = ""
        with contextlib.suppress(OSError):
            text = Path(job["output"]).read_text(encoding="utf-8", errors="replace")
        return (None if code is None else int(code)), text

    def build(
        self, argv: list[str], env: dict[str, str], timeout: float, where: Path | None = None
    ) -> tuple[int | None, str]:
        """(exit status or None past the timeout, output) of the build script ``argv`` (script first),
        run in a child forked from the builder, in ``where`` (default: the builder's copy)."""
        self._jobs += 1
        output = self._tmp / f"build-{self._jobs}.out"
        job = {"argv": argv, "env": env, "output": str(output), "timeout": timeout}
        if where is not None:
            job["cwd"] = str(where)
        return self._submit(job, timeout)

    def pytest(
        self,
        mutant: Mutant | None,
        tests: Sequence[str],
        exitfirst: bool,
        env: dict[str, str],
        timeout: float,
    ) -> tuple[int | None, str]:
        """(exit status or None past the timeout, output) of the collected session's ``tests`` (as pytest
        takes them on its command line) with the mutant swapped in (none: the tests as collected),
        ``env`` added to the child's environment."""
        swap = None
        if mutant is not None and self._switches is not None:
            swap = switch_on(*self._switches[mutant.spec.id])
        elif mutant is not None:
            swap = swap_code(module_name(mutant.spec.file), mutant.spec.scope, mutant.mutated)
        return self.run_tests(tests, exitfirst, env, timeout, swap)

    def run_tests(
        self,
        tests: Sequence[str],
        exitfirst: bool,
        env: dict[str, str],
        timeout: float,
        swap: Mapping[str, Any] | None = None,
    ) -> tuple[int | None, str]:
        """``pytest``'s run, with ``swap`` (``swap_code`` or ``switch_on``; None: the tests as collected)."""
        self._jobs += 1
        output = self._tmp / f"job-{self._jobs}.out"
        job: dict[str, Any] = {"tests": list(tests), "exitfirst": exitfirst, "env": env}
        job |= {"output": str(output), "timeout": timeout, **(swap or {})}
        return self._submit(job, timeout)

    def alive(self) -> bool:
        return self._proc.poll() is None


def swap_code(module: str, qualname: str, source: str) -> dict[str, Any]:
    """A job's swap: the function ``qualname`` of ``module`` takes its code from the mutated ``source``."""
    return {"module": module, "qualname": qualname, "source": source}


def switch_on(module: str, number: int) -> dict[str, Any]:
    """A job's swap: the woven build's ``module`` turns on its mutant ``number``."""
    return {"switch": {"module": module, "number": number}}


class _Slot:
    def __init__(self, where: Path) -> None:
        self.where = where
        self.lock = threading.Lock()
        self.launched = False
        self.ready = False
        self.server: WarmServer | None = None
        self.failure = ""


class ServerPool:
    """A run's warm servers: of each kind, one per project copy, launched once, and waited for on first
    use. Launching does not wait, so servers start side by side and beside the baseline.

    A server is launched from a thread that outlives it (the main thread, or a worker of the run): the
    parent-death signal that ends it with the harness fires when the launching thread ends.
    """

    def __init__(self, tmp: Path, say: Callable[[str], None], timeout: float) -> None:
        self._tmp = tmp
        self._say = say
        self._timeout = timeout
        self._lock = threading.Lock()
        self._slots: dict[tuple[str, Path], _Slot] = {}

    def _slot(self, kind: str, project: Path, launch: Callable[[Path], WarmServer]) -> _Slot:
        with self._lock:
            if (kind, project) not in self._slots:
                self._slots[kind, project] = _Slot(self._tmp / f"{kind}-{len(self._slots)}")
            slot = self._slots[kind, project]
        with slot.lock:
            if not slot.launched:
                slot.launched = True
                try:
                    slot.where.mkdir()
                    slot.server = launch(slot.where)
                except OSError as exc:
                    slot.failure = str(exc)
        return slot

    def launch(self, kind: str, project: Path, launch: Callable[[Path], WarmServer]) -> None:
        self._slot(kind, project, launch)

    def get(
        self, kind: str, project: Path, launch: Callable[[Path], WarmServer], fallback: str
    ) -> WarmServer | None:
        slot = self._slot(kind, project, launch)
        with slot.lock:
            if not slot.ready and slot.server is not None:
                try:
                    slot.server.start(self._timeout)
                except GoCold as exc:
                    slot.server, slot.failure = None, str(exc)
            if not slot.ready and slot.server is None:
                self._say(f"[warm] no warm {kind} in {project}: {slot.failure}; {fallback}")
            slot.ready = True
            return slot.server


def run_args(project: Path, plugin: str, pytest_args: tuple[str, ...], tests: tuple[str, ...]) -> list[str]:
    """pytest's arguments for a run of ``tests`` in ``project`` with the outcomes plugin: a fresh run's,
    and the warm server's for the session it collects."""
    return ["-p", "no:cacheprovider", "-q", "-p", plugin, f"--rootdir={project}", *pytest_args, *tests]

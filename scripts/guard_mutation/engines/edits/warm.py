"""The warm servers (``server.py``) as the engine holds them, and which mutants can be judged in one: only
a mutant that changes nothing but one function's body can have its code swapped in (module level, class
bodies, signatures, defaults and decorators run at import, which no swap replays)."""

from __future__ import annotations

import ast
import json
import logging
import select
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from .edit import MODULE_SCOPE
from .processes import Runner, launched

SERVER = "guard_mutation.engines.edits.server"
log = logging.getLogger("guard_mutation.engines.edits")


class GoCold(Exception):
    """This cannot be judged warm; the reason says why."""


def _without_body(tree: ast.Module, qualname: str) -> tuple[str, int]:
    """The module's dump with the named function's body emptied, and how many defs have that name."""
    found, todo = 0, [(tree.body, "")]
    while todo:
        body, prefix = todo.pop()
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{node.name}"
                if name == qualname and not isinstance(node, ast.ClassDef):
                    found, node.body = found + 1, [ast.Pass()]
                else:
                    todo.append((node.body, f"{name}."))
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


class WarmServer:
    """One server in one project copy, one job at a time."""

    def __init__(
        self, runner: Runner, project: Path, env: dict[str, str], args: list[str], tmp: Path
    ) -> None:
        self._tmp, self._jobs, self._lock = tmp, 0, threading.Lock()
        pipes: dict[str, Any] = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
        with (tmp / "server.log").open("w", encoding="utf-8") as out:
            command = launched([sys.executable, "-m", SERVER, *args])
            start = partial(
                subprocess.Popen, command, cwd=project, env=env, stderr=out, start_new_session=True
            )
            self._proc = runner.adopt(lambda: start(**pipes))

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
        if "preload" in reply:
            raise GoCold(f"the warm server could not import [harness] preload: {reply['preload']}")
        if not reply.get("ready"):
            raise GoCold(f"the warm server could not collect the tests (pytest status {reply.get('status')})")

    def run(self, job: dict[str, Any]) -> tuple[int | None, str]:
        """(exit status or None past the time limit, output) of one job: the collected session's
        ``tests``, the mutant swapped in first (``module``, ``qualname``, ``source``; or ``switch``)."""
        with self._lock:
            self._jobs += 1
            output = self._tmp / f"job-{self._jobs}.out"
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write(json.dumps({**job, "output": str(output)}) + "\n")
                self._proc.stdin.flush()
            except OSError as exc:
                raise GoCold(f"the warm server is gone ({exc})") from exc
            reply = self._reply(float(job["timeout"]) + 30)  # the server bounds the child; this, the fork
            if "cold" in reply:
                raise GoCold(str(reply["cold"]))
            text = output.read_text(encoding="utf-8", errors="replace") if output.exists() else ""
            return (None if reply.get("returncode") is None else int(reply["returncode"])), text


@dataclass
class _Slot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: WarmServer | None = None
    state: str = ""  # "": not launched; "launched"; "ready"; else why there is none


class ServerPool:
    """A run's warm servers: of each kind one per copy, launched once (from a thread that outlives it:
    the parent-death signal that ends it fires when the launching thread ends), waited for on first use."""

    def __init__(self, tmp: Path, timeout: float) -> None:
        self._tmp, self._timeout, self._lock = tmp, timeout, threading.Lock()
        self._slots: dict[tuple[str, Path], _Slot] = {}

    def get(
        self, kind: str, project: Path, launch: Callable[[Path], WarmServer], wait: bool
    ) -> WarmServer | None:
        with self._lock:
            slot = self._slots.setdefault((kind, project), _Slot())
            where = self._tmp / f"{kind}-{len(self._slots)}"
        with slot.lock:
            if not slot.state:
                try:
                    where.mkdir()
                    slot.server, slot.state = launch(where), "launched"
                except OSError as exc:
                    slot.state = str(exc)
            if wait and slot.state == "launched" and slot.server is not None:
                try:
                    slot.server.start(self._timeout)
                    slot.state = "ready"
                except GoCold as exc:
                    slot.server, slot.state = None, str(exc)
                    log.warning("[warm] no warm %s server in %s: %s; its mutants go cold", kind, project, exc)
            return slot.server if slot.state == "ready" else None

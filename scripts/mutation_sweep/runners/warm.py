"""Run mutants of one function's body in a session that collected the suite once (``_warm_server.py``).

A forked child of the sweep starts pytest afresh and collects its tests for every mutant. A mutant that
changes one function's body and nothing else needs neither: a server imports the package and collects the
suite once, and each child it forks puts the mutated code into the live function before its tests run.
Everything else (what runs at import, a definition's header, a compiled mutant, a phase on the other
implementation) takes the forked path, and so does a mutant the server cannot swap in place.

A kill is trusted only once the test that made it has passed in a warm child with no mutant: a test
that fails there for a reason of its own sends its mutants down the forked path instead.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from critical_harness.compiled import IMPL_ENV
from critical_harness.model import PRELOAD_ENV
from critical_harness.processes import LAUNCH
from critical_harness.warm import SERVER_SOURCE
from mutation_model import KILLED, SURVIVED, TIMEOUT

from ..select_tests import SUITE
from ..work_item import Result
from . import forked
from .compiled_builds import SWITCH_ENV

log = logging.getLogger("mutation_sweep")
START_TIMEOUT_S = 300.0
# pytest's exit status when a target names no collected item: the session and the mutant's tests disagree
USAGE_ERROR = 4
# The server's file run as ``__main__`` with the working folder first on the path, as ``python -m pytest``
# would have it: the project copy's package, not the one the sweep's own folder might shadow.
_RUN_SERVER = (
    "import runpy, sys; sys.argv[0] = sys.argv.pop(1); runpy.run_path(sys.argv[0], run_name='__main__')"
)


class Cold(Exception):
    """This job cannot be judged warm; the forked path judges it."""


class Server:
    """One ``_warm_server`` process over the sweep's suite, at the project root; one job at a time."""

    def __init__(
        self, where: Path, impl: str, pytest_args: Sequence[str], preload: Sequence[str], tmp: Path
    ) -> None:
        self.where, self.tmp = where, tmp
        self.jobs = 0
        cmd = [sys.executable, "-c", _RUN_SERVER, str(SERVER_SOURCE), *_session_args(pytest_args)]
        if sys.platform.startswith("linux"):
            cmd = [sys.executable, "-c", LAUNCH, str(os.getpid()), *cmd]
        env = {**os.environ, PRELOAD_ENV: ",".join(preload), IMPL_ENV: impl}
        env.pop(SWITCH_ENV, None)
        with (tmp / "server.log").open("w", encoding="utf-8") as err:
            self.proc = subprocess.Popen(
                cmd, cwd=where, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True
            )

    def _reply(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            raise Cold("the warm server did not answer")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def start(self) -> None:
        reply = self._reply(START_TIMEOUT_S)
        if not reply.get("ready"):
            raise Cold(f"the warm server could not collect the suite: {reply}")

    def run(
        self, job: forked.Job, tests: Sequence[str], timeout: float, *, mutated: bool = True
    ) -> tuple[int | None, str]:
        """(pytest's exit status, None past ``timeout``; the child's output) of ``tests`` with the job's
        mutant swapped in (``mutated``; its switch turned on, in a woven build), else with none."""
        self.jobs += 1
        output = self.tmp / f"job-{self.jobs}.out"
        request: dict[str, Any] = {"tests": list(tests), "exitfirst": True, "env": {}}
        request |= {"output": str(output), "timeout": timeout}
        if mutated and job.switch is not None:
            request["switch"] = {"module": job.module, "number": job.switch}
        elif mutated:
            request |= {"module": job.module, "qualname": job.mutant.scope, "source": job.source}
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise Cold(f"the warm server is gone ({exc})") from exc
        reply = self._reply(timeout + 30)
        if "cold" in reply:
            raise Cold(str(reply["cold"]))
        text = ""
        with contextlib.suppress(OSError):
            text = output.read_text(encoding="utf-8", errors="replace")
            output.unlink()
        code = reply.get("returncode")
        return (None if code is None else int(code)), text

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _session_args(pytest_args: Sequence[str]) -> list[str]:
    return ["-q", "-p", "no:cacheprovider", *pytest_args]


def first_failure(output: str) -> str:
    """The node id pytest's short summary names first as failed (or in error), else "".

    Only the summary counts: a captured log's own lines can start with ``ERROR`` too.
    """
    _, header, summary = output.rpartition("short test summary info")
    for line in summary.splitlines() if header else ():
        for word in ("FAILED ", "ERROR "):
            if line.startswith(word):
                return line[len(word) :].split(" - ")[0].strip()
    return ""


class _Trust:
    """Which tests pass in a warm child with no mutant, per session: only their failures are a mutant's."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.known: dict[tuple[Path, str], bool] = {}

    def green(self, server: Server, job: forked.Job, test: str, timeout: float) -> bool:
        key = (server.where, test)
        with self.lock:
            if key in self.known:
                return self.known[key]
        code, _ = server.run(job, [test], timeout, mutated=False)
        with self.lock:
            self.known[key] = code == 0
            if code != 0:
                log.info("sweep: %s fails in a warm session with no mutant; its kills go forked", test)
            return self.known[key]


def _judge(server: Server, job: forked.Job, trust: _Trust, timeout_s: float) -> Result:
    """The job's verdict through every warm phase; Cold where a phase must be forked."""
    started = time.monotonic()
    while True:
        tests = job.suite_order if job.tests == (SUITE,) else job.tests
        limit = timeout_s * job.timeout_scale
        code, output = server.run(job, tests, limit)
        took = round(job.spent + time.monotonic() - started, 3)
        if code is None:
            return Result(job.mutant, TIMEOUT, job.tests, "", took)
        if code == USAGE_ERROR:
            raise Cold(f"the warm session and the mutant's tests disagree: {output.strip()[-200:]}")
        verdict = forked.verdict_of(code)
        if verdict == KILLED:
            failed = first_failure(output)
            if not failed or not trust.green(server, job, failed, limit):
                raise Cold("no failing test that the warm session runs green without the mutant")
            return Result(job.mutant, KILLED, job.tests, failed, took)
        later = forked.next_phase(job) if verdict == SURVIVED else None
        if later is None:
            return Result(job.mutant, verdict, job.tests, "", took)
        if later.impl:
            raise Cold("its next phase runs the other implementation")
        job = later


def run(
    jobs: Sequence[forked.Job],
    root: Path,
    pytest_args: Sequence[str],
    *,
    parallel: int,
    timeout_s: float,
    preload: Sequence[str],
    on_result: Callable[[Result], None],
) -> list[Result]:
    """Every job: those marked ``warm`` in warm sessions, ``parallel`` at a time; the rest, and any a
    session sends back, forked afterwards."""
    fit = [j for j in jobs if j.warm]
    cold = [j for j in jobs if not j.warm]
    results: list[Result] = []
    if fit:
        log.info("sweep: %d mutants of one function's body go warm, %d forked", len(fit), len(cold))
        pool = _Pool(
            root=root,
            pytest_args=pytest_args,
            preload=preload,
            timeout_s=timeout_s,
            on_result=on_result,
            results=results,
        )
        cold = pool.run(fit, parallel) + cold
        if cold:
            log.info("sweep: %d mutants forked", len(cold))
    if cold:
        results += forked.run(
            cold, root, pytest_args, parallel=parallel, timeout_s=timeout_s, on_result=on_result
        )
    return results


class _Pool:
    """Worker threads, each with its own warm session per project copy (the reference at the root, a
    woven build in its copy), taking jobs from one queue."""

    def __init__(
        self,
        *,
        root: Path,
        pytest_args: Sequence[str],
        preload: Sequence[str],
        timeout_s: float,
        on_result: Callable[[Result], None],
        results: list[Result],
    ) -> None:
        self.root, self.pytest_args, self.preload = root, pytest_args, preload
        self.timeout_s, self.on_result, self.results = timeout_s, on_result, results
        self.pending: queue.SimpleQueue[forked.Job] = queue.SimpleQueue()
        self.sent_back: list[forked.Job] = []
        self.lock = threading.Lock()
        self.trust = _Trust()

    def run(self, fit: Sequence[forked.Job], parallel: int) -> list[forked.Job]:
        """Judge ``fit``; the jobs that must be forked instead."""
        for job in fit:
            self.pending.put(job)
        with tempfile.TemporaryDirectory(prefix="sweep-warm-") as tmp:
            threads = [
                threading.Thread(target=self._worker, args=(Path(tmp, f"worker-{n}"),), daemon=True)
                for n in range(max(1, min(parallel, len(fit))))
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        return self.sent_back

    def _send_back(self, job: forked.Job) -> None:
        with self.lock:
            self.sent_back.append(job)

    def _worker(self, tmp: Path) -> None:
        # Servers are started and stopped by this thread: their parent-death signal follows it.
        servers: dict[Path, Server | None] = {}
        try:
            while True:
                try:
                    job = self.pending.get_nowait()
                except queue.Empty:
                    return
                where = job.built or self.root
                if where not in servers:
                    servers[where] = self._start(where, "compiled" if job.built else "python", tmp)
                server = servers[where]
                if server is None:
                    self._send_back(job)
                    continue
                try:
                    result = _judge(server, job, self.trust, self.timeout_s)
                except Cold as exc:
                    log.debug("sweep: %s forked: %s", job.mutant.id, exc)
                    self._send_back(job)
                    if server.proc.poll() is not None:
                        log.warning("sweep: a warm session in %s stopped; its mutants go forked", where)
                        servers[where] = None
                    continue
                with self.lock:
                    self.results.append(result)
                    self.on_result(result)
        finally:
            for server in servers.values():
                if server is not None:
                    server.stop()

    def _start(self, where: Path, impl: str, tmp: Path) -> Server | None:
        folder = tmp / f"session-{impl}-{abs(hash(where))}"
        folder.mkdir(parents=True)
        server = Server(where, impl, self.pytest_args, self.preload, folder)
        try:
            server.start()
        except Cold as exc:
            log.warning("sweep: no warm session in %s (%s); its mutants go forked", where, exc)
            server.stop()
            return None
        return server

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

import logging
import os
import queue
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from critical_harness.compiled import IMPL_ENV
from critical_harness.model import PRELOAD_ENV
from critical_harness.processes import Runner
from critical_harness.warm import GoCold, WarmServer, swap_code, switch_on
from mutation_model import KILLED, SURVIVED, TIMEOUT

from ..select_tests import SUITE
from ..work_item import Result
from . import forked
from .compiled_builds import SWITCH_ENV

log = logging.getLogger("mutation_sweep")
START_TIMEOUT_S = 300.0
# pytest's exit status when a target names no collected item: the session and the mutant's tests disagree
USAGE_ERROR = 4


def _run(
    server: WarmServer, job: forked.Job, tests: Sequence[str], timeout: float, *, mutated: bool = True
) -> tuple[int | None, str]:
    """(pytest's exit status, None past ``timeout``; the child's output) of ``tests``, stopping at the
    first failure, with the job's mutant swapped in (``mutated``; its switch turned on, in a woven
    build), else with none."""
    swap, env = None, {}
    if mutated and job.switch is not None:
        swap = switch_on(job.module, job.switch)
        # and so in a child interpreter a test starts, which loads the woven build afresh
        env = {SWITCH_ENV: str(job.switch)}
    elif mutated:
        swap = swap_code(job.module, job.mutant.scope, job.source)
    return server.run_tests(tests, True, env, timeout, swap)


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

    def green(self, server: WarmServer, where: Path, job: forked.Job, test: str, timeout: float) -> bool:
        key = (where, test)
        with self.lock:
            if key in self.known:
                return self.known[key]
        code, _ = _run(server, job, [test], timeout, mutated=False)
        with self.lock:
            self.known[key] = code == 0
            if code != 0:
                log.info("sweep: %s fails in a warm session with no mutant; its kills go forked", test)
            return self.known[key]


def _judge(server: WarmServer, where: Path, job: forked.Job, trust: _Trust, timeout_s: float) -> Result:
    """The job's verdict through every warm phase; GoCold where a phase must be forked."""
    started = time.monotonic()
    while True:
        tests = job.suite_order if job.tests == (SUITE,) else job.tests
        limit = forked.limit_s(job, timeout_s)
        code, output = _run(server, job, tests, limit)
        took = round(job.spent + time.monotonic() - started, 3)
        if code is None:
            return Result(job.mutant, TIMEOUT, job.tests, "", took)
        if code == USAGE_ERROR:
            raise GoCold(f"the warm session and the mutant's tests disagree: {output.strip()[-200:]}")
        verdict = forked.verdict_of(code)
        if verdict == KILLED:
            failed = first_failure(output)
            if not failed or not trust.green(server, where, job, failed, limit):
                raise GoCold("no failing test that the warm session runs green without the mutant")
            return Result(job.mutant, KILLED, job.tests, failed, took)
        later = forked.next_phase(job) if verdict == SURVIVED else None
        if later is None:
            return Result(job.mutant, verdict, job.tests, "", took)
        if later.impl:
            raise GoCold("its next phase runs the other implementation")
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
        self.runner = Runner()  # every session's process, ended together once the pool is done

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
            self.runner.cancel_all()
        return self.sent_back

    def _send_back(self, job: forked.Job) -> None:
        with self.lock:
            self.sent_back.append(job)

    def _worker(self, tmp: Path) -> None:
        # A server started by this thread ends with it (its parent-death signal follows the thread).
        servers: dict[Path, WarmServer | None] = {}
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
                result = _judge(server, where, job, self.trust, self.timeout_s)
            except GoCold as exc:
                log.debug("sweep: %s forked: %s", job.mutant.id, exc)
                self._send_back(job)
                if not server.alive():
                    log.warning("sweep: a warm session in %s stopped; its mutants go forked", where)
                    servers[where] = None
                continue
            with self.lock:
                self.results.append(result)
                self.on_result(result)

    def _start(self, where: Path, impl: str, tmp: Path) -> WarmServer | None:
        folder = tmp / f"session-{impl}-{len(list(tmp.glob('session-*')))}"
        folder.mkdir(parents=True)
        env = {**os.environ, PRELOAD_ENV: ",".join(self.preload), IMPL_ENV: impl}
        env.pop(SWITCH_ENV, None)
        args = ["-q", "-p", "no:cacheprovider", *self.pytest_args]
        server = WarmServer(self.runner, where, env, args, folder)
        try:
            server.start(START_TIMEOUT_S)
        except GoCold as exc:
            log.warning("sweep: no warm session in %s (%s); its mutants go forked", where, exc)
            return None
        return server

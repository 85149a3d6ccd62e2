"""A run: one snapshot of the project (so editing the tree during a run changes no verdict), a copy per
job, the baselines, the canary, the rest in parallel; on any exit the copies go and every child ends.

The baselines run side by side: the reference's tests in shares, one per copy, in the copies' warm
servers (the whole suite where a generated mutant or ``full`` rests on it, else the ``killed_by`` tests),
and the woven build's. A red baseline is ``SuiteRed``, naming the tests; a ``killed_by`` entry naming no
test, or a package the tests import from elsewhere than the copy, an ``EngineError``.
"""

from __future__ import annotations

import logging
import queue
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from ...config import Config
from ...model import KILLED, WRONG_REASON, Outcome
from .. import EngineError, SuiteRed
from . import woven
from .context import Context, Plan, make_copy
from .edit import Edit
from .judge import evaluate, tail
from .outcomes import TestRun, entry_status, merge
from .processes import Runner, become_subreaper

log = logging.getLogger("guard_mutation.engines.edits")


def _checked(ctx: Context, run: TestRun, project: Path, what: str) -> TestRun:
    if run.timed_out:
        raise EngineError(
            f"{what} did not finish within timeout_s={ctx.timeout:g}; raise [harness] timeout_s"
        )
    if run.returncode not in (0, 5) or run.collect_errors:
        failing = run.failed() or run.collect_errors
        raise SuiteRed(
            failing, what + ("" if failing else f" (pytest {run.returncode}: {tail(run.output, 3)})")
        )
    files = run.package_files or []
    if run.package_error or not files or not Path(files[0]).resolve().is_relative_to(project.resolve()):
        found = run.package_error or ", ".join(files) or "nothing"
        raise EngineError(
            f"inside pytest, `import {ctx.config.harness.package}` gives {found}, not the copy {project}: "
            "the tests would not see the mutants (an installed copy or a plugin shadows it)"
        )
    return run


def _suite(ctx: Context, project: Path, impl: str, plan: Plan) -> TestRun:
    """The unmutated tests, cold, on ``impl`` (the core built first); green or an error."""
    code, output = ctx.build(project) if impl == "compiled" else (0, "")
    if code != 0:
        raise EngineError(f"the unmutated compiled sources do not build: {tail(output, 5)}")
    run = ctx.pytest(project, ctx.config.harness.tests, False, impl, plan)
    return _checked(ctx, run, project, f"the unmutated tests ({impl})")


def _baselines(ctx: Context, copies: list[Path], edits: Sequence[Edit], full: bool) -> None:
    python, compiled = [e for e in edits if not e.compiled], [e for e in edits if e.compiled]
    whole = {"python": any(e.generated for e in python), "compiled": any(e.generated for e in compiled)}
    whole = {impl: full or is_whole for impl, is_whole in whole.items()}
    entries = sorted({t for e in python for t in e.mutant.killed_by})
    parts = [tuple(entries[i :: len(copies)]) for i in range(len(copies))]
    shares = [] if not python else [None] if whole["python"] else [p for p in parts if p]
    select = None if whole["compiled"] else tuple(sorted({t for e in compiled for t in e.mutant.killed_by}))
    started, tests = time.monotonic(), ctx.config.harness.tests
    with ThreadPoolExecutor(len(copies)) as pool:
        futures = [pool.submit(ctx.unmutated, copies[i], tests, Plan(select=s)) for i, s in enumerate(shares)]
        woven_run = woven.prepare(ctx, copies, compiled, Plan(select=select))  # here: its servers outlive it
        runs = [_checked(ctx, f.result(), copies[i], "the unmutated tests") for i, f in enumerate(futures)]
    if woven_run is not None:
        runs.append(_checked(ctx, woven_run, ctx.woven or copies[0], "the tests on the woven build"))
    elif compiled:
        runs.append(_suite(ctx, copies[-1], "compiled", Plan(select=select)))
    ctx.green |= {impl for impl, is_whole in whole.items() if is_whole}
    merged = merge(runs)
    ctx.files = merged.files_quickest_first() if any(whole.values()) else ()
    log.info("[baseline] %d tests green in %.1fs", len(merged.outcomes), time.monotonic() - started)
    collected = dict.fromkeys([*(merged.collected or []), *merged.outcomes], "")
    absent = [
        f"{e.id}: {t}" for e in edits for t in e.mutant.killed_by if entry_status(t, collected) == "absent"
    ]
    if absent:
        raise EngineError(f"killed_by names no test the configured tests collect: {'; '.join(absent[:5])}")


def _suite_green(ctx: Context) -> Callable[[str], None]:
    """The check, on first need, that the whole unmutated suite is green on an implementation."""
    lock, found = threading.Lock(), dict[str, Exception | None]()

    def green(impl: str) -> None:
        with lock:
            if impl not in ctx.green and impl not in found:
                log.info("[baseline] a verdict rests on the whole suite: is it green unmutated (%s)?", impl)
                try:
                    _suite(ctx, make_copy(ctx.snapshot, ctx.tmp / f"suite-{impl}"), impl, Plan())
                    found[impl] = None
                except Exception as exc:
                    found[impl] = exc
            error = found.get(impl)
            if error is not None:
                raise error

    return green


def _judged(
    ctx: Context, slots: queue.Queue[Path], edit: Edit, full: bool, green: Callable[[str], None]
) -> Outcome:
    project = slots.get()
    try:
        return evaluate(ctx, project, edit, full, green)
    finally:
        slots.put(project)


def _said(edit: Edit, outcome: Outcome, done: int, total: int) -> None:
    note = f" - {outcome.detail}" if outcome.verdict != KILLED and outcome.detail else ""
    log.info("[%d/%d] %s: %s (%.1fs)%s", done, total, edit.id, outcome.verdict, outcome.seconds, note)


def execute(
    config: Config, root: Path, edits: Sequence[Edit], canary: Edit | None, **run: Any
) -> dict[str, Outcome]:
    """Every edit judged (the canary first: the run is void unless it is killed), by id. ``run``: ``jobs``,
    ``full``, ``runtime`` and ``warm``."""
    full = bool(run["full"])
    become_subreaper()
    tmp = Path(tempfile.mkdtemp(prefix="guard-mutation-edits-"))
    runner = Runner()
    try:
        ctx = Context(config, tmp, runner, run["runtime"], run["warm"])
        (tmp / "outcomes").mkdir()
        make_copy(root.resolve(), ctx.snapshot)
        others = [e for e in edits if e is not canary]
        copies = [
            make_copy(ctx.snapshot, tmp / f"slot{i}") for i in range(max(1, min(run["jobs"], len(others))))
        ]
        for copy in copies if any(not e.compiled for e in edits) else ():
            ctx.server("python", copy, wait=False)
        _baselines(ctx, copies, edits, full)
        green = _suite_green(ctx)
        done: dict[str, Outcome] = {}
        if canary is not None:
            done[canary.id] = outcome = evaluate(ctx, copies[0], canary, full, green)
            _said(canary, outcome, 1, len(edits))
            if outcome.verdict not in (KILLED, WRONG_REASON):
                raise EngineError(
                    f"the run is void: the canary {canary.id!r} was {outcome.verdict} ({outcome.detail}); "
                    "the edits or the test runs are not taking effect, so no verdict could be trusted"
                )
        slots: queue.Queue[Path] = queue.Queue()
        for copy in copies:
            slots.put(copy)
        with ThreadPoolExecutor(len(copies)) as pool:
            futures = {pool.submit(_judged, ctx, slots, e, full, green): e for e in others}
            try:
                for future in as_completed(futures):
                    done[futures[future].id] = future.result()
                    _said(futures[future], done[futures[future].id], len(done), len(edits))
            except BaseException:
                runner.cancel_all()
                for future in futures:
                    future.cancel()
                raise
        return done
    finally:  # a second ^C or a SIGTERM must not cut the cleanup short
        main = threading.current_thread() is threading.main_thread()
        held = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
        runner.cancel_all()
        for _ in range(50):  # a child killed a moment ago may still be closing files in it
            shutil.rmtree(tmp, ignore_errors=True)
            if not tmp.exists():
                break
            time.sleep(0.1)
        for signum, handler in held.items():
            signal.signal(signum, handler)

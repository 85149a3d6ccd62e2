"""A whole run: the baseline, the canary, the rest in parallel, and cleanup on any exit."""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path

from mutation_model import KILLED

from .compiled import is_compiled
from .context import Context, Plan
from .engine import evaluate, tail
from .model import (
    PLUGIN_SOURCE,
    WRONG_REASON,
    Config,
    ConfigError,
    Mutant,
    Result,
    RunReport,
    SetupError,
    TestRun,
)
from .outcomes import entry_status, merge_runs
from .processes import Runner
from .switched_build import prepare_woven
from .warm import SERVER_SOURCE
from .workspace import COPIES_PREFIX, OWNER_FILE, identity, make_copy, remove_stale_copies, remove_tree


def _check_package_location(run: TestRun, project: Path, package: str) -> None:
    if run.package_error:
        raise SetupError(f"inside pytest, `import {package}` fails in the project copy: {run.package_error}")
    files = run.package_files or []
    # A namespace package lists every portion on sys.path; its submodules come from the first one.
    if not files or not Path(files[0]).resolve().is_relative_to(project.resolve()):
        raise SetupError(
            f"inside pytest, `import {package}` resolves to {', '.join(files) or 'nothing'}, not to the "
            f"temporary project copy {project}; mutants would not be seen by the tests (an installed "
            f"copy or a pytest11 plugin entry point shadows it)"
        )


def _describe_red(run: TestRun) -> str:
    lines = [f"  {error}" for error in run.collect_errors]
    lines += [f"  {t}: {run.messages.get(t, '')}".rstrip(": ") for t in run.failed()]
    if not lines:
        lines = [f"  pytest exit status {run.returncode}: {tail(run.output, 5)}"]
    return "\n".join(lines)


def run_baseline(ctx: Context, project: Path, select: Sequence[str] | None, *, warm: bool) -> TestRun:
    """The unmutated tests, all of them or only those of ``select``; every test is collected either way.
    ``warm``: in the copy's warm server, where there is one."""
    what, be = ("the unmutated suite", "is") if select is None else ("the unmutated killed_by tests", "are")
    # The main baseline also records what each test calls, for the cases a mutant should run first.
    plan = Plan(select=None if select is None else tuple(select), record_calls=warm)
    if warm:
        run = ctx.pytest_unmutated(project, plan)
    else:
        run = ctx.pytest(project, ctx.config.harness.tests, exitfirst=False, plan=plan)
    if run.timed_out:
        raise SetupError(f"{what} did not finish within timeout_s={ctx.timeout:g}; raise timeout_s")
    if run.returncode not in (0, 5) or (run.returncode == 5 and select is None):
        raise SetupError(f"{what} {be} not green; refusing to run mutants:\n{_describe_red(run)}")
    _check_package_location(run, project, ctx.config.harness.package)
    return run


def _said(ctx: Context, what: str, baseline: Callable[[], TestRun]) -> TestRun:
    """A baseline, said once however many copies share it: what runs, then how many tests are green."""
    ctx.say(f"[baseline] running {what} of {' '.join(ctx.config.harness.tests)}")
    started = time.monotonic()
    run = baseline()
    ctx.say(f"[baseline] {len(run.outcomes)} tests green in {time.monotonic() - started:.1f}s")
    return run


def run_baselines(ctx: Context, copies: list[Path], selected: list[Mutant], full: bool) -> TestRun:
    """Every baseline, spread over the copies side by side: the unmutated tests in shares, one per copy,
    the compiled sources' build with their tests in the last copy after its share, and beside them all
    the compiled mutants' woven build.

    Without --full a kill rests on the killed_by tests alone: the rest of the suite runs on the first
    verdict that needs it (SuiteCheck).
    """
    if full:
        shares: list[list[str] | None] = [None]
    else:
        # The compiled mutants' tests run on the compiled builds, in their own baselines below.
        wanted = sorted({e for m in selected if not is_compiled(m.spec.file) for e in m.spec.killed_by})
        shares = [wanted[i :: len(copies)] for i in range(len(copies))]
        shares = [share for share in shares if share] or [[]]

    def work(index: int) -> list[TestRun]:
        runs = [run_baseline(ctx, copies[index], shares[index], warm=True)] if index < len(shares) else []
        if index == len(copies) - 1:
            run_compiled_baseline(ctx, copies[index], selected)
        return runs

    def every_share() -> TestRun:
        with ThreadPoolExecutor(max_workers=len(copies)) as pool:
            futures = [pool.submit(work, index) for index in range(len(copies))]
            # In this thread, beside them: the woven servers it launches must outlive the baseline's workers.
            prepare_woven(ctx, copies[0], copies, selected)
            parts = [future.result() for future in futures]
        return merge_runs([run for runs in parts for run in runs])

    return _said(ctx, "the unmutated suite" if full else "the unmutated killed_by tests", every_share)


class SuiteCheck:
    """The whole unmutated suite, run once in a copy of its own on first need, then its answer kept."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ran = False
        self._error: SetupError | None = None

    def __call__(self, ctx: Context) -> None:
        with self._lock:
            if not self._ran:
                self._ran = True
                ctx.say("[baseline] a verdict rests on the rest of the suite")
                try:
                    copy = make_copy(ctx.snapshot, ctx.tmp / "suite" / "project")
                    _said(ctx, "the unmutated suite", lambda: run_baseline(ctx, copy, None, warm=False))
                except SetupError as error:
                    self._error = error
            if self._error is not None:
                raise SetupError(str(self._error))


def run_compiled_baseline(ctx: Context, project: Path, mutants: list[Mutant]) -> None:
    """Build the copy's compiled sources and require the compiled mutants' tests green on them."""
    targets = sorted({entry for m in mutants if is_compiled(m.spec.file) for entry in m.spec.killed_by})
    if not targets:
        return
    ctx.say("[baseline] building the compiled sources and running their mutants' tests on them")
    started = time.monotonic()
    code, output = ctx.build(project)
    if code != 0:
        raise SetupError(f"the unmutated compiled sources do not build:\n{tail(output, 10)}")
    run = ctx.pytest(project, targets, exitfirst=False, impl="compiled")
    if run.returncode != 0:
        raise SetupError(
            f"the compiled mutants' tests are not green on the unmutated build; refusing to run mutants:\n"
            f"{_describe_red(run)}"
        )
    seconds = time.monotonic() - started
    ctx.say(f"[baseline] {len(run.outcomes)} tests green on the compiled build in {seconds:.1f}s")


def check_killed_by_exist(config: Config, baseline: TestRun) -> None:
    collected = dict.fromkeys(baseline.outcomes if baseline.collected is None else baseline.collected, "")
    problems = [
        f"  mutant {m.spec.id!r}: killed_by {entry!r}"
        for m in config.mutants
        for entry in m.spec.killed_by
        if entry_status(entry, collected) == "absent"
    ]
    if problems:
        raise ConfigError(
            "killed_by test(s) not collected by the configured tests "
            f"({', '.join(config.harness.tests)}):\n" + "\n".join(problems)
        )


def _report_progress(ctx: Context, result: Result, done: int, total: int) -> None:
    note = f" - {result.detail}" if result.detail and result.verdict != KILLED else ""
    ctx.say(f"[{done}/{total}] {result.mutant.spec.id}: {result.verdict} ({result.seconds:.1f}s){note}")


def run_canary(ctx: Context, project: Path, full: bool, total: int) -> Result:
    canary = ctx.config.canary()
    ctx.say(f"[start] {canary.spec.id} (canary)")
    result = evaluate(ctx, project, canary, full)
    result.canary = True
    _report_progress(ctx, result, 1, total)
    if result.verdict not in (KILLED, WRONG_REASON):
        raise SetupError(
            f"run is void: canary mutant {canary.spec.id!r} was {result.verdict}"
            f"{' (' + result.detail + ')' if result.detail else ''}; the harness's edits or test runs "
            "are not taking effect, so no other verdict could be trusted"
        )
    return result


def _worker(ctx: Context, slots: queue.Queue[Path], mutant: Mutant, full: bool) -> Result:
    project = slots.get()
    try:
        ctx.say(f"[start] {mutant.spec.id}")
        return evaluate(ctx, project, mutant, full)
    finally:
        slots.put(project)


def make_copies(ctx: Context, count: int, compiled: bool) -> list[Path]:
    """The copies the workers judge mutants in, all from the snapshot; their warm servers start at once,
    beside the baseline."""
    copies = [make_copy(ctx.snapshot, ctx.tmp / f"slot{index}" / "project") for index in range(count)]
    for copy in copies:
        ctx.launch_servers(copy, builder=compiled)
    return copies


def run_parallel(ctx: Context, copies: list[Path], mutants: list[Mutant], full: bool) -> list[Result]:
    slots: queue.Queue[Path] = queue.Queue()
    for copy in copies:
        slots.put(copy)
    jobs = len(copies)
    results: list[Result] = []
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures: list[Future[Result]] = [pool.submit(_worker, ctx, slots, m, full) for m in mutants]
        for future in as_completed(futures):
            results.append(future.result())
            _report_progress(ctx, results[-1], len(results) + 1, len(mutants) + 1)
    except BaseException:
        ctx.runner.cancel_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results


def execute(config: Config, args: argparse.Namespace, selected: list[Mutant]) -> RunReport:
    started = time.monotonic()
    for stale in remove_stale_copies(Path(tempfile.gettempdir())):
        print(f"critical_mutants: removed {stale}, left by a run that is gone", file=sys.stderr)
    tmp = Path(tempfile.mkdtemp(prefix=COPIES_PREFIX))
    runner = Runner()
    try:
        (tmp / OWNER_FILE).write_text(identity(os.getpid()) or str(os.getpid()), encoding="utf-8")
        ctx = Context(config, tmp, runner, args.runtime, args.engine, require_suite_green=SuiteCheck())
        ctx.plugin_dir.mkdir()
        (tmp / "outcomes").mkdir()
        shutil.copy2(PLUGIN_SOURCE, ctx.plugin_dir / PLUGIN_SOURCE.name)
        shutil.copy2(SERVER_SOURCE, ctx.plugin_dir / SERVER_SOURCE.name)
        # One snapshot of the tree, before the baseline; every copy comes from it, so editing the
        # working tree during a run changes no verdict.
        make_copy(config.root, ctx.snapshot)
        canary = config.canary()
        others = [m for m in selected if m.spec.id != canary.spec.id]
        jobs = max(1, min(args.jobs or config.harness.jobs, len(others)))
        copies = make_copies(ctx, jobs, any(is_compiled(m.spec.file) for m in selected))
        baseline = run_baselines(ctx, copies, selected, args.full)
        check_killed_by_exist(config, baseline)
        ctx.calls = baseline.calls
        results = [run_canary(ctx, copies[0], args.full, len(others) + 1)]
        results += run_parallel(ctx, copies, others, args.full) if others else []
    finally:
        # A second ^C or a SIGTERM must not cut the cleanup short.
        previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
        runner.cancel_all()
        remove_tree(tmp)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    order = {m.spec.id: i for i, m in enumerate(config.mutants)}
    results.sort(key=lambda r: order[r.mutant.spec.id])
    return RunReport(
        results, args.runtime, args.full, time.monotonic() - started, config.path, ctx.engine, ctx.warm_runs
    )

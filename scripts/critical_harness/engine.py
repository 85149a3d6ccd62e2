"""Judge one mutant: apply it in a copy, probe the import, run its tests, classify the outcome."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from mutation_model import KILLED, SURVIVED, TIMEOUT

from .compiled import build_outputs, implementation, is_compiled
from .context import NO_PLAN, Context, Plan
from .model import INVALID, NOT_EXERCISED, WRONG_REASON, Mutant, Result, TestRun
from .outcomes import entry_matches, entry_status
from .warm import GoCold, WarmServer


def classify(mutant: Mutant, run: TestRun, other_failures: list[str] | None = None) -> Result:
    statuses = {entry: entry_status(entry, run.outcomes) for entry in mutant.spec.killed_by}
    failed = [e for e, s in statuses.items() if s == "failed"]
    skipped = [e for e, s in statuses.items() if s == "skipped"]
    # A killed_by test skipped on this runtime cannot be asked to fail; every other one must.
    missing = [e for e, s in statuses.items() if s not in ("failed", "skipped")]
    failures = run.failed() + (other_failures or [])
    result = Result(
        mutant, SURVIVED, failed_tests=failures, missing_killed_by=missing, skipped_killed_by=skipped
    )
    result.first_failure = run.first_failure()
    if failed:
        result.verdict = WRONG_REASON if missing else KILLED
    elif not missing:
        result.verdict = NOT_EXERCISED
    elif failures:
        result.verdict = WRONG_REASON
    return result


def tail(output: str, lines: int = 1) -> str:
    kept = [line.strip() for line in output.splitlines() if line.strip()]
    return " | ".join(kept[-lines:]) if kept else "(no output)"


def _broken_run(mutant: Mutant, run: TestRun, phase: str) -> Result | None:
    if run.timed_out:
        return Result(mutant, TIMEOUT, detail=f"{phase} did not finish within the time limit")
    if run.collect_errors:
        return Result(mutant, INVALID, detail=f"collection error: {run.collect_errors[0]}")
    if run.returncode in (2, 3, 4):
        return Result(mutant, INVALID, detail=f"pytest exit status {run.returncode}: {tail(run.output)}")
    if run.returncode == 5:
        return Result(mutant, INVALID, detail="pytest collected no tests")
    return None


def _judge(ctx: Context, project: Path, mutant: Mutant, full: bool, server: WarmServer | None) -> Result:
    if server is not None:
        try:
            # A body-only edit leaves import-time code as it was, so there is no import to probe.
            warm = _run_tests(
                ctx,
                project,
                mutant,
                full,
                lambda targets, exitfirst, plan: ctx.pytest_warm(
                    server, project, mutant, targets, exitfirst=exitfirst, plan=plan
                ),
            )
            warm.engine = "warm"
            return warm
        except GoCold:
            pass  # judged cold below, from the start
    if is_compiled(mutant.spec.file):
        code, output = ctx.build(project)
        if code is None:
            return Result(mutant, TIMEOUT, detail=f"building the mutated {mutant.spec.file} timed out")
        if code != 0:
            return Result(
                mutant, INVALID, detail=f"the mutated {mutant.spec.file} does not build: {tail(output)}"
            )
    code, output = ctx.import_check(project, mutant.spec.file)
    if code is None:
        return Result(mutant, TIMEOUT, detail=f"importing the package took over {ctx.timeout:g}s")
    if code != 0:
        return Result(mutant, INVALID, detail=f"package does not import: {tail(output)}")
    return _run_tests(
        ctx,
        project,
        mutant,
        full,
        lambda targets, exitfirst, plan: ctx.pytest(
            project, targets, exitfirst=exitfirst, impl=implementation(mutant.spec.file), plan=plan
        ),
    )


def _run_tests(
    ctx: Context,
    project: Path,
    mutant: Mutant,
    full: bool,
    pytest: Callable[[Sequence[str], bool, Plan], TestRun],
) -> Result:
    if full:
        run = pytest(ctx.config.harness.tests, False, NO_PLAN)
    else:
        # Once each killed_by entry has a failed test the mutant is killed: the rest need not run, and the
        # cases that reached the mutated scope unmutated run first.
        plan = Plan(decided_by=mutant.spec.killed_by, first=ctx.cases_reaching(mutant))
        run = pytest(mutant.spec.killed_by, False, plan)
    broken = _broken_run(mutant, run, "the killed_by tests" if not full else "the full suite")
    if broken is not None:
        return broken
    result = classify(mutant, run)
    if full or result.verdict != SURVIVED:
        return result
    # killed_by tests passed: does anything else fail?  That tells `survived` from a wrong-reason kill.
    ctx.require_suite_green()
    confirm = pytest(ctx.config.harness.tests, True, NO_PLAN)
    broken = _broken_run(mutant, confirm, "the full suite (killed_by tests passed)")
    if broken is not None:
        return broken
    others = [t for t in confirm.failed() if not any(entry_matches(e, t) for e in mutant.spec.killed_by)]
    result = classify(mutant, run, others)
    result.first_failure = result.first_failure or confirm.first_failure()
    return result


def evaluate(ctx: Context, project: Path, mutant: Mutant, full: bool) -> Result:
    started = time.monotonic()
    try:
        if not is_compiled(mutant.spec.file):
            compile(mutant.mutated, mutant.spec.file, "exec")
    except (SyntaxError, ValueError) as exc:
        result = Result(mutant, INVALID, detail=f"mutated file does not compile: {exc}")
    else:
        # The copy's warm server imports the package as it is on disk: start it before the edit lands.
        server = ctx.warm_server(project, mutant)
        if is_compiled(mutant.spec.file):
            ctx.builder(project)
        target = project / mutant.spec.file
        # A rebuild rewrites the build outputs: they are put back with the source.
        kept = {path: path.read_bytes() for path in build_outputs(project, mutant.spec.file) if path.exists()}
        original = target.read_bytes()
        target.write_bytes(mutant.mutated.encode("utf-8"))
        try:
            result = _judge(ctx, project, mutant, full, server)
        finally:
            target.write_bytes(original)
            for path, content in kept.items():
                path.write_bytes(content)
    result.seconds = time.monotonic() - started
    return result

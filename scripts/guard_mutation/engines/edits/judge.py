"""Judge one mutant in a project copy, warm where a server holds it, else cold (the file in the copy, the
core rebuilt): a catalogue mutant runs its ``killed_by`` tests until each has failed, which kills it (a
test skipped on this runtime excepted); when they pass, the whole suite tells ``survived`` from
``wrong-reason``. A generated mutant runs the whole
suite (its files the quickest first) to the first failure; where the woven build's map holds it, only
the tests that reached it and those the map is blind to. ``full``: the whole suite, to its end."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ...model import INVALID, KILLED, NO_TESTS, SURVIVED, TIMEOUT, WRONG_REASON, Outcome
from .context import Context, Plan, build_outputs
from .edit import Edit
from .outcomes import TestRun, entry_matches, entry_status
from .warm import GoCold

Pytest = Callable[[Sequence[str], bool, Plan], TestRun]
Green = Callable[[str], None]


def tail(output: str, lines: int = 1) -> str:
    kept = [line.strip() for line in output.splitlines() if line.strip()]
    return " | ".join(kept[-lines:]) if kept else "(no output)"


def broken(run: TestRun, what: str) -> Outcome | None:
    """The outcome of a run that judged nothing: past the time limit, or pytest could not run."""
    if run.timed_out:
        return Outcome(TIMEOUT, detail=f"{what} did not finish within the time limit")
    if run.collect_errors:
        return Outcome(INVALID, detail=f"collection error: {run.collect_errors[0]}")
    if run.returncode in (2, 3, 4, 5):
        return Outcome(INVALID, detail=f"pytest exit status {run.returncode}: {tail(run.output)}")
    return None


def classify(edit: Edit, run: TestRun, others: Sequence[str] = ()) -> Outcome:
    """A catalogue mutant's verdict from its run (and the other tests' failures, where they ran)."""
    statuses = {entry: entry_status(entry, run.outcomes) for entry in edit.mutant.killed_by}
    # A killed_by test skipped on this runtime cannot be asked to fail; every other one must.
    missing = [e for e, s in statuses.items() if s not in ("failed", "skipped")]
    failures = (*run.failed(), *others)
    if "failed" in statuses.values() and not missing:
        return Outcome(KILLED, failures, detail=run.first_failure())
    if failures:
        unkilled = f"{missing[0]} passed" if missing else f"killed by {failures[0]}"
        return Outcome(WRONG_REASON, failures, detail=f"not killed by every killed_by test: {unkilled}")
    if not missing:
        return Outcome(NO_TESTS, detail="every killed_by test is skipped on this runtime")
    return Outcome(SURVIVED)


def _catalogue(ctx: Context, edit: Edit, full: bool, pytest: Pytest, green: Green) -> Outcome:
    tests, killed_by = ctx.config.harness.tests, edit.mutant.killed_by
    if full:
        run = pytest(tests, False, Plan())
        return broken(run, "the whole suite") or classify(edit, run)
    run = pytest(killed_by, False, Plan(first=ctx.cases_reaching(edit), decide=killed_by))
    outcome = broken(run, "its killed_by tests") or classify(edit, run)
    if outcome.verdict != SURVIVED:
        return outcome
    green(edit.impl)  # a verdict now rests on the rest of the suite: it must be green unmutated
    confirm = pytest(tests, True, Plan())
    others = [t for t in confirm.failed() if not any(entry_matches(e, t) for e in killed_by)]
    return broken(confirm, "the whole suite") or classify(edit, run, others)


def _generated(ctx: Context, edit: Edit, full: bool, pytest: Pytest) -> Outcome:
    mapped = None if full else ctx.mapped(edit)
    if mapped is not None and not mapped[1]:
        return Outcome(NO_TESTS, detail="no test reaches it")
    every = ctx.config.harness.tests if full else ctx.files or ctx.config.harness.tests
    run = pytest(every if mapped is None else mapped[1], not full, Plan())
    if run.timed_out:
        return Outcome(TIMEOUT, detail="the tests did not finish within the time limit")
    if run.returncode != 0:
        failed = tuple(run.failed()) or tuple(e.split(": ", 1)[0] for e in run.collect_errors)
        return Outcome(KILLED, failed, detail=run.first_failure() or tail(run.output))
    if mapped is not None and not mapped[0]:
        return Outcome(NO_TESTS, detail="no test reaches it; the tests that start processes pass")
    return Outcome(SURVIVED)


def _tests(ctx: Context, edit: Edit, full: bool, pytest: Pytest, green: Green) -> Outcome:
    return (
        _generated(ctx, edit, full, pytest) if edit.generated else _catalogue(ctx, edit, full, pytest, green)
    )


def _cold(ctx: Context, project: Path, edit: Edit, full: bool, green: Green) -> Outcome:
    if edit.compiled:
        code, output = ctx.build(project)
        if code != 0:
            found = re.search(r"^(\S+\.pyx:\d+:\d+: .+)$", output, flags=re.MULTILINE)  # Cython's first error
            why = "timed out" if code is None else (found[1] if found else tail(output))
            return Outcome(
                TIMEOUT if code is None else INVALID, detail=f"building the mutated {edit.file}: {why}"
            )

    def pytest(tests: Sequence[str], exitfirst: bool, plan: Plan) -> TestRun:
        return ctx.pytest(project, tests, exitfirst, edit.impl, plan)

    return _tests(ctx, edit, full, pytest, green)


def evaluate(ctx: Context, project: Path, edit: Edit, full: bool, green: Green) -> Outcome:
    """``edit`` judged in the copy ``project``, which is as the snapshot again afterwards."""
    started = time.monotonic()
    outcome: Outcome | None = None
    try:
        if not edit.compiled:
            compile(edit.mutated, edit.file, "exec")
    except (SyntaxError, ValueError) as exc:
        outcome = Outcome(INVALID, detail=f"the mutated file does not compile: {exc}")
    warm = None if outcome is not None else ctx.warm_job(project, edit)  # its server read the unmutated copy
    if warm is not None:
        server, swap = warm

        def in_server(tests: Sequence[str], exitfirst: bool, plan: Plan) -> TestRun:
            return ctx.pytest_warm(server, tests, exitfirst, plan, swap)

        with contextlib.suppress(GoCold):  # judged cold below, from the start
            outcome = _tests(ctx, edit, full, in_server, green)
    if outcome is None:
        target = project / edit.file
        kept = {
            p: p.read_bytes()
            for p in (build_outputs(project, edit.file) if edit.compiled else [])
            if p.exists()
        }
        kept[target] = target.read_bytes()
        target.write_bytes(edit.mutated.encode("utf-8"))
        try:
            outcome = _cold(ctx, project, edit, full, green)
        finally:
            for path, content in kept.items():
                path.write_bytes(content)
    return replace(outcome, seconds=round(time.monotonic() - started, 3))

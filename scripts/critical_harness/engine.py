"""Judge one mutant: apply it in a copy, probe the import, run its tests, classify the outcome."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path, PurePosixPath

from .compiled import IMPL_ENV, build_command, build_env, build_outputs, implementation, is_compiled
from .model import (
    DECIDED_ENV,
    INVALID,
    KILLED,
    NOT_EXERCISED,
    OUTCOMES_ENV,
    PACKAGE_ENV,
    PARENT_ENV,
    PLUGIN_MODULE,
    RUNTIME_ENV,
    SELECT_ENV,
    SURVIVED,
    TIMEOUT,
    WRONG_REASON,
    Config,
    Mutant,
    Result,
    TestRun,
)
from .outcomes import entry_matches, entry_status, parse_outcomes
from .processes import Runner
from .warm import GoCold, ServerPool, WarmServer, body_only, collect_args


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


def _module_names(package: str, file: str) -> list[str]:
    parts = list(PurePosixPath(file).with_suffix("").parts)
    if parts[0] != package:
        return [package]
    if parts[-1] == "__init__":
        parts.pop()
    return [package, ".".join(parts)] if len(parts) > 1 else [package]


def tail(output: str, lines: int = 1) -> str:
    kept = [line.strip() for line in output.splitlines() if line.strip()]
    return " | ".join(kept[-lines:]) if kept else "(no output)"


class Context:
    """Everything a mutant evaluation needs: config, temp area, runner and child environment."""

    def __init__(
        self,
        config: Config,
        tmp: Path,
        runner: Runner,
        runtime: str,
        engine: str,
        *,
        require_suite_green: Callable[[Context], None],
    ) -> None:
        self.config = config
        self._require_suite_green = require_suite_green
        self.tmp = tmp
        self.runner = runner
        self.runtime = runtime
        # warm only on the simulated runtime: a forked child must not inherit an initialised CUDA
        self.engine = engine if runtime == "simulated" else "cold"
        self.plugin_dir = tmp / "plugin"
        self.snapshot = tmp / "snapshot"
        self._ids = itertools.count()
        self.print_lock = threading.Lock()
        self._servers = ServerPool(tmp, self.say, self.timeout * 4)
        self.warm_runs = 0

    def require_suite_green(self) -> None:
        """A verdict other than a kill rests on the rest of the suite: it must be green unmutated."""
        self._require_suite_green(self)

    @property
    def timeout(self) -> float:
        return self.config.harness.timeout_s

    def env(
        self,
        project: Path,
        outcomes: Path | None,
        impl: str = "python",
        decided_by: Sequence[str] = (),
        select: Sequence[str] | None = None,
    ) -> dict[str, str]:
        env = dict(os.environ)
        env[IMPL_ENV] = impl
        inherited = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join([str(project), str(self.plugin_dir), *inherited])
        # No .pyc files: a restored file with the mutant's size and mtime second could reuse its bytecode.
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env[RUNTIME_ENV] = self.runtime
        env[PACKAGE_ENV] = self.config.harness.package
        env[PARENT_ENV] = str(os.getpid())
        env.pop(OUTCOMES_ENV, None)
        return env | _run_env(outcomes, decided_by, select)

    def pytest(
        self,
        project: Path,
        targets: Sequence[str],
        *,
        exitfirst: bool,
        impl: str = "python",
        decided_by: Sequence[str] = (),
        select: Sequence[str] | None = None,
    ) -> TestRun:
        """A fresh pytest on ``targets``; it stops once every entry of ``decided_by`` has failed, and
        runs only the tests of ``select`` (when given) among those it collects."""
        outcomes = self.tmp / "outcomes" / f"{next(self._ids)}.jsonl"
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", PLUGIN_MODULE]
        cmd += [f"--rootdir={project}", *self.config.harness.pytest_args, *(["-x"] if exitfirst else [])]
        cmd += targets
        env = self.env(project, outcomes, impl, decided_by, select)
        code, output = self.runner.run(cmd, project, env, self.timeout)
        return parse_outcomes(outcomes, code, output)

    def pytest_warm(
        self,
        server: WarmServer,
        project: Path,
        mutant: Mutant | None,
        targets: Sequence[str],
        *,
        exitfirst: bool,
        decided_by: Sequence[str] = (),
        select: Sequence[str] | None = None,
    ) -> TestRun:
        """``pytest`` in a child of the copy's warm server, with the mutant (if any) swapped in."""
        outcomes = self.tmp / "outcomes" / f"{next(self._ids)}.jsonl"
        args = collect_args(project, PLUGIN_MODULE, self.config.harness.pytest_args, tuple(targets))
        args += ["-x"] if exitfirst else []
        env = _run_env(outcomes, decided_by, select)
        code, output = server.pytest(mutant, args, env, self.timeout)
        self.warm_runs += 1
        return parse_outcomes(outcomes, code, output)

    def pytest_unmutated(self, project: Path, select: Sequence[str] | None) -> TestRun:
        """The configured tests on the unmutated copy, in its warm server where there is one."""
        tests = self.config.harness.tests
        server = self.test_server(project)
        if server is not None:
            with contextlib.suppress(GoCold):
                return self.pytest_warm(server, project, None, tests, exitfirst=False, select=select)
        return self.pytest(project, tests, exitfirst=False, select=select)

    def _launch_test_server(self, project: Path, where: Path) -> WarmServer:
        harness = self.config.harness
        collect = collect_args(project, PLUGIN_MODULE, harness.pytest_args, harness.tests)
        return WarmServer(self.runner, project, self.env(project, None), collect, where)

    def _launch_builder(self, project: Path, where: Path) -> WarmServer:
        sources = sorted({m.spec.file for m in self.config.mutants if is_compiled(m.spec.file)})
        env = build_env(self.env(project, None, "compiled"))
        return WarmServer(self.runner, project, env, ["--build", *sources], where)

    def launch_servers(self, project: Path, builder: bool) -> None:
        """Start the copy's warm servers without waiting for them (before any mutant lands in the copy)."""
        if self.engine == "warm":
            self._servers.launch("server", project, partial(self._launch_test_server, project))
            if builder:
                self._servers.launch("builder", project, partial(self._launch_builder, project))

    def test_server(self, project: Path) -> WarmServer | None:
        """The copy's warm test server, launched on first use if it was not already."""
        if self.engine != "warm":
            return None
        launch = partial(self._launch_test_server, project)
        return self._servers.get("server", project, launch, "every mutant there goes cold")

    def warm_server(self, project: Path, mutant: Mutant) -> WarmServer | None:
        """The copy's warm server when this mutant can be judged warm."""
        if not body_only(mutant.original, mutant.mutated, mutant.spec.scope):
            return None
        return self.test_server(project)

    def import_check(self, project: Path, file: str) -> tuple[int | None, str]:
        cmd = [sys.executable, "-m", PLUGIN_MODULE, *_module_names(self.config.harness.package, file)]
        return self.runner.run(cmd, project, self.env(project, None, implementation(file)), self.timeout)

    def builder(self, project: Path) -> WarmServer | None:
        """The copy's warm builder, launched on first use if it was not already (before a mutant lands:
        it reads the sources)."""
        if self.engine != "warm":
            return None
        launch = partial(self._launch_builder, project)
        return self._servers.get("builder", project, launch, "builds there run cold")

    def build(self, project: Path) -> tuple[int | None, str]:
        """Rebuild the copy's compiled sources in place; a failure is the mutant's, not the run's."""
        env = build_env(self.env(project, None, "compiled"))
        builder = self.builder(project)
        if builder is not None:
            with contextlib.suppress(GoCold):
                return builder.build(env, self.timeout * 4)
        return self.runner.run(build_command(), project, env, self.timeout * 4)

    def say(self, message: str) -> None:
        with self.print_lock:
            print(message, file=sys.stderr, flush=True)


def _run_env(
    outcomes: Path | None, decided_by: Sequence[str], select: Sequence[str] | None
) -> dict[str, str]:
    """What the outcomes plugin reads: where to write, which failures decide a kill, what to run."""
    env = {} if outcomes is None else {OUTCOMES_ENV: str(outcomes)}
    env[DECIDED_ENV] = json.dumps(list(decided_by))
    env[SELECT_ENV] = json.dumps(None if select is None else list(select))
    return env


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
                lambda targets, exitfirst, decided_by: ctx.pytest_warm(
                    server, project, mutant, targets, exitfirst=exitfirst, decided_by=decided_by
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
        lambda targets, exitfirst, decided_by: ctx.pytest(
            project,
            targets,
            exitfirst=exitfirst,
            impl=implementation(mutant.spec.file),
            decided_by=decided_by,
        ),
    )


def _run_tests(
    ctx: Context,
    project: Path,
    mutant: Mutant,
    full: bool,
    pytest: Callable[[Sequence[str], bool, Sequence[str]], TestRun],
) -> Result:
    if full:
        run = pytest(ctx.config.harness.tests, False, ())
    else:
        # Once each killed_by entry has a failed test the mutant is killed: the rest need not run.
        run = pytest(mutant.spec.killed_by, False, mutant.spec.killed_by)
    broken = _broken_run(mutant, run, "the killed_by tests" if not full else "the full suite")
    if broken is not None:
        return broken
    result = classify(mutant, run)
    if full or result.verdict != SURVIVED:
        return result
    # killed_by tests passed: does anything else fail?  That tells `survived` from a wrong-reason kill.
    ctx.require_suite_green()
    confirm = pytest(ctx.config.harness.tests, True, ())
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

"""Where and how a run judges mutants: its settings, its copies' environment, its pytest runs (fresh or
in a copy's warm server) and its warm servers."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath

from .compiled import BUILD_ARGS, IMPL_ENV, build_command, build_env, implementation, is_compiled
from .model import (
    CALLS_ENV,
    DECIDED_ENV,
    FIRST_ENV,
    MODULE_SCOPE,
    OUTCOMES_ENV,
    PACKAGE_ENV,
    PARENT_ENV,
    PLUGIN_MODULE,
    PRELOAD_ENV,
    RUNTIME_ENV,
    SELECT_ENV,
    Config,
    Mutant,
    TestRun,
)
from .outcomes import parse_outcomes
from .processes import Runner
from .warm import GoCold, ServerPool, WarmServer, body_only, run_args


def _module_names(package: str, file: str) -> list[str]:
    parts = list(PurePosixPath(file).with_suffix("").parts)
    if parts[0] != package:
        return [package]
    if parts[-1] == "__init__":
        parts.pop()
    return [package, ".".join(parts)] if len(parts) > 1 else [package]


@dataclass(frozen=True)
class Plan:
    """What the outcomes plugin is asked to do in one pytest run, beyond recording outcomes."""

    decided_by: tuple[str, ...] = ()  # killed_by entries: once each has a failed test, stop
    select: tuple[str, ...] | None = None  # run only these entries' tests (all are still collected)
    first: tuple[str, ...] = ()  # node ids to run before the other cases of their test function
    record_calls: bool = False  # record which of the package's functions each test calls

    def env(self, outcomes: Path | None) -> dict[str, str]:
        env = {} if outcomes is None else {OUTCOMES_ENV: str(outcomes)}
        env[DECIDED_ENV] = json.dumps(list(self.decided_by))
        env[SELECT_ENV] = json.dumps(None if self.select is None else list(self.select))
        env[FIRST_ENV] = json.dumps(list(self.first))
        env[CALLS_ENV] = "1" if self.record_calls else ""
        return env


NO_PLAN = Plan()


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
        # What each test called in the baseline ("file:qualname"), for the cases to run first.
        self.calls: dict[str, list[str]] = {}
        # The woven build of the compiled mutants (switched_source.py), once it is built and green unmutated:
        # where it is, and each woven mutant's module and number.
        self.woven: Path | None = None
        self.switches: dict[str, tuple[str, int]] = {}

    def cases_reaching(self, mutant: Mutant) -> tuple[str, ...]:
        """The tests whose unmutated run called the mutant's scope or a function defined inside it."""
        if mutant.spec.scope == MODULE_SCOPE:
            return ()
        key = f"{mutant.spec.file}:{mutant.spec.scope}"
        return tuple(
            nodeid
            for nodeid, calls in self.calls.items()
            if any(call == key or call.startswith(f"{key}.") for call in calls)
        )

    def require_suite_green(self) -> None:
        """A verdict other than a kill rests on the rest of the suite: it must be green unmutated."""
        self._require_suite_green(self)

    @property
    def timeout(self) -> float:
        return self.config.harness.timeout_s

    def env(
        self, project: Path, outcomes: Path | None, impl: str = "python", plan: Plan = NO_PLAN
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
        return env | plan.env(outcomes)

    def pytest(
        self,
        project: Path,
        targets: Sequence[str],
        *,
        exitfirst: bool,
        impl: str = "python",
        plan: Plan = NO_PLAN,
    ) -> TestRun:
        """A fresh pytest on ``targets``, told what to select, record and stop on by ``plan``."""
        outcomes = self.tmp / "outcomes" / f"{next(self._ids)}.jsonl"
        args = run_args(project, PLUGIN_MODULE, self.config.harness.pytest_args, tuple(targets))
        cmd = [sys.executable, "-m", "pytest", *args, *(["-x"] if exitfirst else [])]
        env = self.env(project, outcomes, impl, plan)
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
        plan: Plan = NO_PLAN,
    ) -> TestRun:
        """``pytest`` in a child of the copy's warm server, with the mutant (if any) swapped in."""
        outcomes = self.tmp / "outcomes" / f"{next(self._ids)}.jsonl"
        code, output = server.pytest(mutant, targets, exitfirst, plan.env(outcomes), self.timeout)
        self.warm_runs += 1
        return parse_outcomes(outcomes, code, output)

    def pytest_unmutated(self, project: Path, plan: Plan) -> TestRun:
        """The configured tests on the unmutated copy, in its warm server where there is one."""
        tests = self.config.harness.tests
        server = self.test_server(project)
        if server is not None:
            with contextlib.suppress(GoCold):
                return self.pytest_warm(server, project, None, tests, exitfirst=False, plan=plan)
        return self.pytest(project, tests, exitfirst=False, plan=plan)

    def _launch_test_server(self, project: Path, where: Path) -> WarmServer:
        harness = self.config.harness
        collect = run_args(project, PLUGIN_MODULE, harness.pytest_args, harness.tests)
        env = {**self.env(project, None), PRELOAD_ENV: ",".join(harness.preload)}
        return WarmServer(self.runner, project, env, collect, where)

    def _launch_builder(self, project: Path, where: Path) -> WarmServer:
        sources = sorted({m.spec.file for m in self.config.mutants if is_compiled(m.spec.file)})
        env = build_env(self.env(project, None, "compiled"))
        return WarmServer(self.runner, project, env, ["--build", *sources], where)

    def _launch_woven_server(self, where: Path) -> WarmServer:
        assert self.woven is not None
        harness = self.config.harness
        collect = run_args(self.woven, PLUGIN_MODULE, harness.pytest_args, harness.tests)
        env = {**self.env(self.woven, None, "compiled"), PRELOAD_ENV: ",".join(harness.preload)}
        return WarmServer(self.runner, self.woven, env, collect, where, switches=self.switches)

    def launch_woven_server(self, project: Path) -> None:
        """Start the woven build's server for the worker of ``project`` without waiting for it."""
        self._servers.launch("woven", project, self._launch_woven_server)

    def woven_server(self, project: Path) -> WarmServer | None:
        """The warm server on the woven build that serves the worker of ``project``."""
        fallback = "its compiled mutants are rebuilt one by one"
        return self._servers.get("woven", project, self._launch_woven_server, fallback)

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
        if is_compiled(mutant.spec.file):
            return self.woven_server(project) if mutant.spec.id in self.switches else None
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

    def build(self, project: Path, where: Path | None = None) -> tuple[int | None, str]:
        """Rebuild the compiled sources in place, in ``where`` (default: the copy itself) by the copy's
        builder; a failure is the mutant's, not the run's."""
        env = build_env(self.env(where or project, None, "compiled"))
        builder = self.builder(project)
        if builder is not None:
            with contextlib.suppress(GoCold):
                return builder.build(list(BUILD_ARGS), env, self.timeout * 4, where)
        return self.runner.run(build_command(), where or project, env, self.timeout * 4)

    def say(self, message: str) -> None:
        """A line of progress, wrapped to the terminal: a reason it gives (why a run went cold) is kept."""
        from .reports import terminal_width, wrapped

        with self.print_lock:
            print(wrapped(message, terminal_width(False)), file=sys.stderr, flush=True)

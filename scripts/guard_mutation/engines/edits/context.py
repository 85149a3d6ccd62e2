"""Where and how a run judges mutants: its settings, its copies' environment, its pytest runs (a fresh
interpreter, or a child of a copy's warm server), its builds of the compiled core and its servers."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ...config import Config
from . import plugin
from .edit import Edit, module_name
from .outcomes import TestRun, parse
from .processes import Runner
from .server import PRELOAD_ENV
from .warm import GoCold, ServerPool, WarmServer, body_only
from .weave import SWITCH_ENV

IMPL_ENV, RUNTIME_ENV = "GUARD_LIB_IMPL", "GUARD_LIB_TEST_RUNTIME"
Job = dict[str, Any]
BUILD = ("setup.py", "-q", "build_ext", "--inplace", "--force")  # the copy's own build, run unoptimised


@dataclass(frozen=True)
class Plan:
    """What the plugin is asked in one run: only these entries' tests (every test is still collected);
    these cases first within their test; note the woven switches of these modules each test reaches."""

    select: tuple[str, ...] | None = None
    first: tuple[str, ...] = ()
    hits: tuple[str, ...] = ()
    decide: tuple[str, ...] = ()  # stop once each of these entries has a failed test

    def env(self, outcomes: Path) -> dict[str, str]:
        chosen = None if self.select is None else list(self.select)
        return {
            plugin.OUTCOMES_ENV: str(outcomes),
            plugin.SELECT_ENV: json.dumps(chosen),
            plugin.FIRST_ENV: json.dumps(list(self.first)),
            plugin.HITS_ENV: ",".join(self.hits),
            plugin.DECIDE_ENV: json.dumps(list(self.decide)),
        }


def make_copy(root: Path, dest: Path) -> Path:
    """A copy of the project, less version control, virtual environments and caches."""
    skipped = {".git", ".venv", ".venvs", "venv", ".tox", ".nox", "mutants", "reports"}  # at the root
    caches = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"}

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n in caches or (n in skipped and Path(folder) == root)}

    return Path(shutil.copytree(root, dest, ignore=ignore, symlinks=True))


def build_outputs(project: Path, file: str) -> list[Path]:
    """What a rebuild of the compiled ``file`` rewrites in ``project``: its C translation, its extensions."""
    source = project / file
    return [source.with_suffix(".c"), *sorted(source.parent.glob(f"{source.stem}.*.so"))]


class Context:
    def __init__(self, config: Config, tmp: Path, runner: Runner, runtime: str, warm: bool) -> None:
        self.config, self.tmp, self.runner, self.runtime = config, tmp, runner, runtime
        self.warm = warm and runtime == "simulated"  # a forked child must not inherit an initialised CUDA
        self.snapshot = tmp / "snapshot"
        self._ids = itertools.count()
        self._servers = ServerPool(tmp, self.timeout * 4)
        self.woven: Path | None = None  # the woven build's copy
        self.switches: dict[str, tuple[str, int]] = {}  # woven mutant id -> (module, number), once green
        self.hits: dict[str, list[str]] = {}  # node id -> the switches it reached unmutated ("module:n")
        self.blind: tuple[str, ...] = ()  # the tests whose reach the map cannot see: they start processes
        self.order: tuple[str, ...] = ()  # the woven baseline's tests, in the order they ran
        self.files: tuple[str, ...] = ()  # the test files, the quickest first, where a baseline ran them all
        self.green: set[str] = set()  # the implementations whose whole suite a baseline found green

    @property
    def timeout(self) -> float:
        return self.config.harness.timeout_s

    def args(self, project: Path, tests: Sequence[str]) -> list[str]:
        extra = self.config.harness.pytest_args
        return ["-p", "no:cacheprovider", "-q", "-p", plugin.NAME, f"--rootdir={project}", *extra, *tests]

    def env(self, project: Path, impl: str, extra: Mapping[str, str] = {}) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in (plugin.OUTCOMES_ENV, SWITCH_ENV)}
        path = [str(project), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
        # No .pyc files: a restored file with the mutant's size and mtime second could reuse its bytecode.
        env |= {"PYTHONPATH": os.pathsep.join(path), "PYTHONDONTWRITEBYTECODE": "1", IMPL_ENV: impl}
        return env | {RUNTIME_ENV: self.runtime, plugin.PACKAGE_ENV: self.config.harness.package, **extra}

    def pytest(self, project: Path, tests: Sequence[str], exitfirst: bool, impl: str, plan: Plan) -> TestRun:
        """A fresh interpreter's pytest on ``tests``."""
        outcomes = self.tmp / "outcomes" / f"{next(self._ids)}.jsonl"
        cmd = [sys.executable, "-m", "pytest", *self.args(project, tests), *(["-x"] if exitfirst else [])]
        code, output = self.runner.run(
            cmd, project, self.env(project, impl, plan.env(outcomes)), self.timeout
        )
        return parse(outcomes, code, output)

    def pytest_warm(
        self, server: WarmServer, tests: Sequence[str], exitfirst: bool, plan: Plan, swap: Job
    ) -> TestRun:
        """pytest in a child of a warm server, ``swap`` made first (GoCold where it cannot be)."""
        outcomes = self.tmp / "outcomes" / f"{next(self._ids)}.jsonl"
        env = plan.env(outcomes)
        if "switch" in swap:  # a process the tests start imports the build with the same switch on
            env[SWITCH_ENV] = "{module}:{number}".format(**swap["switch"])
        job = {"tests": list(tests), "exitfirst": exitfirst, "env": env, "timeout": self.timeout, **swap}
        return parse(outcomes, *server.run(job))

    def _launch(self, project: Path, impl: str, where: Path) -> WarmServer:
        env = self.env(project, impl, {PRELOAD_ENV: ",".join(self.config.harness.preload)})
        return WarmServer(self.runner, project, env, self.args(project, self.config.harness.tests), where)

    def server(self, kind: str, project: Path, wait: bool = True) -> WarmServer | None:
        """The copy's warm server of ``kind`` ("python": the reference; "woven": the woven build), launched
        on first use; ``wait=False`` launches it without waiting for it (it reads the copy as it is now)."""
        where = self.woven if kind == "woven" else project
        if not self.warm or where is None:
            return None
        launch = partial(self._launch, where, "compiled" if kind == "woven" else "python")
        return self._servers.get(kind, project, launch, wait)

    def warm_job(self, project: Path, edit: Edit) -> tuple[WarmServer, Job] | None:
        """The server that can judge ``edit`` warm, and the swap that puts it in; None: it goes cold."""
        swap: Job
        if edit.compiled and edit.id in self.switches:
            module, number = self.switches[edit.id]
            server, swap = self.server("woven", project), {"switch": {"module": module, "number": number}}
        elif not edit.compiled and body_only(edit.original, edit.mutated, edit.scope):
            server, swap = (
                self.server("python", project),
                {"module": module_name(edit.file), "qualname": edit.scope},
            )
            swap["source"] = edit.mutated
        else:
            return None
        return None if server is None else (server, swap)

    def unmutated(self, project: Path, tests: Sequence[str], plan: Plan) -> TestRun:
        """The unmutated ``tests`` of the reference, in the copy's warm server where there is one."""
        server = self.server("python", project)
        if server is not None:
            with contextlib.suppress(GoCold):
                return self.pytest_warm(server, tests, False, plan, {})
        return self.pytest(project, tests, False, "python", plan)

    def build(self, project: Path) -> tuple[int | None, str]:
        """Rebuild the copy's compiled sources in place, the core required, unoptimised."""
        env = self.env(project, "compiled")
        env |= {"GUARD_LIB_BUILD": "compiled", "CFLAGS": f"{env.get('CFLAGS', '')} -O0".strip()}
        return self.runner.run([sys.executable, *BUILD], project, env, self.timeout * 4)

    def cases_reaching(self, edit: Edit) -> tuple[str, ...]:
        """The tests whose unmutated run reached the edit's woven switch."""
        hit = "{}:{}".format(*self.switches[edit.id]) if edit.id in self.switches else None
        return tuple(nodeid for nodeid, hits in self.hits.items() if hit in hits)

    def mapped(self, edit: Edit) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """For a woven mutant, the tests that reached it, and those with the tests the map is blind to, in
        the order the baseline ran them: every test that can tell it apart. None: no map holds it."""
        if edit.id not in self.switches:
            return None
        reached = set(self.cases_reaching(edit))
        return tuple(reached), tuple(n for n in self.order if n in reached or n in self.blind)

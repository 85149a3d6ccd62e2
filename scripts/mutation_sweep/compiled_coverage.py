"""Which tests reach each line of the compiled core: a build that reports its lines, run once under coverage.

Cython writes line events only into a core built with ``linetrace`` (``GUARD_LIB_LINETRACE=1``), and
coverage reads them through Cython's own plugin. With that map a compiled mutant runs the tests that
reach its lines, as a Python mutant does, instead of a stand-in's tests and then the whole suite.
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from critical_harness.compiled import BUILD_ENV, MUTANT_CFLAGS, build_command
from critical_harness.workspace import make_copy

from . import map_probe
from .select_tests import (
    IMPORTS,
    TestMap,
    covered_run,
    lines_outside_tests,
    quickest_first,
    reaching_tests,
    skipped_tests,
    test_modules,
    test_seconds,
    traced_tests,
)

log = logging.getLogger("mutation_sweep")
LINETRACE_ENV = "GUARD_LIB_LINETRACE"  # setup.py's switch for a core that reports its lines


def core_map(root: Path, package: str, pytest_args: Sequence[str]) -> TestMap:
    """The tests that execute each line of the package's ``.pyx`` files, from one traced build's run."""
    with tempfile.TemporaryDirectory(prefix="sweep-core-map-") as scratch:
        return _core_map(root, package, pytest_args, Path(scratch))


def _core_map(root: Path, package: str, pytest_args: Sequence[str], scratch: Path) -> TestMap:
    """``core_map``, made in ``scratch``.

    The run need not be green: a test that traces the core itself (an interrupt at every instruction)
    can fail against a core that now has instructions to interrupt, and what it executed still counts.
    The shipped core's own suite is checked green elsewhere (the sweep's woven build, no mutant on).
    """
    started = time.monotonic()
    copy = make_copy(root, scratch / "traced-core")
    env = {**os.environ, BUILD_ENV: "compiled", LINETRACE_ENV: "1", "CFLAGS": MUTANT_CFLAGS}
    built = subprocess.run(build_command(), cwd=copy, env=env, capture_output=True, text=True, check=False)
    if built.returncode != 0:
        raise RuntimeError(f"the traced build of the compiled core failed:\n{built.stderr[-1500:]}")
    done, data_file, junit = covered_run(
        copy, package, pytest_args, scratch, plugins="Cython.Coverage", impl="compiled"
    )
    if done.returncode not in (0, 1) or not junit.exists():
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise RuntimeError(f"the compiled core's coverage run stopped (exit {done.returncode}):\n{tail}")
    lines = reaching_tests(data_file, copy, junit, suffix=".pyx")
    order = quickest_first(junit, test_modules(copy))
    log.info(
        "sweep: the compiled core's lines mapped to their tests (%d lines of %s) in %.0f s",
        sum(len(by_line) for by_line in lines.values()),
        ", ".join(sorted(lines)) or "no file",
        time.monotonic() - started,
    )
    return TestMap(
        lines,
        order,
        traced_tests(junit, copy, scratch),
        test_seconds(junit, test_modules(copy)),
        # Every line run outside a test's context, not only before the first test, keeps its mutants
        # forked: the core's caches make what its tests see depend on the order they run in, and a warm
        # session runs them in another (four mutants of `_default_runtime` that a forked child kills
        # survived warm). A child interpreter a test starts also runs these lines, tied to no test.
        lines_outside_tests(data_file, copy, suffix=".pyx"),
        *map_probe.read(scratch / IMPORTS),
        map_probe.complete(scratch / IMPORTS),
        skipped_tests(junit, test_modules(copy)),
    )

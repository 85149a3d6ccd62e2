"""Which tests reach which line: one coverage run with a context per test, read back as a map.

A mutant runs only the tests that execute its statement. A statement no test executes on its own
(module level, class bodies, definitions) runs the whole suite; one that ran nowhere in the map's run,
the tests of its function and those coverage cannot follow (``jobs``).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coverage import CoverageData

from . import map_probe
from .generate import is_cython
from .work_item import Mutant

SUITE = "<suite>"
IMPORTS = "imports"  # what ``map_probe`` wrote, in a covered run's scratch folder


def _node_id(context: str, test_files: dict[str, str], collected: set[str]) -> str | None:
    """The node id of the test a coverage context names, or its file where the names disagree.

    coverage names a test by its module's ``__name__`` and the code's qualified name (test_x.Class.test_y);
    a test class bound under another name (a hypothesis state machine's TestCase) only matches its file.
    """
    parts = context.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        path = test_files.get(".".join(parts[:cut]))
        if path is not None:
            node = "::".join([path, *parts[cut:]])
            return node if node in collected else path
    return None


def _collected(junit: Path, test_files: dict[str, str], *, traced: bool = False) -> set[str]:
    """Every test's node id, its parameters left off, as the unmutated run reported it (``traced``: only
    those the report names as tracing, mark ``traces``, or as failed, where a test stopped short of what it
    reaches once it passes)."""
    found: set[str] = set()
    for case in ET.parse(junit).iter("testcase"):
        marked = any(p.get("name") == "traces" for p in case.iter("property"))
        failed = case.find("failure") is not None or case.find("error") is not None
        if traced and not (marked or failed):
            continue
        parts = case.get("classname", "").split(".")
        for cut in range(len(parts), 0, -1):
            path = test_files.get(".".join(parts[:cut]))
            if path is not None:
                name = case.get("name", "").split("[")[0]
                found.add("::".join([path, *parts[cut:], name]))
                break
    return found


@dataclass(frozen=True)
class TestMap:
    lines: dict[str, dict[int, tuple[str, ...]]]  # {file: {line: node ids}}
    suite_order: tuple[str, ...]  # the test files, quickest first: a whole-suite run with -x dies early
    # the tests coverage cannot tie to the lines they reach (``traced_tests``): under a tracer of their own,
    # starting a process it does not measure, forking, or failed in the map's run
    traced: tuple[str, ...] = ()
    # each test's seconds in the map's run (its parameters together), and each file's: the quickest first
    seconds: Mapping[str, float] = field(default_factory=dict)
    # {file: lines} run before the first test: at import, while collecting, in what a warm session imports
    # beside the suite (``lines_before_tests``). A mutant there acts before it could be swapped in.
    before_tests: Mapping[str, frozenset[int]] = field(default_factory=dict)
    # the package's modules the suite's collection left imported (``map_probe``), and for each module
    # the tests that imported it while they ran: the only ones that run its import-time code again
    collected: tuple[str, ...] = ()
    importers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # whether every process of the map's run said what it saw (``map_probe.complete``): only then does a
    # statement that ran nowhere in it tell that no test coverage follows reaches it
    complete: bool = False
    # the tests every case of which the map's run skipped (``skipped_tests``)
    skipped: frozenset[str] = frozenset()


def test_modules(root: Path) -> dict[str, str]:
    """Each test file under ``tests/`` by every name its module can have, to its path.

    coverage names a test by its module's ``__name__``, which depends on where pytest put the root of
    its package: ``test_x``, ``behaviour.test_x`` or ``tests.behaviour.test_x``. Every dotted suffix of
    the path is a name; where two files share one, the first in path order keeps it.
    """
    found: dict[str, str] = {}
    for path in sorted((root / "tests").rglob("test_*.py")):
        rel = path.relative_to(root).as_posix()
        parts = path.relative_to(root).with_suffix("").parts
        for cut in range(len(parts)):
            found.setdefault(".".join(parts[cut:]), rel)
    return found


def test_map(root: Path, package: str, pytest_args: Sequence[str], preload: Sequence[str]) -> TestMap:
    """Which tests execute each line of the package's files, from one run of the suite."""
    with tempfile.TemporaryDirectory(prefix="sweep-map-") as tmp:
        done, data_file, junit = covered_run(root, package, ["-x", *pytest_args], Path(tmp), preload=preload)
        if done.returncode != 0:
            tail = "\n".join(done.stdout.splitlines()[-15:])
            raise RuntimeError(f"the unmutated suite is not green, so no mutant can be judged:\n{tail}")
        return TestMap(
            reaching_tests(data_file, root, junit, suffix=""),
            quickest_first(junit, test_modules(root)),
            traced_tests(junit, root, Path(tmp)),
            test_seconds(junit, test_modules(root)),
            lines_before_tests(Path(tmp), data_file, root, suffix=""),
            *map_probe.read(Path(tmp, IMPORTS)),
            map_probe.complete(Path(tmp, IMPORTS)),
            skipped_tests(junit, test_modules(root)),
        )


def traced_tests(junit: Path, root: Path, scratch: Path) -> tuple[str, ...]:
    """The tests whose reach coverage cannot see, by node id without parameters: those the run's report
    names as tracing (mark ``traces``) or as failed, and those the map's probe saw set a tracer of their
    own, start a process coverage does not measure, or fork (``map_probe.blind``)."""
    seen = set(map_probe.blind(scratch / IMPORTS))
    return tuple(sorted(_collected(junit, test_modules(root), traced=True) | seen))


def covered_run(
    root: Path,
    package: str,
    pytest_args: Sequence[str],
    scratch: Path,
    *,
    plugins: str = "",
    impl: str = "",
    preload: Sequence[str] = (),
) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """One run of the suite in ``root`` under coverage, a context per test, two workers at once (and the
    child interpreters tests start): the run, its combined data file and its JUnit report; what the
    package's imports were is in ``scratch``, for ``map_probe.read(scratch / IMPORTS)``."""
    rc, data_file, junit = scratch / "coveragerc", scratch / "coverage", scratch / "junit.xml"
    rc.write_text(
        "[run]\ndynamic_context = test_function\nparallel = true\npatch = subprocess\n"
        f"{f'plugins = {plugins}' if plugins else ''}\nsource = {package}\ndata_file = {data_file}\n",
        encoding="utf-8",
    )
    env = {**os.environ, "COVERAGE_RCFILE": str(rc), **({"GUARD_LIB_IMPL": impl} if impl else {})}
    env.update({map_probe.OUT_ENV: str(scratch / IMPORTS), map_probe.PACKAGE_ENV: package})
    env[map_probe.PRELOAD_ENV] = ",".join(preload)
    command = [
        *(sys.executable, "-m", "coverage", "run", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2"),
        *("-p", map_probe.__name__, f"--junitxml={junit}", *pytest_args),
    ]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    combine = [sys.executable, "-m", "coverage", "combine", "-q"]
    subprocess.run(combine, cwd=root, env=env, capture_output=True, text=True, check=False)
    return done, data_file, junit


def reaching_tests(
    data_file: Path, root: Path, junit: Path, suffix: str
) -> dict[str, dict[int, tuple[str, ...]]]:
    """From a coverage run with a context per test (and its JUnit report): the tests that execute each
    line of each measured file under ``root`` whose name ends with ``suffix``."""
    test_files = test_modules(root)
    collected = _collected(junit, test_files)
    data = CoverageData(basename=str(data_file))
    data.read()
    result: dict[str, dict[int, tuple[str, ...]]] = {}
    for measured in data.measured_files():
        if not measured.endswith(suffix):
            continue
        path = Path(measured).resolve()
        if not path.is_relative_to(root.resolve()):
            continue  # the package as a test's child interpreter imported it from a copy of its own
        rel = path.relative_to(root.resolve()).as_posix()
        by_line: dict[int, tuple[str, ...]] = {}
        for line, contexts in data.contexts_by_lineno(measured).items():
            ids = {_node_id(c, test_files, collected) for c in contexts if c}
            by_line[line] = tuple(sorted(i for i in ids if i))
        result[rel] = by_line
    return result


def lines_before_tests(scratch: Path, data_file: Path, root: Path, suffix: str) -> dict[str, frozenset[int]]:
    """Each measured file's lines that had run before the first test: at import, while collecting, in what
    a warm session imports beside it (``map_probe``). Where the probe could not say, every line that
    ran outside a test's context, a superset (fixtures, threads, finalisers, child interpreters too)."""
    found = map_probe.before_tests(scratch / IMPORTS)
    if found is None:
        return lines_outside_tests(data_file, root, suffix)
    by_file: dict[str, frozenset[int]] = {}
    for measured, lines in found.items():
        path = Path(measured).resolve()
        if measured.endswith(suffix) and path.is_relative_to(root.resolve()):
            by_file[path.relative_to(root.resolve()).as_posix()] = lines
    return by_file


def lines_outside_tests(data_file: Path, root: Path, suffix: str) -> dict[str, frozenset[int]]:
    """From a coverage run with a context per test: each measured file's lines that ran outside any test."""
    data = CoverageData(basename=str(data_file))
    data.read()
    found: dict[str, frozenset[int]] = {}
    for measured in data.measured_files():
        path = Path(measured).resolve()
        if measured.endswith(suffix) and path.is_relative_to(root.resolve()):
            by_line = data.contexts_by_lineno(measured)
            rel = path.relative_to(root.resolve()).as_posix()
            found[rel] = frozenset(line for line, contexts in by_line.items() if "" in contexts)
    return found


def _cases(junit: Path, test_files: dict[str, str]) -> Iterator[tuple[str, str, ET.Element]]:
    """Each test case of a run's report, as (its node id without parameters, its file, the case)."""
    for case in ET.parse(junit).iter("testcase"):
        parts = case.get("classname", "").split(".")
        for cut in range(len(parts), 0, -1):
            path = test_files.get(".".join(parts[:cut]))
            if path is not None:
                yield "::".join([path, *parts[cut:], case.get("name", "").split("[")[0]]), path, case
                break


def test_seconds(junit: Path, test_files: dict[str, str]) -> dict[str, float]:
    """What each test took in a run, by node id without parameters, and each test file as a whole."""
    seconds: dict[str, float] = {}
    for node, path, case in _cases(junit, test_files):
        spent = float(case.get("time") or 0)
        seconds[node] = seconds.get(node, 0.0) + spent
        seconds[path] = seconds.get(path, 0.0) + spent
    return seconds


def skipped_tests(junit: Path, test_files: dict[str, str]) -> frozenset[str]:
    """The tests (node ids without parameters) every case of which the run skipped."""
    ran: dict[str, bool] = {}
    for node, _, case in _cases(junit, test_files):
        ran[node] = ran.get(node, False) or case.find("skipped") is None
    return frozenset(node for node, any_ran in ran.items() if not any_ran)


def quickest_first(junit: Path, test_files: dict[str, str]) -> tuple[str, ...]:
    """The test files that ran, the quickest first."""
    seconds = test_seconds(junit, test_files)
    ran = {path for path, spent in seconds.items() if "::" not in path and spent > 0}
    return tuple(sorted(ran, key=lambda path: (seconds[path], path)))


def tests_for_scope(mapping: TestMap, root: Path, files: Sequence[str], scope: str) -> tuple[str, ...]:
    """The tests that reach the definitions named ``scope`` in the Python files: for a compiled mutant,
    whose lines coverage cannot see, the reference's function of the same name stands in."""
    found: set[str] = set()
    for rel in files:
        if not rel.endswith(".py"):
            continue
        for qualname, node in definitions(ast.parse((root / rel).read_text(encoding="utf-8"))):
            if qualname == scope:
                lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
                found.update(tests_for(mapping, rel, lines))
    found.discard(SUITE)
    return quickest(mapping, found) if found else (SUITE,)


def definitions(tree: ast.Module) -> list[tuple[str, ast.stmt]]:
    """Every function and class of ``tree`` by its qualified name (``Class.method``, ``outer.inner``)."""
    out: list[tuple[str, ast.stmt]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                out.append((name, child))
                visit(child, f"{name}.")

    visit(tree, "")
    return out


def tests_for(mapping: TestMap, file: str, lines: range) -> tuple[str, ...]:
    """The tests that execute any of ``lines``, the quickest first: a kill stops the run, so the slow
    tests (an interrupt at every instruction, the oracle's programs) run only where the quick ones pass."""
    found: set[str] = set()
    for line in lines:
        found.update(mapping.lines.get(file, {}).get(line, ()))
    return quickest(mapping, found) if found else (SUITE,)


def seconds_of(mapping: TestMap, test: str) -> float:
    """What ``test`` took in the map's run; a test the run did not time costs what its whole file did."""
    return mapping.seconds.get(test, mapping.seconds.get(test.split("::", maxsplit=1)[0], 0.0))


def quickest(mapping: TestMap, tests: set[str]) -> tuple[str, ...]:
    return tuple(sorted(tests, key=lambda test: (seconds_of(mapping, test), test)))


def tests_of(mutant: Mutant, mapping: TestMap, root: Path, files: Sequence[str]) -> tuple[str, ...]:
    """The tests that reach ``mutant``: coverage's for its lines, the compiled core's too where the map
    holds them (``compiled_coverage``); else, for a compiled mutant, those of the reference's function of
    the same name."""
    if is_cython(mutant.file) and mutant.file not in mapping.lines:
        return tests_for_scope(mapping, root, files, mutant.scope)
    return tests_for(mapping, mutant.file, mutant.lines())

"""What each mutant of a sweep runs, read from the map of the tests: the tests of each phase, how long a
phase may take, and whether a warm session can judge it.

The first phase is the tests coverage ties to the mutant's lines, the quickest first. The tests coverage
cannot follow (``TestMap.traced``) run next, and the whole suite after them where the mutant changes what
tests see untied to any line (what runs at import, a definition's header).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from critical_harness.warm import body_only

from . import cython_view
from .generate import is_cython
from .select_tests import SUITE, TestMap, quickest, seconds_of, tests_of
from .work_item import Mutant

WHOLE_SUITE_TIMEOUT_SCALE = 4.0


@dataclass(frozen=True)
class Plan:
    tests: tuple[str, ...]  # the first phase: node ids, the quickest first, or (SUITE,)
    then_suite: bool  # the whole suite once every earlier phase passed
    traced: tuple[str, ...]  # the tests coverage cannot follow, run after ``tests``
    timeout_scale: float  # times the configured limit that a phase may take
    # the seconds the tests of its longest phase took in the map's run (itself under coverage)
    expected_s: float


def plan(
    mutant: Mutant,
    mapping: TestMap,
    root: Path,
    files: Sequence[str],
    statements: dict[str, list[tuple[int, int, bool]]],
) -> Plan:
    """The phases ``mutant`` runs. ``statements`` caches each file's (``_statements``) between calls."""
    m = mutant
    tests = tests_of(m, mapping, root, files)
    never_ran = False
    if tests == (SUITE,) and mapping.traced and mapping.complete and m.file in mapping.lines:
        if m.file not in statements:
            statements[m.file] = _statements(root, m.file)
        function = _unreached(m, mapping.lines[m.file], statements[m.file])
        if function is not None:
            # No process coverage measured ran its statement: the tests it cannot follow may reach it,
            # and so may, on another path, those of its function (a cache hit or miss, a local's kind).
            never_ran = True
            reach = {t for line in function for t in mapping.lines[m.file].get(line, ())}
            tests = quickest(mapping, reach | set(mapping.traced))
    if is_cython(m.file) and m.file not in mapping.lines:
        # No map of the core's lines: the reference's function of the same name tells which tests go
        # first, and the whole suite runs before a survivor is called.
        then_suite = tests != (SUITE,)
    else:
        # What runs at import (module level, class bodies) and a definition's header (its signature,
        # bases, decorators) are seen by tests that coverage does not tie to them: once the tests that do
        # reach the statement pass, the whole suite runs. What a test under a tracer of its own reaches (a
        # handler of an interrupt, say) is left to the traced tests, which run next.
        then_suite = (m.definition or m.at_import) and tests != (SUITE,)
    # The tests whose reach coverage cannot see (under their own tracer, say) run next, unless the whole
    # suite does.
    traced = () if tests == (SUITE,) or then_suite else tuple(t for t in mapping.traced if t not in tests)
    # The whole suite is many times one test's run: its limit is too, so a slow machine is no kill.
    scale = WHOLE_SUITE_TIMEOUT_SCALE if tests == (SUITE,) or then_suite or never_ran else 1.0
    phases = [tests, traced, *([(SUITE,)] if then_suite else [])]
    return Plan(tests, then_suite, traced, scale, max(phase_seconds(mapping, p) for p in phases))


def only(mapping: TestMap, tests: Sequence[str]) -> Plan:
    """One phase of ``tests`` alone, the quickest first: a survivor's verdict carried for every other test
    (``carry``)."""
    chosen = quickest(mapping, set(tests))
    return Plan(chosen, False, (), 1.0, phase_seconds(mapping, chosen))


def phase_seconds(mapping: TestMap, tests: Sequence[str]) -> float:
    """What ``tests`` took in the map's run: the whole suite's files for (SUITE,); a test the run did not
    time counts as its whole file."""
    names = mapping.suite_order if tuple(tests) == (SUITE,) else tests
    return round(sum(seconds_of(mapping, t) for t in names), 3)


def module_of(rel: str) -> str:
    parts = list(Path(rel).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def warm_fit(
    mutant: Mutant, source: str, root: Path, mapping: TestMap, *, switch: int | None, tests: Sequence[str]
) -> bool:
    """Whether a warm session, with the package imported and the suite collected, can judge ``mutant``:
    an edit of one function's body (a compiled one behind its switch in the woven build), none of whose
    lines ran before the first test in the map's run; of a module imported by then, and which none of its
    ``tests`` imports afresh (that import reads the file, where a forked child's would get the mutant)."""
    if mutant.definition or mutant.at_import or mutant.file not in mapping.lines:
        return False
    if not mapping.before_tests.get(mutant.file, frozenset()).isdisjoint(mutant.lines()):
        return False
    if is_cython(mutant.file):
        return switch is not None  # the weave holds only edits inside a function's body
    module = module_of(mutant.file)
    if mapping.collected and module not in mapping.collected:
        return False  # the session would import it itself, before the swap, running its calls unmutated
    importers = set(mapping.importers.get(module, ()))
    if importers and (SUITE in tests or not importers.isdisjoint(tests)):
        return False
    return body_only((root / mutant.file).read_text(encoding="utf-8"), source, mutant.scope)


def _statements(root: Path, file: str) -> list[tuple[int, int, bool]]:
    """The first and last line of every statement of ``file`` (a Cython file through its Python view), and
    whether it is a function's definition."""
    text = (root / file).read_text(encoding="utf-8")
    tree = ast.parse(cython_view.view(text).text if is_cython(file) else text)
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    return [
        (node.lineno, node.end_lineno or node.lineno, isinstance(node, functions))
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt)
    ]


def _unreached(
    mutant: Mutant, ran: Mapping[int, object], statements: Sequence[tuple[int, int, bool]]
) -> range | None:
    """The lines of the function holding the mutant, where no line of the statements that hold it (the
    innermost holding each of its lines) ran in the map's run, in a test or outside one; else None.
    Coverage records a statement by its first line, or by another, so a mutant's own line may be absent
    from what ran although its statement ran."""
    lines: set[int] = set()
    for line in mutant.lines():
        holding = [(last - first, first, last) for first, last, _ in statements if first <= line <= last]
        if holding:
            _, first, last = min(holding)
            lines.update(range(first, last + 1))
    if not lines or not lines.isdisjoint(ran):
        return None
    around = [
        (last - first, first, last)
        for first, last, function in statements
        if function and first <= min(lines) <= last
    ]
    if not around:
        return None  # not in a function: what runs at import keeps the whole suite
    _, first, last = min(around)
    return range(first, last + 1)

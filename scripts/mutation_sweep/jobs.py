"""What a sweep runs: the map of the tests it needs, one job per mutant, and the check of the woven build.

The maps (the reference's lines, the compiled core's) are made side by side, each only where a mutant
needs it. The woven build's own check (no mutant on, the tests the mutants will run) is one more job
beside theirs, so it costs no time of its own; a build that fails it discards every verdict on it.
"""

from __future__ import annotations

import ast
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from critical_harness.warm import body_only
from mutation_model import SURVIVED

from . import compiled_coverage, cython_view
from .generate import Generated, is_cython
from .runners import compiled_builds, forked
from .select_tests import SUITE, TestMap, quickest, test_map, tests_of
from .work_item import INVALID, Mutant, Result

log = logging.getLogger("mutation_sweep")
GREEN_CHECK = "<the woven build, no mutant on>"
WHOLE_SUITE_TIMEOUT_SCALE = 4.0


def test_maps(
    mutants: Sequence[Mutant],
    root: Path,
    package: str,
    pytest_args: Sequence[str],
    *,
    every_file: bool,
    preload: Sequence[str],
) -> TestMap:
    """The tests that reach each line the mutants are on: the reference's map where a Python mutant is
    among them (or ``every_file``, for a changed test that may reach any), the core's where a compiled one
    is; both at once where both are needed. ``preload``: what a warm session imports once it has
    collected (its lines count as run before the tests, in the reference's map; the core's keeps every
    line run outside a test)."""
    python = every_file or any(not is_cython(m.file) for m in mutants)
    core = any(is_cython(m.file) for m in mutants)
    if not mutants or not (python or core):
        return TestMap({}, ())
    with ThreadPoolExecutor(max_workers=2) as pool:
        reference = pool.submit(test_map, root, package, pytest_args, preload) if python else None
        core_map = compiled_coverage.core_map
        compiled = pool.submit(core_map, root, package, pytest_args) if core else None
        maps = [m.result() for m in (reference, compiled) if m is not None]
    # The reference's run, where there is one, orders the suite: it is the one every mutant's tests pass.
    return TestMap(
        {f: lines for m in maps for f, lines in m.lines.items()},
        maps[0].suite_order,
        tuple(sorted({t for m in maps for t in m.traced})),
        {test: spent for m in reversed(maps) for test, spent in m.seconds.items()},
        {f: lines for m in maps for f, lines in m.before_tests.items()},
        tuple(sorted({name for m in maps for name in m.collected})),
        {
            name: tuple(sorted({t for m in maps for t in m.importers.get(name, ())}))
            for name in {name for m in maps for name in m.importers}
        },
        all(m.complete for m in maps),
    )


def module_of(rel: str) -> str:
    parts = list(Path(rel).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def make(
    mutants: Sequence[Mutant],
    generated: Generated,
    *,
    root: Path,
    files: Sequence[str],
    mapping: TestMap,
    scratch: Path,
    parallel: int,
) -> tuple[list[forked.Job], list[Result]]:
    """A job per mutant, the compiled ones built first and those Cython refuses judged invalid; the
    woven build's check first of all."""
    compiled = [m for m in mutants if is_cython(m.file)]
    builds = compiled_builds.build(root, compiled, generated.sources, scratch, parallel)
    invalid = [Result(m, INVALID, detail=builds.refused[m.id]) for m in compiled if m.id in builds.refused]
    jobs = []
    statements: dict[str, list[tuple[int, int, bool]]] = {}
    core_built = _core_built(root, files)
    for m in mutants:
        built, switch = builds.at.get(m.id, (None, None))
        if is_cython(m.file) and built is None:
            continue
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
            # No map of the core's lines: the reference's function of the same name tells which tests
            # go first, and the whole suite runs before a survivor is called.
            then_suite = tests != (SUITE,)
        else:
            # What runs at import (module level, class bodies) and a definition's header (its signature,
            # bases, decorators) are seen by tests that coverage does not tie to them: once the tests that
            # do reach the statement pass, the whole suite runs. What a test under a tracer of its own
            # reaches (a handler of an interrupt, say) is left to the traced tests, which run next.
            then_suite = (m.definition or m.at_import) and tests != (SUITE,)
        source = generated.sources[m.id]
        module = module_of(m.file)
        # The tests whose reach coverage cannot see (under their own tracer, say) run next, unless the
        # whole suite does.
        traced = () if tests == (SUITE,) or then_suite else tuple(t for t in mapping.traced if t not in tests)
        # The whole suite is many times one test's run: its limit is too, so a slow machine is no kill.
        scale = WHOLE_SUITE_TIMEOUT_SCALE if tests == (SUITE,) or then_suite or never_ran else 1.0
        # The package's modules load under the core as well, and what they do at import may differ
        # there: a mutant of it that survives the reference runs the suite on the built core too.
        then_compiled = core_built and m.at_import and not is_cython(m.file)
        on = switch if built is not None else None
        warm = _warm_fit(m, source, root, mapping, switch=on, tests=(*tests, *traced))
        proof = None if is_cython(m.file) else _state_proof(m, tests, module, mapping, then_compiled)
        if proof is not None:
            jobs.append(
                dataclasses.replace(
                    proof, source=source, suite_order=mapping.suite_order, timeout_scale=scale
                )
            )
            continue
        jobs.append(
            forked.Job(
                m,
                module,
                source,
                tests,
                mapping.suite_order,
                then_suite,
                then_tests=traced,
                then_compiled=then_compiled,
                built=built,
                switch=switch,
                timeout_scale=scale,
                warm=warm,
            )
        )
    # the slowest (whole-suite) jobs first, so two cores finish together
    jobs.sort(key=lambda j: (j.tests != (SUITE,) and not j.then_suite, j.mutant.id))
    woven = [j for j in jobs if j.built is not None and j.switch is not None]
    if woven:
        jobs.insert(0, _green_check(woven, mapping))
    return jobs, invalid


def _state_proof(
    mutant: Mutant, tests: tuple[str, ...], module: str, mapping: TestMap, on_core: bool
) -> forked.Job | None:
    """For a Python mutant of code run at import, the phases that prove it (``forked.Job.then_state``):
    its first tests, the readers of line numbers, the comparisons. The whole suite runs only on an
    implementation where what the import left differs. None: the map did not record the package's
    imports, so the whole suite decides as before."""
    if not mutant.at_import or not mapping.collected:
        return None
    reach = {t for t in tests if t != SUITE} | set(mapping.importers.get(module, ()))
    readers = quickest(mapping, set(mapping.traced) - reach)
    then_state: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [("", (), readers)]
    if on_core:
        then_state.append(("compiled", quickest(mapping, reach), readers))
    if reach:
        first = forked.Job(mutant, module, "", quickest(mapping, reach), then_state=tuple(then_state))
    else:  # nothing imports it while a test runs: the first phase is the comparison itself
        first = forked.Job(
            mutant, module, "", (forked.STATE,), readers=readers, then_state=tuple(then_state[1:])
        )
    return dataclasses.replace(first, then_compiled=on_core, collected=mapping.collected)


def _warm_fit(
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


def _core_built(root: Path, files: Sequence[str]) -> bool:
    """Whether every Cython file of the package has its extension built beside it, for this Python."""
    cores = [root / f for f in files if is_cython(f)]
    return bool(cores) and all(
        any(c.with_suffix(suffix).exists() for suffix in EXTENSION_SUFFIXES) for c in cores
    )


def _green_check(woven: Sequence[forked.Job], mapping: TestMap) -> forked.Job:
    """The woven build with no switch on, run on every test its mutants will run: a kill there would be
    the build's own."""
    tests: set[str] = set()
    for job in woven:
        tests.update((SUITE,) if job.then_suite else (*job.tests, *job.then_tests))
    first = woven[0]
    check = dataclasses.replace(first.mutant, scope=GREEN_CHECK)
    targets = (SUITE,) if SUITE in tests else tuple(sorted(tests))
    order = mapping.suite_order
    return forked.Job(check, first.module, "", targets, order, built=first.built, timeout_scale=10)


def take_green_check(results: list[Result]) -> list[Result]:
    """The mutants' results, once the woven build's check among them has passed; RuntimeError if not."""
    check = [r for r in results if r.mutant.scope == GREEN_CHECK]
    for result in check:
        if result.verdict != SURVIVED:
            raise RuntimeError(
                "the woven build of the compiled core, no mutant selected, fails "
                f"{result.failed or 'the tests'}: no compiled mutant can be judged on it"
            )
        log.info("sweep: the woven build, no mutant selected, passes the tests its mutants run")
    return [r for r in results if r.mutant.scope != GREEN_CHECK]

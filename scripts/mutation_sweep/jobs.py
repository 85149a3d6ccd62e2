"""What a sweep runs: the map of the tests it needs, one job per mutant, and the check of the woven build.

The maps (the reference's lines, the compiled core's) are made side by side, each only where a mutant
needs it. The woven build's own check (no mutant on, the tests the mutants will run) is one more job
beside theirs, so it costs no time of its own; a build that fails it discards every verdict on it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mutation_model import SURVIVED

from . import compiled_coverage, selection
from .generate import Generated, core_built, is_cython
from .runners import compiled_builds, forked
from .select_tests import SUITE, TestMap, quickest, test_map
from .work_item import INVALID, Mutant, Result

log = logging.getLogger("mutation_sweep")
GREEN_CHECK = "<the woven build, no mutant on>"


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
        frozenset.intersection(*(m.skipped for m in maps)),  # skipped wherever it was run
    )


def make(
    mutants: Sequence[Mutant],
    generated: Generated,
    *,
    root: Path,
    files: Sequence[str],
    mapping: TestMap,
    scratch: Path,
    parallel: int,
    only: Mapping[str, tuple[str, ...]] | None = None,
) -> tuple[list[forked.Job], list[Result]]:
    """A job per mutant, the compiled ones built first and those Cython refuses judged invalid; the
    woven build's check first of all. ``only``: mutants to run against those tests alone (``carry``)."""
    compiled = [m for m in mutants if is_cython(m.file)]
    builds = compiled_builds.build(root, compiled, generated.sources, scratch, parallel)
    invalid = [Result(m, INVALID, detail=builds.refused[m.id]) for m in compiled if m.id in builds.refused]
    jobs = []
    statements: dict[str, list[tuple[int, int, bool]]] = {}
    built_core = core_built(root, files)
    for m in mutants:
        built, switch = builds.at.get(m.id, (None, None))
        if is_cython(m.file) and built is None:
            continue
        # The package's modules load under the core as well, and what they do at import may differ
        # there: a mutant of it that survives the reference runs the suite on the built core too.
        then_compiled = built_core and m.at_import and not is_cython(m.file)
        chosen = selection.plan(m, mapping, root, files, statements)
        narrowed_to = only.get(m.id) if only else None
        narrowed = narrowed_to is not None
        if narrowed_to is not None:
            chosen = selection.only(mapping, narrowed_to)
        source = generated.sources[m.id]
        module = selection.module_of(m.file)
        on = switch if built is not None else None
        warm = selection.warm_fit(m, source, root, mapping, switch=on, tests=(*chosen.tests, *chosen.traced))
        proof = (
            None
            if is_cython(m.file) or narrowed
            else _state_proof(m, chosen.tests, module, mapping, then_compiled)
        )
        scale, expected = chosen.timeout_scale, chosen.expected_s
        if proof is not None:
            jobs.append(
                dataclasses.replace(
                    proof,
                    source=source,
                    suite_order=mapping.suite_order,
                    timeout_scale=scale,
                    expected_s=expected,
                )
            )
            continue
        jobs.append(
            forked.Job(
                m,
                module,
                source,
                chosen.tests,
                mapping.suite_order,
                chosen.then_suite,
                then_tests=chosen.traced,
                # a narrowed survivor of what runs at import passed the core's suite too: its tests there
                then_compiled=then_compiled and not narrowed,
                again_compiled=then_compiled and narrowed,
                built=built,
                switch=switch,
                timeout_scale=scale,
                warm=warm,
                expected_s=expected,
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
    expected = selection.phase_seconds(mapping, targets)
    return forked.Job(
        check, first.module, "", targets, order, built=first.built, timeout_scale=10, expected_s=expected
    )


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

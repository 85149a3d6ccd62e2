"""Verdicts carried test by test: where a run's digest (``reuse``) sends a mutant to be judged again because a
test changed, what the earlier run proved of it may still hold for every other test.

A kill holds while the test that killed it is unchanged. A survivor passed every test that reached it; the
ones unchanged since would pass again, so only the new and changed tests among those that reach it need run
(every one of them, for what runs at import or a definition's header). Both need the same interpreter, the
suite's helpers and how the tests run (``mutation_environment``) unchanged, and the package's code
unchanged, except for a mutant a scoped run chose only because a changed test reaches it: that run judges
only what its change selects, and so takes the rest of the package as the earlier run judged it.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mutation_changes import digest
from mutation_environment import digest_of
from mutation_model import KILLED, SURVIVED

from . import suite_code
from .generate import core_built, is_cython
from .reuse import code_digests, helpers_of, suite_files
from .select_tests import SUITE, TestMap, tests_of
from .work_item import IMPORT_FAILED, Mutant, Result


@dataclass(frozen=True)
class Suite:
    """What a run judged every mutant with, apart from the mutant: the interpreter, the package's code, the
    suite's helpers (conftest, support modules), how the tests run (``mutation_environment``), and each
    test's own code (``suite_code``)."""

    python: str
    package: str
    helpers: str
    tests: Mapping[str, str] = field(default_factory=dict)
    # whether the package's compiled core was built in the tree, so that what runs at import was judged on
    # it too (None: not recorded)
    core_built: bool | None = None
    environment: str = ""  # ``mutation_environment.digest_of``; "" in a record older than it

    def runs_as(self, other: Suite) -> bool:
        """Whether the tests run here as in ``other``: the same interpreter, helpers and configuration."""
        return all(getattr(self, k) == getattr(other, k) for k in ("python", "helpers", "environment"))

    def to_json(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "package": self.package,
            "helpers": self.helpers,
            "core_built": self.core_built,
            "environment": self.environment,
            "tests": dict(sorted(self.tests.items())),
        }

    @classmethod
    def from_json(cls, raw: object) -> Suite:
        """ValueError where ``raw`` is not what ``to_json`` writes."""
        names = ("python", "package", "helpers")
        if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in names):
            raise ValueError("'suite' must hold the strings 'python', 'package' and 'helpers'")
        tests = raw.get("tests", {})
        if not isinstance(tests, dict) or not all(isinstance(v, str) for v in tests.values()):
            raise ValueError("'suite' 'tests' must map each test to the digest of its code")
        core_built = raw.get("core_built")
        if core_built is not None and not isinstance(core_built, bool):
            raise ValueError("'suite' 'core_built' must be true, false or null")
        environment = raw.get("environment", "")
        if not isinstance(environment, str):
            raise ValueError("'suite' 'environment' must be a string")
        return cls(raw["python"], raw["package"], raw["helpers"], dict(tests), core_built, environment)


def suite_of(root: Path, files: Sequence[str], pytest_args: Sequence[str], mapping: TestMap) -> Suite:
    """This tree's ``Suite``, its tests those the map ran."""
    helpers = helpers_of(suite_files(root, pytest_args))
    code = code_digests(root, [*files, *helpers])
    reached = {t for lines in mapping.lines.values() for ran in lines.values() for t in ran}
    tests = reached | set(mapping.traced) | {t for t in mapping.seconds if "::" in t}
    skipped = {suite_code.normal(t) for t in mapping.skipped}
    return Suite(
        sys.version,
        digest([code[f] for f in files]),
        digest([code[f] for f in helpers]),
        suite_code.digests(root, tests, [t for t in tests if suite_code.normal(t) not in skipped]),
        core_built(root, files),
        digest([digest_of(root, pytest_args), *pytest_args]),
    )


def package_at(root: Path, files: Sequence[str], commit: str) -> str:
    """``Suite.package`` as ``commit`` holds the package."""
    code = code_digests(root, files, commit)
    return digest([code[f] for f in files])


@dataclass(frozen=True)
class Carried:
    # verdicts that hold whole: kills by a test unchanged since (or by the import), survivors no new or
    # changed test reaches
    kept: list[Result]
    # survivors to judge against these tests alone (the new and changed ones that reach them)
    narrowed: dict[str, tuple[str, ...]]
    earlier: dict[str, Result]  # the earlier verdict of each narrowed mutant
    whole: list[Mutant]  # the rest: judged whole

    def describe(self) -> str:
        kept = Counter(r.verdict for r in self.kept)
        return (
            f"carried from the earlier run test by test: {kept[KILLED]} kills by a test unchanged since (or "
            f"by a failed import), {kept[SURVIVED]} survivors no new or changed test reaches; "
            f"{len(self.narrowed)} survivors judged against the new and changed tests that reach them alone; "
            f"{len(self.whole)} judged whole"
        )


def carry(
    mutants: Sequence[Mutant],
    earlier: Sequence[Result],
    before: Suite | None,
    now: Suite,
    *,
    mapping: TestMap,
    root: Path,
    files: Sequence[str],
    scoped: Collection[str] = (),
    package_at_ref: str = "",
) -> Carried:
    """What of ``earlier`` (a run with ``before``) still holds for ``mutants`` in this tree (``now``).
    ``scoped``: the ids a scoped run chose only because a changed test reaches them; their package may
    differ from ``before``'s where ``before`` judged the package as the scoped run's ref holds it
    (``package_at_ref``)."""
    if before is None or not before.runs_as(now):
        return Carried([], {}, {}, list(mutants))
    held = {r.mutant.id: r for r in earlier if r.verdict in (KILLED, SURVIVED) and r.depends}
    # A survivor of what runs at import was judged on the core where the core was built; narrowed, it is
    # judged there only where the core is built now: the two must agree.
    same_core = before.core_built is not None and before.core_built == now.core_built
    changed = set(suite_code.changed(before.tests, now.tests))
    # changed or gone, not new: they ran in the earlier run
    altered = {t for t in changed if t in before.tests} | (set(before.tests) - set(now.tests))
    at_ref = before.package in (now.package, package_at_ref)
    kept: list[Result] = []
    narrowed: dict[str, tuple[str, ...]] = {}
    earlier_of: dict[str, Result] = {}
    whole: list[Mutant] = []
    for m in mutants:
        was = held.get(m.id)
        if was is None or not (before.package == now.package or (m.id in scoped and at_ref)):
            whole.append(m)
            continue
        reach = _reach(m, mapping, root, files)
        if was.verdict == KILLED:
            killer = suite_code.normal(was.failed)
            # A kill may need the state a test run before the killer left: those must be unchanged too.
            before_it = (
                altered if was.tests == (SUITE,) else altered & {suite_code.normal(t) for t in was.tests}
            )
            holds = killer in now.tests and killer not in changed and _within(killer, reach) and not before_it
            # where the mutated module did not import, no test ran: it fails whatever the tests are (a
            # compiled one's import also depends on the build, which no digest here covers)
            if holds or (was.failed == IMPORT_FAILED and not is_cython(m.file)):
                kept.append(replace(was, mutant=m, depends=""))
            else:
                whole.append(m)
        elif m.at_import and not is_cython(m.file) and not same_core:
            whole.append(m)  # its earlier proof ran on the core where it was built, and only there
        else:
            # What runs at import, or a definition's header, every test reaches (``reach`` is None): the
            # earlier run proved every unchanged test passes, through the suite or the import's state.
            reaching = {t for t in changed if _within(t, reach)}
            if reaching:
                narrowed[m.id] = tuple(sorted(reaching))
                earlier_of[m.id] = replace(was, mutant=m)
            else:
                kept.append(replace(was, mutant=m, depends=""))
    return Carried(kept, narrowed, earlier_of, whole)


def _reach(m: Mutant, mapping: TestMap, root: Path, files: Sequence[str]) -> frozenset[str] | None:
    """The tests that reach ``m`` now, and those coverage cannot follow; None for the whole suite (what runs
    at import or a definition's header, which every test may see; no single test reaches it; or a compiled
    mutant with no map of the core's lines, whose tests are a guess)."""
    if m.at_import or m.definition:
        return None
    tests = tests_of(m, mapping, root, files)
    if tests == (SUITE,) or (is_cython(m.file) and m.file not in mapping.lines):
        return None
    return frozenset(suite_code.normal(t) for t in (*tests, *mapping.traced))


def _within(test: str, reach: frozenset[str] | None) -> bool:
    """Whether ``test`` is among ``reach``, where a file stands for every test in it (coverage names a test
    it cannot place, such as one a ``Test*`` class inherits, by its file)."""
    return reach is None or test in reach or test.partition("::")[0] in reach


def vouched(results: Sequence[Result], carried: Carried, scoped: Collection[str]) -> list[Result]:
    """``results`` as a later run may reuse them: what a scoped run carried of the mutants it chose only
    because a changed test reaches them (``scoped``) took the package elsewhere as an earlier run judged
    it, so no digest vouches for it."""
    assumed = set(scoped) & {*carried.narrowed, *(r.mutant.id for r in carried.kept)}
    return [replace(r, depends="") if r.mutant.id in assumed else r for r in results]


def merged(result: Result, carried: Carried) -> Result:
    """A narrowed survivor's verdict: the earlier one where the changed tests passed too."""
    was = carried.earlier.get(result.mutant.id)
    if was is None or result.verdict != SURVIVED:
        return result
    return replace(
        result,
        tests=tuple(dict.fromkeys((*was.tests, *result.tests))),
        detail=f"the new and changed tests passed; the rest carried from the earlier run ({was.verdict})",
    )

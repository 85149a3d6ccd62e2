"""A run scoped to a change: the mutants in functions or on lines whose code changed, and those a changed
test reaches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mutation_changes import Changes, changed_since

from .config import test_paths
from .select_tests import SUITE, TestMap, tests_of
from .work_item import Mutant


@dataclass(frozen=True)
class Scoped:
    mutants: list[Mutant]
    on_changed_lines: int
    reached_by_changed_tests: int
    reached: frozenset[str] = field(default_factory=frozenset)  # their ids: chosen by a changed test alone

    def describe(self, of: int) -> str:
        return (
            f"{len(self.mutants)} of {of} mutants: {self.on_changed_lines} in changed functions or lines, "
            f"{self.reached_by_changed_tests} more that a changed test reaches"
        )


def changes_for(
    ref: str | None, root: Path, pytest_args: Sequence[str], files: Sequence[str]
) -> Changes | None:
    """What changed since ``ref`` in the files mutated and the tests the sweep runs (its pytest paths)."""
    if ref is None:
        return None
    return changed_since(ref, root).within(files, test_paths(pytest_args, root))


def on_changed_lines(mutants: Sequence[Mutant], changes: Changes) -> list[Mutant]:
    """The mutants on changed lines, and every mutant of a function whose body changed: a change to one
    line of a function can decide whether a test still tells a mutant of another line apart."""
    return [
        m
        for m in mutants
        if changes.touches(m.file, m.line, m.end_line) or changes.in_changed_function(m.file, m.scope)
    ]


def by_change(
    mutants: Sequence[Mutant], changes: Changes, mapping: TestMap | None, root: Path, files: Sequence[str]
) -> Scoped:
    """The mutants a change can have re-judged; with no map of the tests, those on changed lines alone.

    A mutant whose statement no test reaches on its own runs the whole suite, and so does one of what runs
    at import or of a definition's header once its first tests pass: any changed test reaches those.
    """
    lines = on_changed_lines(mutants, changes)
    if not changes.tests or mapping is None:
        return Scoped(lines, len(lines), 0)
    chosen = {m.id for m in lines}
    reached: list[str] = []
    for m in mutants:
        if m.id in chosen:
            continue
        tests = tests_of(m, mapping, root, files)
        every = tests == (SUITE,) or m.at_import or m.definition
        if every or any(changes.changed_test(t) for t in tests):
            reached.append(m.id)
    chosen.update(reached)
    return Scoped([m for m in mutants if m.id in chosen], len(lines), len(reached), frozenset(reached))

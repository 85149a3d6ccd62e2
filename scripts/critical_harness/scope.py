"""A catalogue run scoped to a change: the mutants of a changed function, or whose edited lines or named
tests changed."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mutation_changes import Changes

from .model import Mutant

_HUNK = re.compile(r"^@@ -(?P<start>\d+)(?:,(?P<count>\d+))? ", re.MULTILINE)


def edited_lines(mutant: Mutant) -> set[int]:
    """The lines of the unmutated file that the mutant's edit touches (its diff's old side)."""
    lines: set[int] = set()
    for hunk in _HUNK.finditer(mutant.diff):
        start, count = int(hunk["start"]), int(hunk["count"] or 1)
        lines.update(range(start, start + max(count, 1)))
    return lines


def by_change(mutants: Sequence[Mutant], changes: Changes) -> tuple[list[Mutant], str]:
    """The mutants a change can have re-judged, and one line saying why."""
    on_lines, by_tests = [], []
    for m in mutants:
        if changes.in_changed_function(m.spec.file, m.spec.scope) or any(
            changes.touches(m.spec.file, n, n) for n in edited_lines(m)
        ):
            on_lines.append(m)
        elif any(changes.changed_test(test) for test in m.spec.killed_by):
            by_tests.append(m)
    chosen = {m.spec.id for m in on_lines + by_tests}
    why = (
        f"{len(chosen)} of {len(mutants)} mutants: {len(on_lines)} in changed functions or lines, "
        f"{len(by_tests)} more are killed by a changed test"
    )
    return [m for m in mutants if m.spec.id in chosen], why

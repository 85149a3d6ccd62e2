"""Which engines mutated each executable line: the report's answer to "where can the proof not see?"."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class LineCoverage:
    executable: dict[str, list[int]]
    engines: dict[str, dict[int, set[str]]]  # file -> line -> engines that mutated it

    def unmutated(self) -> dict[str, list[int]]:
        return {
            f: [line for line in lines if not self.engines.get(f, {}).get(line)]
            for f, lines in self.executable.items()
        }

    def totals(self) -> dict[str, int]:
        counts = {"executable": 0, "any": 0}
        for f, lines in self.executable.items():
            for line in lines:
                counts["executable"] += 1
                found = self.engines.get(f, {}).get(line, set())
                counts["any"] += bool(found)
                for engine in found:
                    counts[engine] = counts.get(engine, 0) + 1
        return counts


def line_coverage(executable: dict[str, list[int]], hits: Iterable[tuple[str, str, int]]) -> LineCoverage:
    """``hits`` are (engine, file, line); a line inside a statement counts for the statement's first line."""
    engines: dict[str, dict[int, set[str]]] = {}
    for engine, file, line in hits:
        lines = executable.get(file)
        if not lines:
            continue
        at = bisect.bisect_right(lines, line) - 1
        if at < 0:
            continue
        engines.setdefault(file, {}).setdefault(lines[at], set()).add(engine)
    return LineCoverage(executable, engines)

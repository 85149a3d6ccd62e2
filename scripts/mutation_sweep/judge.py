"""The sweep's part of the gate: every mutant of its run killed, or reviewed equivalent; no stale review."""

from __future__ import annotations

from dataclasses import dataclass, field

from mutation_model import KILLED, TIMEOUT, Record, Run

from .config import Equivalent
from .work_item import INVALID


@dataclass
class Judgement:
    killed: list[Record] = field(default_factory=list)
    equivalent: list[tuple[Record, Equivalent]] = field(default_factory=list)
    survivors: list[Record] = field(default_factory=list)
    invalid: list[Record] = field(default_factory=list)  # not programs: Cython refused them
    stale: list[Equivalent] = field(default_factory=list)
    refuted: list[tuple[Equivalent, Record]] = field(default_factory=list)
    ambiguous: list[tuple[Equivalent, list[Record]]] = field(default_factory=list)
    shard: tuple[int, int] | None = None

    def findings(self) -> list[str]:
        found = [
            f"sweep survivor {r.mutant.id}: {r.mutant.file}:{r.mutant.line} ({r.mutant.scope}) "
            f"{r.mutant.operator}: {_short(r.mutant.original)} -> {_short(r.mutant.mutated)}"
            for r in self.survivors
        ]
        found += [
            f"stale {e.describe()}: matches no mutant of this run; update or delete it" for e in self.stale
        ]
        found += [
            f"refuted {e.describe()}: {r.mutant.id} is killed by {_first(r.outcome.killed_by)}, "
            "so not equivalent"
            for e, r in self.refuted
        ]
        found += [
            f"ambiguous {e.describe()}: matches {len(rs)} identical edits, not all surviving; "
            f"add occurrence = N (1 to {len(rs)}, in source order) to pick the equivalent ones"
            for e, rs in self.ambiguous
        ]
        return found


def _first(tests: tuple[str, ...]) -> str:
    return tests[0] if tests else "a test"


def _short(text: str, limit: int = 60) -> str:
    one = " ".join(text.split())
    return repr(one if len(one) <= limit else one[: limit - 3] + "...")


def judge(
    run: Run, equivalents: tuple[Equivalent, ...], operators: tuple[str, ...] | None = None
) -> Judgement:
    """``operators``: those a whole run applies (None: all); a review of another's mutant is not stale."""
    j = Judgement(shard=run.shard)
    reviewed: dict[str, Equivalent] = {}
    for entry in equivalents:
        hits = [r for r in run.records if entry.matches(r.mutant)]
        if not hits:
            # On a declared shard the mutant may be another shard's, and an operator the whole run does not
            # apply makes none: only a whole run of the entry's operator can call it stale.
            if run.shard is None and (operators is None or entry.operator in operators):
                j.stale.append(entry)
            continue
        killed = [r for r in hits if r.outcome.status in (KILLED, TIMEOUT)]
        if killed and len(killed) < len(hits):
            j.ambiguous.append((entry, hits))
            continue
        for hit in hits:
            if hit.outcome.status in (KILLED, TIMEOUT):
                j.refuted.append((entry, hit))
            else:
                reviewed[hit.mutant.id] = entry
    for record in sorted(run.records, key=lambda r: r.mutant.id):
        status = record.outcome.status
        if status in (KILLED, TIMEOUT):
            j.killed.append(record)
        elif status == INVALID:
            j.invalid.append(record)
        elif record.mutant.id in reviewed:
            j.equivalent.append((record, reviewed[record.mutant.id]))
        else:
            j.survivors.append(record)
    return j

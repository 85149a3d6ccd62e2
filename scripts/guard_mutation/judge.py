"""Every record judged against the hand reviews, by one set of rules for every engine.

A record ends as exactly one ``Status``. A critical mutant (one that names the tests that must kill it)
passes only when those tests killed it. Any other mutant passes when killed, timed out or proven
equivalent; a survivor (or one no test reached) passes only under a review that holds on this Python,
and is a finding otherwise. An invalid mutant (it did not build) is not a mutant and is not counted. A
review that matches a killed mutant is refuted; one that matches nothing in a whole run of its engine is
stale: both are findings. The proof of a change and the nightly gate both judge here. Names no engine.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .config import Review
from .model import EQUIVALENT, INVALID, KILLED, NO_TESTS, SURVIVED, TIMEOUT, Record, Run


class Status(enum.Enum):
    KILLED = "killed"
    EQUIVALENT = "equivalent"  # proven by a machine before any test ran
    REVIEWED = "reviewed"  # survived, and a hand review says why nothing observable changes
    NOT_COUNTED = "not counted"  # invalid: the edit did not make a program
    FINDING = "finding"


@dataclass(frozen=True)
class Judged:
    record: Record
    status: Status
    review: Review | None = None
    finding: str = ""  # one line: why it is a finding

    @property
    def engine(self) -> str:
        return self.record.mutant.engine


@dataclass(frozen=True)
class Tally:
    engine: str
    whole: bool
    counts: dict[Status, int]
    notes: tuple[str, ...] = ()  # what the engine's run says beside its figures

    @property
    def score(self) -> float | None:
        """Killed of those counted, as a percentage: reviewed and proven equivalents count as killed."""
        counted = sum(n for s, n in self.counts.items() if s is not Status.NOT_COUNTED)
        passed = counted - self.counts.get(Status.FINDING, 0)
        return None if counted == 0 else 100.0 * passed / counted

    def describe(self) -> str:
        parts = [f"{self.counts.get(s, 0)} {s.value}" for s in Status if self.counts.get(s, 0)]
        score = "no score: no mutant" if self.score is None else f"{self.score:.1f} %"
        return f"{self.engine}{'' if self.whole else ' (a part)'}: {score} ({', '.join(parts) or 'nothing'})"


@dataclass(frozen=True)
class Judgement:
    judged: tuple[Judged, ...]
    tallies: tuple[Tally, ...]
    review_findings: tuple[str, ...]  # stale and refuted reviews

    @property
    def findings(self) -> list[str]:
        return [j.finding for j in self.judged if j.status is Status.FINDING] + list(self.review_findings)


def judge(runs: Sequence[Run], reviews: Iterable[Review]) -> Judgement:
    here = [r for r in reviews if r.holds_here()]
    judged: list[Judged] = []
    used: dict[int, list[Record]] = {r.number: [] for r in here}
    for run in runs:
        for record in run.records:
            matching = [r for r in here if matches(r, record)]
            for review in matching:
                used[review.number].append(record)
            judged.append(_judged(record, matching[0] if matching else None))
    review_findings: list[str] = []
    whole = {run.engine for run in runs if run.whole}
    for review in here:
        hits = used[review.number]
        killed = [h for h in hits if h.outcome.verdict in (KILLED, TIMEOUT)]
        if killed:
            review_findings.append(
                f"review {review.number} ({review.function}: {review.diff}) is refuted: "
                f"{killed[0].mutant.id} was killed by {(killed[0].outcome.killers or ('its tests',))[0]}"
            )
        elif not hits and review.engine in whole:
            review_findings.append(
                f"review {review.number} ({review.engine}, {review.function}: {review.diff}) is stale: "
                "its engine's whole run made no such mutant; delete the review or fix its keys"
            )
    tallies = tuple(_tally(run, [j for j in judged if j.engine == run.engine]) for run in runs)
    return Judgement(tuple(judged), tallies, tuple(review_findings))


def matches(review: Review, record: Record) -> bool:
    mutant = record.mutant
    if review.engine != mutant.engine or review.function != mutant.function:
        return False
    changed = mutant.changed_lines()
    return review.diff in changed and (review.removed is None or review.removed in changed)


def _judged(record: Record, review: Review | None) -> Judged:  # noqa: PLR0911 (one return per rule)
    mutant, verdict = record.mutant, record.outcome.verdict
    where = f"{mutant.engine} {mutant.id} ({mutant.file}:{mutant.line}, {mutant.function or '<module>'})"
    if verdict == INVALID:
        if mutant.critical:
            return Judged(
                record, Status.FINDING, None, f"critical {where} could not be judged: {record.outcome.detail}"
            )
        return Judged(record, Status.NOT_COUNTED)
    if mutant.critical:
        if verdict == KILLED:
            return Judged(record, Status.KILLED)
        return Judged(record, Status.FINDING, None, f"critical {where} {verdict}: {mutant.why}")
    if verdict in (KILLED, TIMEOUT):
        return Judged(record, Status.KILLED)
    if verdict == EQUIVALENT:
        return Judged(record, Status.EQUIVALENT)
    if verdict in (SURVIVED, NO_TESTS) and review is not None:
        return Judged(record, Status.REVIEWED, review)
    changed = " / ".join(line for line in record.mutant.changed_lines()[-1:]) or "(no diff)"
    return Judged(record, Status.FINDING, None, f"{where} {verdict}, reviewed by nobody: {changed}")


def _tally(run: Run, judged: Sequence[Judged]) -> Tally:
    counts: dict[Status, int] = {}
    for j in judged:
        counts[j.status] = counts.get(j.status, 0) + 1
    return Tally(run.engine, run.whole, counts, run.notes)

"""The gate's judgement: every engine's run of records classed killed, equivalent, skipped or not killed.

The runs (``mutation_model.Run``, one per engine, as the store holds them) and the reviewed equivalents
meet here in one ``Evaluation``; the gate prints its decision and the report renders the same object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mutation_common import diff_sides
from mutation_gate_config import Equivalent, GateConfig, equivalent_matches
from mutation_model import CORE_DELETIONS, CRITICAL, MUTMUT, SWEEP, JudgedMutant, Record, Run, Verdict
from mutation_sweep.judge import Judgement
from mutation_sweep.work_item import INVALID

KILLED = {"killed", "caught by type check", "timeout", "segfault"}
SURVIVED = {"survived"}
UNEXCUSABLE = {"no tests", "suspicious", "check was interrupted by user"}
EXCLUDED = {"skipped"}


@dataclass
class Evaluation:
    """Everything the gate decided; the report renders the same object."""

    runs: Mapping[str, Run]  # by engine; mutmut's is always there
    config: GateConfig
    killed: list[Record] = field(default_factory=list)  # mutmut's, as the score counts them
    survivors: list[Record] = field(default_factory=list)
    excluded: list[Record] = field(default_factory=list)
    equivalent_of: dict[str, Equivalent] = field(default_factory=dict)
    stale: list[Equivalent] = field(default_factory=list)
    out_of_scope: list[Equivalent] = field(default_factory=list)
    other_shards: list[Equivalent] = field(default_factory=list)  # a shard cannot say they are stale
    ambiguous: list[tuple[Equivalent, list[str]]] = field(default_factory=list)
    refuted: list[tuple[Equivalent, list[str]]] = field(default_factory=list)
    critical: list[JudgedMutant] | None = None  # the harness's verdicts
    sweep: Judgement | None = None
    deletions: list[JudgedMutant] | None = None  # the core deletions', against their reviews
    deletion_stale: list[tuple[str, str]] = field(default_factory=list)  # (scope, text) no survivor has

    @property
    def mutmut(self) -> Run:
        return self.runs[MUTMUT]

    @property
    def counted(self) -> int:
        return len(self.killed) + len(self.survivors)

    @property
    def score(self) -> float | None:
        """None when no mutant was counted: a run that selected nothing has no score, not 100 %."""
        return None if self.counted == 0 else 100.0 * len(self.killed) / self.counted

    def score_text(self) -> str:
        if self.score is None:
            return "no score: no mutant was selected"
        return f"mutmut score {self.score:.2f}% (min {self.config.min_score:g}%)"

    @property
    def critical_failures(self) -> list[JudgedMutant]:
        return [c for c in self.critical or [] if c.verdict is not Verdict.KILLED]

    def findings(self) -> list[str]:
        found: list[str] = []
        if self.score is not None and self.score < self.config.min_score:
            found.append(
                f"mutation score {self.score:.2f}% < min_score {self.config.min_score:g}% "
                f"({len(self.survivors)} unreviewed survivor(s) of {self.counted})"
            )
            # below min_score every unreviewed survivor is part of the finding; above it they are tolerated
            for r in self.survivors:
                where = f"{r.mutant.file}:{r.mutant.line}"
                found.append(f"{r.outcome.status}: {r.mutant.id} ({where}) {_first_added(r)}")
        for entry in self.stale:
            found.append(f"stale {entry.describe()}: matches no current mutant; update or delete it")
        for entry, names in self.ambiguous:
            found.append(
                f"ambiguous {entry.describe()}: matches {len(names)} mutants ({', '.join(names)}); "
                "add `removed = ...` (the '-' line) to pick one"
            )
        for entry, names in self.refuted:
            killed = f"{names[0]} is" if len(names) == 1 else f"{', '.join(names)} are"
            found.append(f"refuted {entry.describe()}: {killed} killed, so not equivalent; delete the entry")
        for c in self.critical_failures:
            found.append(f"critical mutant {c.id}: {c.status} ({c.file} {c.scope}) {c.note}".rstrip())
        if self.sweep is not None:
            found += self.sweep.findings()
        for d in self.deletions or []:
            if d.verdict is Verdict.NOT_KILLED:
                found.append(
                    f"core deletion {d.id} survived: {d.file}:{d.line} ({d.scope}) {d.original!r} made pass"
                )
        for scope, text in self.deletion_stale:
            found.append(
                f"stale [[reviewed]] (core-deletions, {scope}: {text!r}): matches no surviving deletion; "
                "update or delete it"
            )
        return found


@dataclass(frozen=True)
class EngineTally:
    """One engine's mutants, each counted once: killed + reviewed equivalent + skipped + not killed."""

    engine: str
    killed: int
    equivalent: int
    not_killed: int
    skipped: int = 0

    @property
    def total(self) -> int:
        return self.killed + self.equivalent + self.not_killed + self.skipped

    @property
    def score(self) -> float | None:
        counted = self.killed + self.not_killed
        return None if counted == 0 else 100.0 * self.killed / counted

    def describe(self) -> str:
        score = "no score" if self.score is None else f"score {self.score:.2f}%"
        skipped = f", {self.skipped} skipped" if self.skipped else ""
        return (
            f"{self.engine}: {self.total} mutants: {self.killed} killed, "
            f"{self.equivalent} reviewed equivalent, {self.not_killed} not killed{skipped}; {score}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "total": self.total,
            "killed": self.killed,
            "equivalent": self.equivalent,
            "not_killed": self.not_killed,
            "skipped": self.skipped,
            "score": self.score,
        }


def engines(ev: Evaluation) -> list[str]:
    """The engines whose results this evaluation holds, in the order every output lists them."""
    present = {
        MUTMUT: True,
        SWEEP: ev.sweep is not None,
        CRITICAL: ev.critical is not None,
        CORE_DELETIONS: ev.deletions is not None,
    }
    return [engine for engine, there in present.items() if there]


def tally(ev: Evaluation) -> list[EngineTally]:
    """The one count every output prints: per engine, each mutant once, as ``judged`` classes it."""
    counts = {(engine, verdict): 0 for engine in engines(ev) for verdict in Verdict}
    for mutant in judged(ev):
        counts[mutant.engine, mutant.verdict] += 1
    return [
        EngineTally(
            engine,
            killed=counts[engine, Verdict.KILLED],
            equivalent=counts[engine, Verdict.EQUIVALENT],
            not_killed=counts[engine, Verdict.NOT_KILLED],
            skipped=counts[engine, Verdict.SKIPPED],
        )
        for engine in engines(ev)
    ]


def judged(ev: Evaluation) -> list[JudgedMutant]:
    """Every engine's records as the one model the counts and the reports read: mutmut's, the sweep's,
    then the harness's, each in its run's order."""
    found = [_judged_mutmut(r, ev) for r in ev.mutmut.records]
    if ev.sweep is not None:
        reviewed = {r.mutant.id: e.reason for r, e in ev.sweep.equivalent}
        killed = {r.mutant.id for r in ev.sweep.killed}
        every = [
            *ev.sweep.killed,
            *(r for r, _ in ev.sweep.equivalent),
            *ev.sweep.survivors,
            *ev.sweep.invalid,
        ]
        found += [_judged_sweep(r, killed, reviewed) for r in sorted(every, key=lambda r: r.mutant.id)]
    found += ev.critical or []
    found += ev.deletions or []
    return found


def _judged_sweep(record: Record, killed: set[str], reviewed: dict[str, str]) -> JudgedMutant:
    m = record.mutant
    if m.id in killed:
        return JudgedMutant.of(record, Verdict.KILLED, reviewed.get(m.id, ""))
    if record.outcome.status == INVALID:
        return JudgedMutant.of(
            record, Verdict.SKIPPED, record.outcome.detail or "Cython refuses to translate it"
        )
    if m.id in reviewed:
        return JudgedMutant.of(record, Verdict.EQUIVALENT, reviewed[m.id])
    return JudgedMutant.of(record, Verdict.NOT_KILLED)


def _judged_mutmut(record: Record, ev: Evaluation) -> JudgedMutant:
    equivalent = ev.equivalent_of.get(record.mutant.id)
    status = record.outcome.status
    if status in KILLED:
        verdict = Verdict.KILLED
    elif equivalent is not None:
        verdict = Verdict.EQUIVALENT
    elif status in EXCLUDED:
        verdict = Verdict.SKIPPED
    else:
        verdict = Verdict.NOT_KILLED
    return JudgedMutant.of(record, verdict, equivalent.reason if equivalent is not None else "")


def _first_added(record: Record) -> str:
    _, added = diff_sides(record.mutant.diff)
    return f"-> {added[0]}" if added else ""


def evaluate(
    runs: Mapping[str, Run],
    config: GateConfig,
    sweep: Judgement | None = None,
    deletion_reviews: Mapping[tuple[str, str], str] | None = None,
) -> Evaluation:
    """``runs`` by engine (mutmut's required); ``sweep``: the sweep's run judged against its reviews;
    ``deletion_reviews``: the core deletions' reviews, (scope, text) -> reason."""
    ev = Evaluation(runs=runs, config=config, sweep=sweep)
    if CORE_DELETIONS in runs:
        _judge_deletions(ev, runs[CORE_DELETIONS], deletion_reviews or {})
    if CRITICAL in runs:
        ev.critical = [
            JudgedMutant.of(
                r,
                Verdict.KILLED if r.outcome.status == "killed" else Verdict.NOT_KILLED,
                r.outcome.detail,
            )
            for r in runs[CRITICAL].records
        ]
    _match_equivalents(ev, ev.mutmut, config)
    for record in ev.mutmut.records:
        status = record.outcome.status
        if status in KILLED:
            ev.killed.append(record)
        elif record.mutant.id in ev.equivalent_of or status in EXCLUDED:
            ev.excluded.append(record)
        else:
            ev.survivors.append(record)
    return ev


def _judge_deletions(ev: Evaluation, run: Run, reviews: Mapping[tuple[str, str], str]) -> None:
    ev.deletions = []
    for record in run.records:
        status, reason = record.outcome.status, reviews.get((record.mutant.scope, record.mutant.original))
        if status == "killed":
            ev.deletions.append(JudgedMutant.of(record, Verdict.KILLED))
        elif status == "invalid":
            ev.deletions.append(JudgedMutant.of(record, Verdict.SKIPPED, record.outcome.detail))
        elif reason is not None:
            ev.deletions.append(JudgedMutant.of(record, Verdict.EQUIVALENT, reason))
        else:
            ev.deletions.append(JudgedMutant.of(record, Verdict.NOT_KILLED))
    survived = {(r.mutant.scope, r.mutant.original) for r in run.records if r.outcome.status == "survived"}
    ev.deletion_stale = [key for key in reviews if key not in survived]


def _match_equivalents(ev: Evaluation, run: Run, config: GateConfig) -> None:
    """Sort each reviewed entry into equivalent, stale, out of scope, ambiguous or refuted."""
    for entry in config.equivalents:
        hits = [r for r in run.records if equivalent_matches(entry, r.mutant)]
        if len(hits) > 1 and not _same_edit_everywhere(hits):
            ev.ambiguous.append((entry, [r.mutant.id for r in hits]))
        elif not hits:
            if run.shard is not None:
                # its mutant may sit in another shard; the merged results judge staleness
                ev.other_shards.append(entry)
            elif run.functions is None or entry.function in run.functions:
                ev.stale.append(entry)
            else:
                # a scoped run (changed-since) did not generate this function's mutants at all
                ev.out_of_scope.append(entry)
        else:
            # One edit: in one place, or the very same edit of the very same line made in several places
            # of one function, which no `removed` can tell apart. The review answers for each of its
            # mutants that survived; one that no test reached ("no tests") stays not killed, whatever
            # the review says; a review whose every mutant is killed is wrong (or no longer needed).
            ev.equivalent_of.update((r.mutant.id, entry) for r in hits if r.outcome.status in SURVIVED)
            if all(r.outcome.status in KILLED for r in hits):
                ev.refuted.append((entry, [r.mutant.id for r in hits]))


def _same_edit_everywhere(hits: list[Record]) -> bool:
    return len({tuple(map(tuple, diff_sides(r.mutant.diff))) for r in hits}) == 1

"""The gate's judgement: every engine's mutants classed killed, equivalent, skipped or not killed; findings.

mutmut's statuses, the reviewed equivalents and the other engines' results meet here in one
``Evaluation``; the gate prints its decision and the report renders the same object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mutation_common import MutantRecord, Results, diff_sides, natural_key, universe_of
from mutation_gate_config import Equivalent, GateConfig, equivalent_matches
from mutation_io import InputError
from mutation_model import CRITICAL, MUTMUT, SWEEP, JudgedMutant, Verdict, mutant_key
from mutation_sweep.judge import Judgement
from mutation_sweep.results import SweepResults
from mutation_sweep.work_item import INVALID
from mutation_sweep.work_item import Result as SweepResult

KILLED = {"killed", "caught by type check", "timeout", "segfault"}
SURVIVED = {"survived"}
UNEXCUSABLE = {"no tests", "suspicious", "check was interrupted by user"}
EXCLUDED = {"skipped"}
INCOMPLETE = {"not checked"}
KNOWN = KILLED | SURVIVED | UNEXCUSABLE | EXCLUDED | INCOMPLETE


@dataclass
class Evaluation:
    """Everything the gate decided; the report renders the same object."""

    results: Results
    config: GateConfig
    killed: list[MutantRecord] = field(default_factory=list)
    survivors: list[MutantRecord] = field(default_factory=list)
    excluded: list[MutantRecord] = field(default_factory=list)
    equivalent_of: dict[str, Equivalent] = field(default_factory=dict)
    stale: list[Equivalent] = field(default_factory=list)
    out_of_scope: list[Equivalent] = field(default_factory=list)
    other_shards: list[Equivalent] = field(default_factory=list)  # a shard cannot say they are stale
    ambiguous: list[tuple[Equivalent, list[str]]] = field(default_factory=list)
    refuted: list[tuple[Equivalent, list[str]]] = field(default_factory=list)
    critical: list[JudgedMutant] | None = None  # the harness's verdicts, judged as they are read
    sweep: Judgement | None = None
    sweep_results: SweepResults | None = None

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
            for mutant in self.survivors:
                where = f"{mutant.file}:{mutant.line}"
                found.append(f"{mutant.status}: {mutant.name} ({where}) {_first_added(mutant)}")
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
    present = {MUTMUT: True, SWEEP: ev.sweep is not None, CRITICAL: ev.critical is not None}
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
    """Every engine's mutants as the one model the counts and the reports read; mutmut's, the sweep's,
    then the harness's, each in its own order."""
    found = [_judged_mutmut(m, ev) for m in sorted(ev.results.mutants, key=lambda m: natural_key(m.name))]
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
    return found


def _judged_sweep(result: SweepResult, killed: set[str], reviewed: dict[str, str]) -> JudgedMutant:
    m = result.mutant
    note = reviewed.get(m.id, "")
    if m.id in killed:
        verdict = Verdict.KILLED
    elif result.verdict == INVALID:
        verdict, note = Verdict.SKIPPED, result.detail or "Cython refuses to translate it"
    elif m.id in reviewed:
        verdict = Verdict.EQUIVALENT
    else:
        verdict = Verdict.NOT_KILLED
    return JudgedMutant(
        engine=SWEEP,
        id=m.id,
        key=m.key,
        file=m.file,
        scope=m.scope,
        operator=m.operator,
        original=m.original,
        replacement=m.mutated,
        status=result.verdict,
        verdict=verdict,
        line=m.line,
        end_line=m.end_line,
        note=note,
        killed_by=(result.failed,) if result.failed else (),
        duration=result.duration,
    )


def _judged_mutmut(mutant: MutantRecord, ev: Evaluation) -> JudgedMutant:
    equivalent = ev.equivalent_of.get(mutant.name)
    if mutant.status in KILLED:
        verdict = Verdict.KILLED
    elif equivalent is not None:
        verdict = Verdict.EQUIVALENT
    elif mutant.status in EXCLUDED:
        verdict = Verdict.SKIPPED
    else:
        verdict = Verdict.NOT_KILLED
    scope = mutant.parsed.qualname
    return JudgedMutant(
        engine=MUTMUT,
        id=mutant.name,
        key=mutant_key(mutant.file, scope, mutant.mutator, mutant.original, mutant.replacement),
        file=mutant.file,
        scope=scope,
        operator=mutant.mutator,
        original=mutant.original,
        replacement=mutant.replacement,
        status=mutant.status,
        verdict=verdict,
        line=mutant.line,
        end_line=mutant.end_line,
        column=mutant.column,
        end_column=mutant.end_column,
        note=equivalent.reason if equivalent is not None else "",
        duration=mutant.duration,
        diff=mutant.diff,
    )


def _first_added(mutant: MutantRecord) -> str:
    _, added = diff_sides(mutant.diff)
    return f"-> {added[0]}" if added else ""


def _check_complete(results: Results) -> None:
    unknown = sorted({m.status for m in results.mutants} - KNOWN)
    if unknown:
        raise InputError(f"results hold unknown mutmut status(es) {unknown}; is this mutmut 3.8?")
    incomplete = [m.name for m in results.mutants if m.status in INCOMPLETE]
    if incomplete:
        raise InputError(
            f"{len(incomplete)} mutant(s) were never checked (e.g. {incomplete[0]}); the mutmut run was cut "
            "short. Re-run `python scripts/mutation_run.py run` (or `mutmut run`) and export again."
        )


def _check_whole(results: Results) -> None:
    """The results are their whole run, or exactly the share of a declared shard: never less."""
    universe = results.universe
    count = universe.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or not universe.get("sha256"):
        raise InputError(
            "the results carry no 'universe' (the mutant list their run was cut from), so nothing shows "
            "they are whole; export them with `python scripts/mutation_run.py run` or `merge`"
        )
    names = [m.name for m in results.mutants]
    if results.shard is None:
        if universe_of(names) != universe:
            raise InputError(
                f"the results hold {len(names)} of the {count} mutants of their run and declare no shard; "
                "a partial run cannot pass the gate (run them all, or merge every shard)"
            )
        if count == 0 and results.scope.get("kind", "full") == "full":
            raise InputError(
                "a whole-package run with no mutants: mutmut generated none, so nothing was tested"
            )
        return
    index, shards = results.shard.get("index"), results.shard.get("count")
    if not (isinstance(index, int) and isinstance(shards, int) and 1 <= index <= shards):
        raise InputError(
            f"'shard' must be {{'index': I, 'count': N}} with 1 <= I <= N, got {results.shard!r}"
        )
    expected = len(range(index - 1, count, shards))
    if len(names) != expected:
        raise InputError(
            f"shard {index}/{shards} of {count} mutants must hold {expected}, holds {len(names)}; "
            "the shard's run was cut short or its file was edited"
        )


def evaluate(results: Results, config: GateConfig, critical: list[JudgedMutant] | None = None) -> Evaluation:
    _check_complete(results)
    _check_whole(results)
    ev = Evaluation(results=results, config=config, critical=critical)
    _match_equivalents(ev, results, config)
    for mutant in sorted(results.mutants, key=lambda m: natural_key(m.name)):
        if mutant.status in KILLED:
            ev.killed.append(mutant)
        elif mutant.name in ev.equivalent_of or mutant.status in EXCLUDED:
            ev.excluded.append(mutant)
        else:
            ev.survivors.append(mutant)
    return ev


def _match_equivalents(ev: Evaluation, results: Results, config: GateConfig) -> None:
    """Sort each reviewed entry into equivalent, stale, out of scope, ambiguous or refuted."""
    in_scope = _functions_in_scope(results)
    for entry in config.equivalents:
        hits = sorted(
            (m for m in results.mutants if equivalent_matches(entry, m)), key=lambda m: natural_key(m.name)
        )
        if len(hits) > 1 and not _same_edit_everywhere(hits):
            ev.ambiguous.append((entry, [m.name for m in hits]))
        elif not hits:
            if results.shard is not None:
                # its mutant may sit in another shard; the merged results judge staleness
                ev.other_shards.append(entry)
            elif in_scope is None or entry.function in in_scope:
                ev.stale.append(entry)
            else:
                # a scoped run (changed-since) did not generate this function's mutants at all
                ev.out_of_scope.append(entry)
        else:
            # One edit: in one place, or the very same edit of the very same line made in several places
            # of one function, which no `removed` can tell apart. The review answers for each of its
            # mutants that survived; one that no test reached ("no tests") stays not killed, whatever
            # the review says; a review whose every mutant is killed is wrong (or no longer needed).
            ev.equivalent_of.update((m.name, entry) for m in hits if m.status in SURVIVED)
            if all(m.status in KILLED for m in hits):
                ev.refuted.append((entry, [m.name for m in hits]))


def _same_edit_everywhere(hits: list[MutantRecord]) -> bool:
    return len({tuple(map(tuple, diff_sides(m.diff))) for m in hits}) == 1


def _functions_in_scope(results: Results) -> set[str] | None:
    """Functions whose mutants this result covers, or None for a whole-package run."""
    if results.scope.get("kind", "full") == "full":
        return None
    return set(results.scope.get("functions") or {m.parsed.function for m in results.mutants})

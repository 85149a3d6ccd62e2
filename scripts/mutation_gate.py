"""Fail CI when a mutant survives that nobody has reviewed as equivalent, or a critical mutant lives.

Inputs:
  --results FILE   mutmut verdicts exported by ``python scripts/mutation_run.py run`` (or ``merge``)
  --config FILE    mutation_config.toml: ``[gate]`` and the reviewed ``[[equivalent]]`` list
  --critical FILE  optional JSON of ``python scripts/critical_mutants.py run --json FILE``
  --sweep FILE     optional results of ``python scripts/mutation_sweep.py run --out FILE``: every
                   generated mutant killed or reviewed in ``[[sweep_equivalent]]``, no review stale

Exit status: 0 the gate passes; 1 a finding (unreviewed survivor, score under min_score, stale or
ambiguous equivalent entry, an equivalent entry whose mutant is killed, critical mutant not killed);
2 bad or missing input (also: results with never-checked mutants, unknown keys in the config).

Verdict classes (mutmut status -> gate):
  killed, caught by type check, timeout, segfault -> killed
  survived             -> survivor, unless exactly one [[equivalent]] entry matches it (then excluded)
  no tests             -> survivor: no test reaches the mutated code (an equivalent entry cannot excuse it)
  suspicious, check was interrupted by user -> survivor: the run did not show the tests caught it
  skipped              -> excluded from the score, listed
  not checked          -> input error (exit 2): the run is incomplete
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mutation_common import (
    Equivalent,
    GateConfig,
    InputError,
    MutantRecord,
    Results,
    add_input_arguments,
    check_output,
    diff_sides,
    equivalent_matches,
    load_gate_config,
    load_results,
    natural_key,
    read_mutation_config,
    universe_of,
)
from mutation_model import CRITICAL, CRITICAL_OPERATOR, MUTMUT, SWEEP, JudgedMutant, Verdict, mutant_key
from mutation_sweep import config as sweep_config
from mutation_sweep.judge import Judgement, judge
from mutation_sweep.tools.results import ResultsError, SweepResults
from mutation_sweep.tools.results import load as load_sweep
from mutation_sweep.work_item import Result as SweepResult

KILLED = {"killed", "caught by type check", "timeout", "segfault"}
SURVIVED = {"survived"}
UNEXCUSABLE = {"no tests", "suspicious", "check was interrupted by user"}
EXCLUDED = {"skipped"}
INCOMPLETE = {"not checked"}
KNOWN = KILLED | SURVIVED | UNEXCUSABLE | EXCLUDED | INCOMPLETE

CRITICAL_VERDICTS = {"killed", "survived", "timeout", "invalid", "not-exercised", "wrong-reason"}


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
        every = [*ev.sweep.killed, *(r for r, _ in ev.sweep.equivalent), *ev.sweep.survivors]
        found += [_judged_sweep(r, killed, reviewed) for r in sorted(every, key=lambda r: r.mutant.id)]
    found += ev.critical or []
    return found


def _judged_sweep(result: SweepResult, killed: set[str], reviewed: dict[str, str]) -> JudgedMutant:
    m = result.mutant
    if m.id in killed:
        verdict = Verdict.KILLED
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
        note=reviewed.get(m.id, ""),
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


def check_critical_complete(critical: list[JudgedMutant], config: Path) -> None:
    """Critical results pass only when they answer for every mutant of the catalogue, and no other."""
    entries = read_mutation_config(config).get("mutant") or []
    catalogue = [e.get("id") for e in entries if isinstance(e, dict)]
    if not catalogue:
        raise InputError(f"{config}: no [[mutant]] catalogue to check the critical results against")
    ids = [c.id for c in critical]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    missing = [i for i in catalogue if i not in ids]
    unknown = [i for i in ids if i not in catalogue]
    problems = []
    if missing:
        problems.append(
            f"hold {len(catalogue) - len(missing)} of the {len(catalogue)} catalogue mutants; missing: "
            + _some(missing)
        )
    if unknown:
        problems.append("name mutants the catalogue does not have: " + _some(unknown))
    if duplicated:
        problems.append("name a mutant twice: " + _some(duplicated))
    if problems:
        raise InputError(
            "the critical results "
            + "; ".join(problems)
            + " (an --only run, or another catalogue's results, "
            "cannot pass the gate)"
        )


def _some(ids: Sequence[object], shown: int = 5) -> str:
    text = ", ".join(str(i) for i in ids[:shown])
    return text + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def load_critical(path: Path) -> list[JudgedMutant]:
    hint = f"python scripts/critical_mutants.py run --json {path}"
    if not path.is_file():
        raise InputError(f"{path}: no critical-mutant results. Run `{hint}` first.")
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: unreadable critical-mutant JSON ({exc}). Re-run `{hint}`.") from exc
    entries = data.get("mutants") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise InputError(f"{path}: expected a 'mutants' list (the --json output of critical_mutants.py)")
    mutants: list[JudgedMutant] = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise InputError(f"{path}: every critical mutant needs a string 'id': {entry!r}")
        verdict = entry.get("verdict")
        if verdict not in CRITICAL_VERDICTS:
            raise InputError(f"{path}: mutant {entry['id']}: unknown verdict {verdict!r}")
        # the tests that actually failed, when the harness says; its killed_by is what was expected
        killed_by = entry.get("failed_tests") or entry.get("killed_by") or ""
        file, scope = str(entry.get("file") or ""), str(entry.get("scope") or "")
        diff = str(entry.get("diff") or "")
        removed, added = diff_sides(diff)
        original, replacement = "\n".join(removed), "\n".join(added)
        mutants.append(
            JudgedMutant(
                engine=CRITICAL,
                id=entry["id"],
                # the harness's own key (what the catalogue entry edits), else one from the diff
                key=str(
                    entry.get("key") or mutant_key(file, scope, CRITICAL_OPERATOR, original, replacement)
                ),
                file=file,
                scope=scope,
                operator=CRITICAL_OPERATOR,
                original=original,
                replacement=replacement,
                status=verdict,
                verdict=Verdict.KILLED if verdict == "killed" else Verdict.NOT_KILLED,
                note=str(entry.get("why") or ""),
                killed_by=tuple(map(str, killed_by)) if isinstance(killed_by, list) else _some_one(killed_by),
                duration=entry.get("seconds") if isinstance(entry.get("seconds"), (int, float)) else None,
                diff=diff,
            )
        )
    return mutants


def _some_one(value: object) -> tuple[str, ...]:
    return (str(value),) if value else ()


def attach_sweep(ev: Evaluation, path: Path, config: Path) -> None:
    """Judge the sweep's results against its reviewed equivalents; bad input is an InputError."""
    try:
        ev.sweep_results = load_sweep(path)
        ev.sweep = judge(ev.sweep_results, sweep_config.load(config).equivalents)
    except (ResultsError, sweep_config.ConfigError) as exc:
        raise InputError(str(exc)) from exc


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mutation_gate.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_input_arguments(parser, critical_help="critical harness JSON; any verdict but killed fails")
    parser.add_argument("--json", type=Path, help="also write the decision as JSON here")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.json is not None:
            check_output(args.json, "--json")
        results = load_results(args.results, hint="python scripts/mutation_run.py run")
        config = load_gate_config(args.config)
        critical = load_critical(args.critical) if args.critical else None
        if critical is not None:
            check_critical_complete(critical, args.config)
        ev = evaluate(results, config, critical)
        if args.sweep:
            attach_sweep(ev, args.sweep, args.config)
    except InputError as exc:
        print(f"mutation gate: error: {exc}", file=sys.stderr)
        return 2
    if ev.survivors and ev.score is not None and ev.score >= config.min_score:
        print(f"  {len(ev.survivors)} survivor(s) tolerated by min_score {config.min_score:g}%")
    shard = results.shard
    judged = f"shard {shard['index']}/{shard['count']} alone" if shard else results.scope.get("kind", "full")
    print(f"mutation gate ({judged}): {ev.score_text()}")
    for count in tally(ev):
        print(f"  {count.describe()}")
    for entry in ev.out_of_scope:
        print(f"  not in this run's scope: {entry.describe()}")
    if ev.other_shards:
        print(
            f"  {len(ev.other_shards)} reviewed equivalent(s) match no mutant of this shard; "
            "the merged results judge whether they are stale"
        )
    if ev.sweep is not None and ev.sweep.shard:
        shard = ev.sweep.shard
        print(f"  the sweep's results are shard {shard['index']}/{shard['count']}, judged alone")
    findings = ev.findings()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "passed": not findings,
                    "score": ev.score,
                    "tally": [t.to_json() for t in tally(ev)],
                    "findings": findings,
                },
                indent=2,
                ensure_ascii=False,
            )
            + "\n",
            encoding="utf-8",
        )
    if findings:
        print(f"FAILED: {len(findings)} finding(s):")
        for finding in findings:
            print(f"  - {finding}")
        return 1
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())

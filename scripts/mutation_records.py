"""Each engine's results as the one model: its run of ``Record``s, made once, by the engine's own adapter.

mutmut's export, the sweep's results and the harness's JSON are read here, checked as their engines
read them (a partial or foreign file is an ``InputError``), and turned into a ``Run``. The store keeps the
runs; the gate and the report read only them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mutation_common import Results, diff_sides, load_results, natural_key, universe_of
from mutation_evaluation import EXCLUDED, KILLED, SURVIVED, UNEXCUSABLE
from mutation_io import InputError
from mutation_model import (
    CORE_DELETIONS,
    CRITICAL,
    CRITICAL_OPERATOR,
    DELETION_OPERATOR,
    MUTMUT,
    SWEEP,
    Mutant,
    Outcome,
    Record,
    Run,
    mutant_key,
)
from mutation_sweep.results import ResultsError, SweepResults
from mutation_sweep.results import load as load_sweep

# every word mutmut 3.8 gives a checked mutant: the classes the gate sorts them into
MUTMUT_STATUSES = KILLED | SURVIVED | UNEXCUSABLE | EXCLUDED
NOT_CHECKED = "not checked"
CRITICAL_VERDICTS = {"killed", "survived", "timeout", "invalid", "not-exercised", "wrong-reason"}


# --- mutmut ---------------------------------------------------------------------------------------------


def mutmut_run(results: Results, *, whole: bool = True) -> Run:
    """mutmut's exported results as a run: unless ``whole`` is False (a run scoped to a change, judged as
    it is), refused where a mutant was never checked, or where the results are less than their whole run
    without declaring the shard they are."""
    if whole:
        _check_complete(results)
        _check_whole(results)
    records = tuple(_mutmut_record(m) for m in sorted(results.mutants, key=lambda m: natural_key(m.name)))
    kind = str(results.scope.get("kind", "full"))
    functions = None
    if kind != "full":
        functions = tuple(sorted(results.scope.get("functions") or {r.mutant.function for r in records}))
    shard = results.shard
    return Run(
        MUTMUT,
        records,
        None if shard is None else (shard["index"], shard["count"]),
        kind,
        functions,
        {"mutmut_version": results.mutmut_version, "sources": dict(results.sources)},
    )


def read_mutmut(path: Path) -> Run:
    return mutmut_run(load_results(path, hint="python scripts/mutation_run.py run"))


def _mutmut_record(m: Any) -> Record:
    scope = m.parsed.qualname
    mutant = Mutant(
        engine=MUTMUT,
        id=m.name,
        key=mutant_key(m.file, scope, m.mutator, m.original, m.replacement),
        file=m.file,
        scope=scope,
        operator=m.mutator,
        original=m.original,
        mutated=m.replacement,
        line=m.line,
        end_line=m.end_line,
        column=m.column,
        end_column=m.end_column,
        diff=m.diff,
    )
    return Record(mutant, Outcome(m.status, (), m.duration))


def _check_complete(results: Results) -> None:
    unknown = sorted({m.status for m in results.mutants} - MUTMUT_STATUSES - {NOT_CHECKED})
    if unknown:
        raise InputError(f"results hold unknown mutmut status(es) {unknown}; is this mutmut 3.8?")
    incomplete = [m.name for m in results.mutants if m.status == NOT_CHECKED]
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
    index, shards = results.shard["index"], results.shard["count"]
    expected = len(range(index - 1, count, shards))
    if len(names) != expected:
        raise InputError(
            f"shard {index}/{shards} of {count} mutants must hold {expected}, holds {len(names)}; "
            "the shard's run was cut short or its file was edited"
        )


# --- the line sweep -----------------------------------------------------------------------------------


def sweep_run(results: SweepResults) -> Run:
    records = tuple(
        Record(
            Mutant(
                engine=SWEEP,
                id=r.mutant.id,
                key=r.mutant.key,
                file=r.mutant.file,
                scope=r.mutant.scope,
                operator=r.mutant.operator,
                original=r.mutant.original,
                mutated=r.mutant.mutated,
                line=r.mutant.line,
                end_line=r.mutant.end_line,
                occurrence=r.mutant.occurrence,
            ),
            Outcome(r.verdict, (r.failed,) if r.failed else (), r.duration, r.detail),
        )
        for r in sorted(results.results, key=lambda r: r.mutant.id)
    )
    facts = {
        "executable": {f: sorted(lines) for f, lines in sorted(results.executable.items())},
        "set_aside": {f: sorted(lines) for f, lines in sorted(results.set_aside.items())},
        "skipped": dict(results.skipped),
    }
    shard = results.shard
    return Run(SWEEP, records, None if shard is None else (shard["index"], shard["count"]), facts=facts)


def read_sweep(path: Path, *, whole: bool = True) -> Run:
    try:
        return sweep_run(load_sweep(path, whole=whole))
    except ResultsError as exc:
        raise InputError(str(exc)) from exc


# --- the critical-mutant catalogue --------------------------------------------------------------------


def critical_run(data: object, where: str) -> Run:
    """The harness's ``--json`` output (its ``mutants`` list) as a run."""
    entries = data.get("mutants") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise InputError(f"{where}: expected a 'mutants' list (the --json output of critical_mutants.py)")
    return Run(CRITICAL, tuple(_critical_record(entry, where) for entry in entries))


def _json(path: Path, what: str, hint: str) -> Any:
    """An engine's JSON results file; ``what`` names them and ``hint`` says which command writes them."""
    if not path.is_file():
        raise InputError(f"{path}: no {what} results. Run `{hint}` first.")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: unreadable {what} JSON ({exc}). Re-run `{hint}`.") from exc


def read_critical(path: Path) -> Run:
    data = _json(path, "critical-mutant", f"python scripts/critical_mutants.py run --json {path}")
    return critical_run(data, str(path))


def _critical_record(entry: object, where: str) -> Record:
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
        raise InputError(f"{where}: every critical mutant needs a string 'id': {entry!r}")
    verdict = entry.get("verdict")
    if verdict not in CRITICAL_VERDICTS:
        raise InputError(f"{where}: mutant {entry['id']}: unknown verdict {verdict!r}")
    # the tests that actually failed, when the harness says; its killed_by is what was expected
    killed_by = entry.get("failed_tests") or entry.get("killed_by") or ""
    file, scope = str(entry.get("file") or ""), str(entry.get("scope") or "")
    diff = str(entry.get("diff") or "")
    removed, added = diff_sides(diff)
    original, mutated = "\n".join(removed), "\n".join(added)
    seconds = entry.get("seconds")
    mutant = Mutant(
        engine=CRITICAL,
        id=entry["id"],
        # the harness's own key (what the catalogue entry edits), else one from the diff
        key=str(entry.get("key") or mutant_key(file, scope, CRITICAL_OPERATOR, original, mutated)),
        file=file,
        scope=scope,
        operator=CRITICAL_OPERATOR,
        original=original,
        mutated=mutated,
        diff=diff,
    )
    tests = (
        tuple(map(str, killed_by))
        if isinstance(killed_by, list)
        else ((str(killed_by),) if killed_by else ())
    )
    duration = float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else None
    return Record(mutant, Outcome(str(verdict), tests, duration, str(entry.get("why") or "")))


# --- the core's deletions -----------------------------------------------------------------------------

DELETIONS_FORMAT = "guard-lib-core-deletions"
DELETION_VERDICTS = {"killed", "survived", "reviewed", "invalid"}


def core_deletions_run(data: object, where: str, *, whole: bool = True) -> Run:
    """``scripts/core_deletions.py --json`` as a run: each deletion a record whose status is what its run
    saw (a survivor the run found reviewed is "survived": the gate reads the reviews itself). Unless
    ``whole`` is False, refused where it is a part (``--lines``, ``--changed-since``) or holds less than
    every deletion of its universe."""
    if not isinstance(data, dict) or data.get("format") != DELETIONS_FORMAT or data.get("version") != 1:
        raise InputError(
            f"{where}: not a {DELETIONS_FORMAT} file of version 1 (scripts/core_deletions.py --json)"
        )
    entries, universe = data.get("deletions"), data.get("universe")
    if not isinstance(entries, list) or not isinstance(universe, dict):
        raise InputError(f"{where}: 'deletions' must be a list and 'universe' an object")
    records = tuple(_deletion_record(entry, where, str(data.get("source") or "")) for entry in entries)
    if whole and (data.get("part") or universe.get("count") != len(records)):
        raise InputError(
            f"{where}: {len(records)} of the {universe.get('count')} deletions of the core, a part of a run "
            "(--lines or --changed-since): only a whole run goes into the store"
        )
    return Run(CORE_DELETIONS, records, scope="full" if whole else "part")


def read_core_deletions(path: Path, *, whole: bool = True) -> Run:
    data = _json(path, "core deletions'", f"python scripts/core_deletions.py --json {path}")
    return core_deletions_run(data, str(path), whole=whole)


def _deletion_record(entry: object, where: str, file: str) -> Record:
    fields = {"id": str, "line": int, "scope": str, "text": str, "verdict": str, "detail": str}
    if not isinstance(entry, dict) or not all(type(entry.get(k)) is t for k, t in fields.items()):
        raise InputError(f"{where}: every deletion needs {', '.join(fields)}: {entry!r}")
    if entry["verdict"] not in DELETION_VERDICTS:
        raise InputError(f"{where}: deletion {entry['id']}: unknown verdict {entry['verdict']!r}")
    status = "survived" if entry["verdict"] == "reviewed" else entry["verdict"]
    mutant = Mutant(
        engine=CORE_DELETIONS,
        id=entry["id"],
        key=mutant_key(file, entry["scope"], DELETION_OPERATOR, entry["text"], "pass"),
        file=file,
        scope=entry["scope"],
        operator=DELETION_OPERATOR,
        original=entry["text"],
        mutated="pass",
        line=entry["line"],
        end_line=entry["line"],
        occurrence=int(entry.get("occurrence", 1)),
    )
    detail = "" if status in ("killed", "survived") else entry["detail"]
    return Record(mutant, Outcome(status, (), None, detail))

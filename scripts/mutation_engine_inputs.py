"""The gate's and the report's one way in: every engine's run, judged against the reviews (``Evaluation``).

The runs come from the store (``guard-mutation gate``/``report``) or from each engine's own file (the
scripts' ``--results``, ``--sweep``, ``--critical``), made into runs by ``mutation_records`` either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from mutation_config_file import ConfigFileError, read_config, reviewed
from mutation_evaluation import Evaluation, evaluate
from mutation_gate_config import load_gate_config
from mutation_io import InputError, read_mutation_config
from mutation_model import CORE_DELETIONS, CRITICAL, MUTMUT, SWEEP, Run
from mutation_records import read_core_deletions, read_critical, read_mutmut, read_sweep
from mutation_sweep import config as sweep_config
from mutation_sweep.judge import judge


def check_critical_complete(run: Run, config: Path) -> None:
    """Critical results pass only when they answer for every mutant of the catalogue, and no other."""
    entries = read_mutation_config(config).get("mutant") or []
    catalogue = [e.get("id") for e in entries if isinstance(e, dict)]
    if not catalogue:
        raise InputError(f"{config}: no [[mutant]] catalogue to check the critical results against")
    ids = [r.mutant.id for r in run.records]
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


def runs_from_files(
    results: Path, critical: Path | None, sweep: Path | None, deletions: Path | None = None
) -> list[Run]:
    """The scripts' inputs, each engine's own file, as runs."""
    runs = [read_mutmut(results)]
    if critical is not None:
        runs.append(read_critical(critical))
    if sweep is not None:
        runs.append(read_sweep(sweep))
    if deletions is not None:
        runs.append(read_core_deletions(deletions))
    return runs


def deletion_reviews(config: Path) -> dict[tuple[str, str], str]:
    """The core deletions' ``[[reviewed]]`` entries: (scope, text) -> reason."""
    try:
        entries = reviewed(read_config(config), config, CORE_DELETIONS)
    except ConfigFileError as exc:
        raise InputError(str(exc)) from exc
    return {(e["scope"], e["text"]): e["reason"] for _, e in entries}


def judge_runs(runs: Iterable[Run], config: Path) -> Evaluation:
    """Every run judged against ``config``'s reviews (and, for the catalogue, against its entries)."""
    by_engine: dict[str, Run] = {}
    for run in runs:
        if run.engine in by_engine:
            raise InputError(f"two runs of {run.engine}: give one whole run of each engine")
        by_engine[run.engine] = run
    if MUTMUT not in by_engine:
        raise InputError("no mutmut results, which the report and the gate start from")
    gate = load_gate_config(config)
    if CRITICAL in by_engine:
        check_critical_complete(by_engine[CRITICAL], config)
    judged_sweep = None
    if SWEEP in by_engine:
        try:
            cfg = sweep_config.load(config)
        except sweep_config.ConfigError as exc:
            raise InputError(str(exc)) from exc
        judged_sweep = judge(by_engine[SWEEP], cfg.equivalents, cfg.operators)
    deletions = deletion_reviews(config) if CORE_DELETIONS in by_engine else None
    return evaluate(by_engine, gate, judged_sweep, deletions)

"""The gate's inputs from the other engines: the critical harness's JSON and the sweep's results.

Each is checked as it is read, so a partial or foreign file is an input error, not a pass.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mutation_common import diff_sides
from mutation_evaluation import Evaluation
from mutation_io import InputError, read_mutation_config
from mutation_model import CRITICAL, CRITICAL_OPERATOR, JudgedMutant, Verdict, mutant_key
from mutation_sweep import config as sweep_config
from mutation_sweep.judge import judge
from mutation_sweep.results import ResultsError
from mutation_sweep.results import load as load_sweep

CRITICAL_VERDICTS = {"killed", "survived", "timeout", "invalid", "not-exercised", "wrong-reason"}


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
        cfg = sweep_config.load(config)
        ev.sweep = judge(ev.sweep_results, cfg.equivalents, cfg.operators)
    except (ResultsError, sweep_config.ConfigError) as exc:
        raise InputError(str(exc)) from exc

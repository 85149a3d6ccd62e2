"""The proof of a change: every engine's run scoped to it, judged here, apart from the whole run's store.

A scoped run's results hold only the mutants the change selected, so they never go into the store (a part
never replaces a whole run there); each engine's lie in a folder of their own. Each selected mutant is
killed, reviewed equivalent (the same ``[[reviewed]]`` entries the gate reads), skipped, or not killed;
any not killed is a finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Judged:
    engine: str
    killed: int = 0
    reviewed: int = 0
    skipped: int = 0
    not_killed: tuple[str, ...] = field(default_factory=tuple)  # one line each: id and where

    @property
    def total(self) -> int:
        return self.killed + self.reviewed + self.skipped + len(self.not_killed)

    def describe(self) -> str:
        if self.total == 0:
            return f"{self.engine}: nothing needs judging"
        skipped = f", {self.skipped} skipped" if self.skipped else ""
        return (
            f"{self.engine}: {self.total} judged: {self.killed} killed, {self.reviewed} reviewed equivalent, "
            f"{len(self.not_killed)} not killed{skipped}"
        )


def judge(engine: str, results: Path, config: Path) -> Judged:
    """``engine``'s scoped results, judged against the reviews in ``config``; no file: none selected.

    Raises the engines' own input errors (mutation_io.InputError, and the sweep's ResultsError and
    ConfigError) where a file cannot be read."""
    if not results.exists():
        return Judged(engine)
    return {"catalogue": _catalogue, "mutmut": _mutmut, "sweep": _sweep}[engine](results, config)


def _catalogue(results: Path, config: Path) -> Judged:
    from mutation_engine_inputs import load_critical
    from mutation_model import Verdict

    judged = load_critical(results)
    alive = tuple(
        f"{m.id} ({m.file} {m.scope}): {m.status}" for m in judged if m.verdict is not Verdict.KILLED
    )
    return Judged("catalogue", killed=len(judged) - len(alive), not_killed=alive)


def _mutmut(results: Path, config: Path) -> Judged:
    from mutation_common import load_results
    from mutation_evaluation import EXCLUDED, KILLED
    from mutation_gate_config import equivalent_matches, load_gate_config

    reviews = load_gate_config(config).equivalents
    mutants = load_results(results, hint="guard-mutation run mutmut --changed-since REF").mutants
    killed = sum(m.status in KILLED for m in mutants)
    skipped = sum(m.status in EXCLUDED for m in mutants)
    rest = [m for m in mutants if m.status not in KILLED | EXCLUDED]
    reviewed = [m for m in rest if m.status == "survived" and any(equivalent_matches(e, m) for e in reviews)]
    alive = tuple(f"{m.name} ({m.file}:{m.line}): {m.status}" for m in rest if m not in reviewed)
    return Judged("mutmut", killed, len(reviewed), skipped, alive)


def _sweep(results: Path, config: Path) -> Judged:
    from mutation_model import KILLED, TIMEOUT
    from mutation_sweep.config import load
    from mutation_sweep.results import load as load_results
    from mutation_sweep.work_item import INVALID

    reviews = load(config).equivalents
    found = load_results(results, whole=False).results
    killed = sum(r.verdict in (KILLED, TIMEOUT) for r in found)
    skipped = sum(r.verdict == INVALID for r in found)
    rest = [r for r in found if r.verdict not in (KILLED, TIMEOUT, INVALID)]
    reviewed = [r for r in rest if any(e.matches(r.mutant) for e in reviews)]
    alive = tuple(
        f"{r.mutant.id} ({r.mutant.file}:{r.mutant.line} {r.mutant.operator}): {r.verdict}"
        for r in rest
        if r not in reviewed
    )
    return Judged("sweep", killed, len(reviewed), skipped, alive)


def markdown(change: str, verdicts: list[Judged]) -> str:
    """The proof of a change as a job's summary: what changed, each engine's count, what was not killed."""
    rows = [
        f"| {j.engine} | {j.total} | {j.killed} | {j.reviewed} | {len(j.not_killed)} | {j.skipped} |"
        for j in verdicts
    ]
    alive = [f"- `{line}`" for j in verdicts for line in j.not_killed]
    verdict = "**not killed: a finding**" if alive else "every selected mutant killed or reviewed"
    return "\n".join(
        [
            "## The proof of this change",
            "",
            change,
            "",
            "| engine | selected | killed | reviewed equivalent | not killed | skipped |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            "",
            verdict,
            *(["", *alive] if alive else []),
            "",
        ]
    )

"""The proof of a change: what each engine's scoped run came to, and its summary as Markdown.

A scoped run's results hold only the mutants the change selected, so they never go into the store (a part
never replaces a whole run there); each engine's lie in a folder of their own. Each engine's adapter
(``engines.py``) judges them: each selected mutant is killed, reviewed equivalent (the same
``[[reviewed]]`` entries the gate reads), skipped, or not killed; any not killed is a finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mutation_model import Record


@dataclass(frozen=True)
class Judged:
    engine: str
    killed: int = 0
    reviewed: int = 0
    skipped: int = 0
    not_killed: tuple[Record, ...] = field(default_factory=tuple)

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


def markdown(change: str, verdicts: list[Judged], alive: list[list[str]]) -> str:
    """The proof of a change as a job's summary: what changed, each engine's count, what was not killed
    (each as ``proof.shown`` says it: a line, its diff, and whether it reverses the change)."""
    rows = [
        f"| {j.engine} | {j.total} | {j.killed} | {j.reviewed} | {len(j.not_killed)} | {j.skipped} |"
        for j in verdicts
    ]
    verdict = "**not killed: a finding**" if alive else "every selected mutant killed or reviewed"
    shown = [f"```diff\n{chr(10).join(line[2:] for line in lines)}\n```" for lines in alive]
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
            *(["", *shown] if alive else []),
            "",
        ]
    )

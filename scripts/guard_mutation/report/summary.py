"""The Markdown summary (for ``$GITHUB_STEP_SUMMARY``): each engine's figures on a line of its own, never
one score over engines that count different things, then the findings and the reviewed mutants."""

from __future__ import annotations

import re

from ..judge import Judgement, Status
from .elements import order, sides


def markdown(judgement: Judgement, *, max_rows: int = 100) -> str:
    """At most ``max_rows`` findings and reviews each."""
    findings = judgement.findings
    lines = ["## Mutation testing", "", f"{len(findings)} finding(s).", ""]
    for tally in judgement.tallies:
        lines.append(f"- {_md(tally.describe())}")
        lines += [f"  - {_md(note)}" for note in tally.notes]
    lines.append("")
    if findings:
        lines += ["### Findings", "", *(f"- {_md(f)}" for f in findings[:max_rows])]
        lines += _more(len(findings), max_rows)
    reviewed = sorted((j for j in judgement.judged if j.status is Status.REVIEWED), key=order)
    if reviewed:
        lines += [
            "### Reviewed mutants",
            "",
            "| engine | mutant | where | change | review | reason |",
            "| --- | --- | --- | --- | ---: | --- |",
        ]
        for judged in reviewed[:max_rows]:
            mutant, review = judged.record.mutant, judged.review
            removed, added = (" ".join(" ".join(side).split()) for side in sides(mutant.diff))
            where = f"{mutant.file}:{mutant.line} {mutant.function}"
            cells = [mutant.engine, mutant.id, where, f"{removed} → {added}"]
            cells += [str(review.number), review.reason] if review else ["", ""]
            lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
        lines += _more(len(reviewed), max_rows)
    return "\n".join(lines)


def _more(count: int, max_rows: int) -> list[str]:
    extra = [f"\n… and {count - max_rows} more in the JSON and HTML reports."] if count > max_rows else []
    return [*extra, ""]


def _md(text: str) -> str:
    """Text as itself in Markdown: its punctuation escaped, on one line (table cells included)."""
    return re.sub(r"([\\`*_\[\]<>|])", r"\\\1", " ".join(text.split()))

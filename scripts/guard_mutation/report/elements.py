"""The report as mutation-testing-elements JSON (mutation-testing-report-schema, ``schemaVersion`` 1).

One row per judged mutant, under its file, the file's source read from the project. A row's status is
the gate's reading of the mutant, whichever engine made it: a reviewed or proven equivalent is Ignored
with its reason, a finding is Survived (NoCoverage where no test reached it) with the finding as its
reason. The rest of the page and the summary share these readings.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..judge import Judged, Judgement, Status
from ..model import INVALID, NO_TESTS, TIMEOUT, Mutant

SCHEMA_VERSION = "1"


def schema(judgement: Judgement, root: Path, *, min_score: float = 100.0) -> dict[str, Any]:
    """The JSON document; ``root`` is the project the mutants' files are relative to. A file that is
    gone (or outside ``root``) is left out with its mutants: the schema needs each file's source."""
    by_file: dict[str, list[Judged]] = {}
    for judged in judgement.judged:
        by_file.setdefault(judged.record.mutant.file, []).append(judged)
    files: dict[str, dict[str, Any]] = {}
    for path, judged_here in sorted(by_file.items()):
        source = _source(root, path)
        if source is not None:
            lines = source.splitlines()
            rows = [_row(j, lines) for j in sorted(judged_here, key=order)]
            files[path] = {"language": "python", "source": source, "mutants": rows}
    high = int(min_score)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "thresholds": {"high": high, "low": max(0, high - 20)},
        "files": files,
        "framework": {"name": "guard-mutation"},
        "engines": [
            {
                "engine": t.engine,
                "whole": t.whole,
                "score": t.score,
                "counts": {s.value: t.counts.get(s, 0) for s in Status},
            }
            for t in judgement.tallies
        ],
        "findings": judgement.findings,
    }


def order(judged: Judged) -> tuple[str, int, str, str]:
    mutant = judged.record.mutant
    return (mutant.file, mutant.line, mutant.engine, mutant.id)


def ident(mutant: Mutant) -> str:
    """Unique across engines: two engines may give the same id."""
    return f"{mutant.engine}:{mutant.id}"


def status_of(judged: Judged) -> str:
    verdict = judged.record.outcome.verdict
    if judged.status is Status.KILLED:
        return "Timeout" if verdict == TIMEOUT else "Killed"
    if judged.status in (Status.EQUIVALENT, Status.REVIEWED):
        return "Ignored"
    if verdict == INVALID:  # not counted, or a critical mutant that could not be judged
        return "CompileError"
    return "NoCoverage" if verdict == NO_TESTS else "Survived"


def reason_of(judged: Judged) -> str:
    """Why it has its status, in one line ("" for a kill with nothing to say)."""
    detail = judged.record.outcome.detail
    if judged.status is Status.FINDING:
        return judged.finding
    if judged.review is not None:
        return f"reviewed (review {judged.review.number}): {judged.review.reason}"
    if judged.status is Status.EQUIVALENT:
        return f"equivalent: {detail}"
    if judged.status is Status.NOT_COUNTED:
        return f"not counted, not a program: {detail}"
    return detail


def sides(diff: str) -> tuple[list[str], list[str]]:
    """The diff's removed lines and its added lines, without their signs."""
    body = [line for line in diff.splitlines() if not line.startswith(("---", "+++"))]
    return [line[1:] for line in body if line[:1] == "-"], [line[1:] for line in body if line[:1] == "+"]


def one_line(lines: Sequence[str], limit: int = 100) -> str:
    text = " ".join(" ".join(lines).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def description(judged: Judged) -> str:
    mutant = judged.record.mutant
    removed, added = sides(mutant.diff)
    change = f"{one_line(removed) or '(nothing)'} -> {one_line(added) or '(nothing)'}"
    return f"{mutant.function or '<module>'}: {change} [{mutant.engine}: {judged.record.outcome.verdict}]"


def _row(judged: Judged, lines: Sequence[str]) -> dict[str, Any]:
    mutant, outcome = judged.record.mutant, judged.record.outcome
    last = lines[mutant.end_line - 1] if 0 < mutant.end_line <= len(lines) else ""
    row: dict[str, Any] = {
        "id": ident(mutant),
        "mutatorName": mutant.operator,
        "replacement": textwrap.dedent("\n".join(sides(mutant.diff)[1])),
        "description": description(judged),
        # whole lines: the schema's end is exclusive, so it is the column after the last line's end
        "location": {
            "start": {"line": mutant.line, "column": 1},
            "end": {"line": mutant.end_line, "column": len(last) + 1},
        },
        "status": status_of(judged),
    }
    reason = reason_of(judged)
    if reason:
        row["statusReason"] = reason
    if outcome.killers:
        row["killedBy"] = list(outcome.killers)
    if outcome.seconds > 0:
        row["duration"] = round(outcome.seconds * 1000, 3)
    return row


def _source(root: Path, file: str) -> str | None:
    path = (root / file).resolve()
    if not path.is_relative_to(root.resolve()):
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None

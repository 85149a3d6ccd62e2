"""Where each engine's mutants sit: the line of a critical mutant, and which engines mutated each line.

Shared by the Markdown summary and the HTML page, so both count lines the same way.
"""

from __future__ import annotations

import re
from pathlib import Path

from mutation_evaluation import Evaluation
from mutation_io import repo_text
from mutation_model import SWEEP, JudgedMutant
from mutation_sweep.line_coverage import LineCoverage, line_coverage

ROOT = Path(__file__).resolve().parents[1]


def source_of(path: str) -> str:
    """A file's text, read only from inside the repository ("" for anything else)."""
    return repo_text(path, ROOT) or ""


def one_line(text: str, limit: int = 80) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


# the sweep made mutants there and set every one aside unrun: inside an annotation, or the same code
SET_ASIDE = "sweep, set aside"
ENGINES = ("sweep", "mutmut", "critical", SET_ASIDE)


def line_engines(ev: Evaluation) -> LineCoverage | None:
    """Which engines mutated each executable line of the package, when the sweep's results say which lines
    are executable."""
    sweep = ev.runs.get(SWEEP)
    if sweep is None:
        return None
    hits: list[tuple[str, str, int]] = [("sweep", r.mutant.file, r.mutant.line) for r in sweep.records]
    set_aside: dict[str, list[int]] = sweep.facts.get("set_aside", {})
    hits += [(SET_ASIDE, file, line) for file, lines in set_aside.items() for line in lines]
    hits += [("mutmut", r.mutant.file, r.mutant.line) for r in ev.mutmut.records]
    for crit in ev.critical or []:
        source = source_of(crit.file)
        hits.append(("critical", crit.file, critical_line(crit, source)))
    executable: dict[str, list[int]] = sweep.facts.get("executable", {})
    return line_coverage(executable, hits)


def coverage_lines(coverage: LineCoverage) -> list[str]:
    totals = coverage.totals()
    lines = [
        f"Executable lines of the package: {totals['executable']}; mutated by at least one engine: "
        f"{totals['any']} ({100 * totals['any'] / max(1, totals['executable']):.1f}%). By engine: "
        + ", ".join(f"{e} {totals.get(e, 0)}" for e in ENGINES)
        + "."
    ]
    only_aside = [
        (f, line)
        for f, per in coverage.engines.items()
        for line, engines in per.items()
        if engines == {SET_ASIDE}
    ]
    if only_aside:
        lines.append(
            f"{len(only_aside)} of those lines hold only mutants the sweep set aside without running "
            "(annotations and the imports and aliases only they use, or edits that compile to the same code)."
        )
    missing = {f: ls for f, ls in coverage.unmutated().items() if ls}
    if missing:
        lines.append(
            "Not mutated by any engine: "
            + "; ".join(f"{f}: {', '.join(map(str, ls))}" for f, ls in missing.items())
        )
    return lines


def critical_line(crit: JudgedMutant, source: str) -> int:
    """Where the harness's mutant is: its hunk header, else the first removed line found in the file."""
    diff_lines = crit.diff.splitlines()
    for index, text in enumerate(diff_lines):
        header = re.match(r"@@ -(\d+)", text)
        if header:
            # context lines before the first change shift the changed line down from the hunk start
            context = 0
            for following in diff_lines[index + 1 :]:
                if following.startswith(("-", "+")):
                    break
                context += 1
            return max(1, int(header.group(1)) + context)
    removed = [line[1:].strip() for line in diff_lines if line.startswith("-") and line[1:].strip()]
    for number, text in enumerate(source.splitlines(), start=1):
        if removed and text.strip() == removed[0]:
            return number
    return 1

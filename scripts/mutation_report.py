"""One report of mutmut's, the sweep's and the critical harness's verdicts: JSON, HTML and Markdown.

  --json FILE      mutation-testing-elements report (schemaVersion "1"; the format Stryker's HTML
                   viewer and dashboard read)
  --html FILE      a self-contained page (no script or style from the network) listing files, mutants
                   and statuses, with each mutant's diff
  --markdown FILE  a summary for $GITHUB_STEP_SUMMARY: totals, score, survivors, critical harness

Reviewed equivalent mutants appear as Ignored, with the reviewer's reason. Exit status: 0 written,
2 bad or missing input. The verdict itself is mutation_gate.py's job; this only reports it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mutation_engine_inputs import judge_runs, runs_from_files
from mutation_evaluation import Evaluation, judged, tally
from mutation_html import render_html
from mutation_io import InputError, add_input_arguments, check_output, read_toml
from mutation_lines import coverage_lines, critical_line, line_engines, one_line, source_of
from mutation_model import CORE_DELETIONS, CRITICAL, MUTMUT, SWEEP, JudgedMutant, Run, Verdict
from mutmut_coverage import analyse

# each engine's own word -> mutation-testing-elements status; a reviewed equivalent is "Ignored" whatever
# its engine said
SCHEMA_STATUS = {
    MUTMUT: {
        "killed": "Killed",
        "survived": "Survived",
        "no tests": "NoCoverage",
        "timeout": "Timeout",
        "caught by type check": "CompileError",
        "segfault": "Killed",
        "suspicious": "RuntimeError",
        "check was interrupted by user": "RuntimeError",
        "skipped": "Ignored",
        "not checked": "Pending",
    },
    SWEEP: {
        "killed": "Killed",
        "survived": "Survived",
        "timeout": "Timeout",
        "no tests": "NoCoverage",
        "invalid": "CompileError",
    },
    CRITICAL: {
        "killed": "Killed",
        "survived": "Survived",
        # the harness's timeout is a finding, not a kill: shown as what the gate counts it
        "timeout": "Survived",
        "invalid": "CompileError",
        "not-exercised": "NoCoverage",
        "wrong-reason": "Survived",
    },
    CORE_DELETIONS: {"killed": "Killed", "survived": "Survived", "invalid": "CompileError"},
}
STATUS_REASON = {
    "segfault": "the test process died by a signal (crash or CPU limit): counted as killed",
    "suspicious": "the test run ended with an unexpected exit code",
    "check was interrupted by user": "pytest reported an interrupted run (exit status 2)",
    "caught by type check": "the type checker rejects this mutant",
    "no tests": "no test executes this function",
    "invalid": "Cython refuses to translate this mutant of the compiled core: not a program",
}


def schema_report(ev: Evaluation) -> dict[str, Any]:
    """The mutation-testing-elements JSON: every engine's mutants, one row each, from the one model."""
    high = int(ev.config.min_score)
    files: dict[str, dict[str, Any]] = {}
    sources: dict[str, str] = ev.mutmut.facts.get("sources", {})
    for mutant in judged(ev):
        path = mutant.file or f"({mutant.engine})"
        if path not in files:
            source = sources.get(path)
            if source is None:
                source = source_of(path)
            files[path] = {"language": "python", "source": source or "", "mutants": []}
        files[path]["mutants"].append(schema_item(mutant, files[path]["source"]))
    return {
        "schemaVersion": "1",
        "thresholds": {"high": high, "low": max(0, high - 20)},
        "projectRoot": ".",
        "files": files,
        "framework": {"name": "mutmut", "version": ev.mutmut.facts.get("mutmut_version") or "unknown"},
        "config": {"min_score": ev.config.min_score, "scope": _scope(ev.mutmut)},
        # the count every other output prints, per engine
        "tally": [t.to_json() for t in tally(ev)],
    }


def _scope(run: Run) -> dict[str, Any]:
    return (
        {"kind": run.scope}
        if run.functions is None
        else {"kind": run.scope, "functions": list(run.functions)}
    )


def schema_item(mutant: JudgedMutant, source: str) -> dict[str, Any]:
    """One mutant as mutation-testing-elements writes it, whichever engine judged it."""
    line, end_line = mutant.line, mutant.end_line
    if mutant.engine == CRITICAL:
        # the harness names its edit by text, not place: found again in the source it was made in
        line = end_line = critical_line(mutant, source)
    equivalent = mutant.verdict is Verdict.EQUIVALENT
    before, after = one_line(mutant.original) or "(nothing)", one_line(mutant.replacement) or "(nothing)"
    item: dict[str, Any] = {
        "id": mutant.report_id,
        "mutatorName": mutant.operator,
        "replacement": mutant.replacement,
        "location": {
            "start": {"line": line, "column": mutant.column},
            "end": {"line": end_line, "column": mutant.end_column},
        },
        "status": "Ignored" if equivalent else SCHEMA_STATUS[mutant.engine][mutant.status],
        "description": f"{mutant.scope}: {before} -> {after} [{mutant.engine}: {mutant.status}]",
    }
    if equivalent:
        item["statusReason"] = f"equivalent: {mutant.note}"
    elif mutant.note or mutant.status in STATUS_REASON:
        item["statusReason"] = mutant.note or STATUS_REASON[mutant.status]
    if mutant.killed_by:
        item["killedBy"] = list(mutant.killed_by)
    if mutant.duration is not None:
        item["duration"] = round(mutant.duration * 1000, 3)
    return item


def visibility(pyproject: Path) -> str | None:
    """One line on how much of the package mutmut can mutate at all (the rest is the harness's to cover)."""
    if not pyproject.is_file():
        return None
    config = read_toml(pyproject).get("tool", {}).get("mutmut", {})
    paths = [Path(p) for p in config.get("source_paths", [])]
    if not paths or not all(p.exists() for p in paths):
        return None
    seen = analyse(paths, config, Path.cwd())
    return (
        f"mutmut saw {seen['visible_lines']} of {seen['function_body_lines']} function-body lines "
        f"({100 * seen['visible_fraction']:.1f}%); the critical harness holds the mutants for the critical "
        "lines among the rest, which `python scripts/mutmut_coverage.py` lists."
    )


# --- Markdown --------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def render_markdown(ev: Evaluation, *, max_rows: int = 50, seen: str | None = None) -> str:
    findings = ev.findings()
    lines = [
        "## Mutation testing",
        "",
        f"**Gate: {'PASSED' if not findings else 'FAILED'}** · {ev.score_text()} · scope: {ev.mutmut.scope}",
        "",
        "| engine | mutants | killed | reviewed equivalent | skipped | not killed | score |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(
            f"| {t.engine} | {t.total} | {t.killed} | {t.equivalent} | {t.skipped} | {t.not_killed} | "
            f"{'no score' if t.score is None else f'{t.score:.2f}%'} |"
            for t in tally(ev)
        ),
        "",
        *([seen, ""] if seen else []),
    ]
    if ev.survivors:
        lines += ["### Not killed", "", "| mutant | status | where | mutation |", "| --- | --- | --- | --- |"]
        for r in ev.survivors[:max_rows]:
            m = r.mutant
            change = f"`{_cell(m.original or '∅')}` → `{_cell(m.mutated or '∅')}`"
            lines.append(f"| `{m.id}` | {r.outcome.status} | {m.file}:{m.line} | {change} |")
        if len(ev.survivors) > max_rows:
            lines.append(f"| … {len(ev.survivors) - max_rows} more in the HTML report | | | |")
        lines.append("")
    other = [
        f
        for f in findings
        if not any(f.startswith(f"{r.outcome.status}: {r.mutant.id}") for r in ev.survivors)
    ]
    if other:
        lines += ["### Other findings", "", *(f"- {_cell(f)}" for f in other), ""]
    coverage = line_engines(ev)
    if ev.sweep is not None and coverage is not None:
        lines += [
            "### The sweep: every executable line",
            "",
            f"Set aside before running: {ev.runs[SWEEP].facts.get('skipped', {})}.",
            "",
            *coverage_lines(coverage),
            "",
        ]
    if ev.critical is not None:
        lines += [
            "### Critical mutants (harness)",
            "",
            "| id | verdict | file | scope | why |",
            "| --- | --- | --- | --- | --- |",
        ]
        for c in ev.critical:
            mark = "✅" if c.verdict is Verdict.KILLED else "❌"
            lines.append(f"| `{c.id}` | {mark} {c.status} | {c.file} | {_cell(c.scope)} | {_cell(c.note)} |")
        lines.append("")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mutation_report.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_input_arguments(parser, critical_help="critical harness JSON to include")
    parser.add_argument("--json", type=Path, help="write the mutation-testing-elements JSON here")
    parser.add_argument("--html", type=Path, help="write the standalone HTML page here")
    parser.add_argument("--markdown", type=Path, help="write the Markdown summary here ('-' for stdout)")
    parser.add_argument(
        "--pyproject",
        type=Path,
        default=Path("pyproject.toml"),
        help="its [tool.mutmut] says what mutmut saw",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not (args.json or args.html or args.markdown):
        print("mutation report: error: give at least one of --json, --html, --markdown", file=sys.stderr)
        return 2
    try:
        runs = runs_from_files(args.results, args.critical, args.sweep, args.core_deletions)
    except InputError as exc:
        print(f"mutation report: error: {exc}", file=sys.stderr)
        return 2
    return report(
        runs,
        args.config,
        json_out=args.json,
        html=args.html,
        markdown=args.markdown,
        pyproject=args.pyproject,
    )


def report(
    runs: Sequence[Run],
    config: Path,
    *,
    json_out: Path | None = None,
    html: Path | None = None,
    markdown: Path | None = None,
    pyproject: Path = Path("pyproject.toml"),
) -> int:
    """The report of ``runs`` (one per engine) in each format asked for; 0 written, 2 bad input."""
    try:
        for option, path in (("--json", json_out), ("--html", html), ("--markdown", markdown)):
            if path is not None and str(path) != "-":
                check_output(path, option)
        ev = judge_runs(runs, config)
        seen = visibility(pyproject)
    except InputError as exc:
        print(f"mutation report: error: {exc}", file=sys.stderr)
        return 2
    schema = schema_report(ev)
    outputs = [
        (json_out, json.dumps(schema, indent=2, ensure_ascii=False) + "\n"),
        (html, render_html(ev, schema, seen)),
        (markdown, render_markdown(ev, seen=seen)),
    ]
    for path, text in outputs:
        if path is None:
            continue
        if str(path) == "-":
            print(text)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

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

from mutation_common import (
    InputError,
    MutantRecord,
    add_input_arguments,
    check_output,
    load_gate_config,
    load_results,
    natural_key,
    read_toml,
)
from mutation_gate import Evaluation, attach_sweep, evaluate, load_critical, tally
from mutation_html import render_html
from mutation_lines import coverage_lines, critical_line, line_engines, one_line, source_of
from mutmut_coverage import analyse

# mutmut status -> mutation-testing-elements status
SCHEMA_STATUS = {
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
}
# critical harness verdict -> mutation-testing-elements status
CRITICAL_STATUS = {
    "killed": "Killed",
    "survived": "Survived",
    # the harness's timeout is a finding, not a kill: shown as what the gate counts it
    "timeout": "Survived",
    "invalid": "CompileError",
    "not-exercised": "NoCoverage",
    "wrong-reason": "Survived",
}
STATUS_REASON = {
    "segfault": "the test process died by a signal (crash or CPU limit): counted as killed",
    "suspicious": "the test run ended with an unexpected exit code",
    "check was interrupted by user": "pytest reported an interrupted run (exit status 2)",
    "caught by type check": "the type checker rejects this mutant",
    "no tests": "no test executes this function",
}


def schema_report(ev: Evaluation) -> dict[str, Any]:
    """The mutation-testing-elements JSON for mutmut's mutants plus the critical harness's."""
    high = int(ev.config.min_score)
    files: dict[str, dict[str, Any]] = {}

    def file_entry(path: str) -> dict[str, Any]:
        if path not in files:
            source = ev.results.sources.get(path)
            if source is None:
                source = source_of(path)
            files[path] = {"language": "python", "source": source or "", "mutants": []}
        return files[path]

    for mutant in sorted(ev.results.mutants, key=lambda m: natural_key(m.name)):
        entry = file_entry(mutant.file)
        equivalent = ev.equivalent_of.get(mutant.name)
        item: dict[str, Any] = {
            "id": mutant.name,
            "mutatorName": mutant.mutator,
            "replacement": mutant.replacement,
            "location": {
                "start": {"line": mutant.line, "column": mutant.column},
                "end": {"line": mutant.end_line, "column": mutant.end_column},
            },
            "status": "Ignored" if equivalent else SCHEMA_STATUS[mutant.status],
            "description": _describe(mutant),
        }
        reason = f"equivalent: {equivalent.reason}" if equivalent else STATUS_REASON.get(mutant.status)
        if reason:
            item["statusReason"] = reason
        if mutant.duration is not None:
            item["duration"] = round(mutant.duration * 1000, 3)
        entry["mutants"].append(item)
    for crit in ev.critical or []:
        entry = file_entry(crit.file or "(critical harness)")
        line = critical_line(crit, entry["source"])
        critical_item: dict[str, Any] = {
            "id": f"critical:{crit.id}",
            "mutatorName": "CriticalMutant",
            "replacement": _added_text(crit.diff),
            "location": {"start": {"line": line, "column": 1}, "end": {"line": line, "column": 1}},
            "status": CRITICAL_STATUS[crit.verdict],
            "description": f"critical mutant {crit.id} ({crit.scope}): {crit.why}".strip(),
            "statusReason": f"harness verdict: {crit.verdict}",
        }
        if crit.killed_by:
            critical_item["killedBy"] = [crit.killed_by]
        entry["mutants"].append(critical_item)
    if ev.sweep is not None:
        reviewed = {r.mutant.id: e for r, e in ev.sweep.equivalent}
        killed = {r.mutant.id for r in ev.sweep.killed}
        for result in sorted(
            [*ev.sweep.killed, *(r for r, _ in ev.sweep.equivalent), *ev.sweep.survivors],
            key=lambda r: r.mutant.id,
        ):
            m = result.mutant
            entry = file_entry(m.file)
            status = "Killed" if m.id in killed else "Ignored" if m.id in reviewed else "Survived"
            status = {"timeout": "Timeout", "no tests": "NoCoverage"}.get(result.verdict, status)
            sweep_item: dict[str, Any] = {
                "id": f"sweep:{m.id}",
                "mutatorName": m.operator,
                "replacement": m.mutated,
                "location": {
                    "start": {"line": m.line, "column": 1},
                    "end": {"line": m.end_line, "column": 1},
                },
                "status": status,
                "description": f"{m.scope}: {one_line(m.original)} -> {one_line(m.mutated) or '(nothing)'}",
                "statusReason": f"equivalent: {reviewed[m.id].reason}"
                if m.id in reviewed
                else f"sweep verdict: {result.verdict}",
            }
            if result.failed:
                sweep_item["killedBy"] = [result.failed]
            entry["mutants"].append(sweep_item)
    return {
        "schemaVersion": "1",
        "thresholds": {"high": high, "low": max(0, high - 20)},
        "projectRoot": ".",
        "files": files,
        "framework": {"name": "mutmut", "version": ev.results.mutmut_version or "unknown"},
        "config": {"min_score": ev.config.min_score, "scope": ev.results.scope},
        # the count every other output prints, per engine
        "tally": [t.to_json() for t in tally(ev)],
    }


def _describe(mutant: MutantRecord) -> str:
    original = mutant.original or "(nothing)"
    replacement = mutant.replacement or "(nothing)"
    return f"{mutant.parsed.qualname}: {original!s} -> {replacement!s} [{mutant.status}]"


def _added_text(diff: str) -> str:
    added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return "\n".join(line.strip() for line in added)


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
        f"**Gate: {'PASSED' if not findings else 'FAILED'}** · {ev.score_text()} "
        f"· scope: {ev.results.scope.get('kind', 'full')}",
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
        for m in ev.survivors[:max_rows]:
            change = f"`{_cell(m.original or '∅')}` → `{_cell(m.replacement or '∅')}`"
            lines.append(f"| `{m.name}` | {m.status} | {m.file}:{m.line} | {change} |")
        if len(ev.survivors) > max_rows:
            lines.append(f"| … {len(ev.survivors) - max_rows} more in the HTML report | | | |")
        lines.append("")
    other = [f for f in findings if not any(f.startswith(f"{m.status}: {m.name}") for m in ev.survivors)]
    if other:
        lines += ["### Other findings", "", *(f"- {_cell(f)}" for f in other), ""]
    coverage = line_engines(ev)
    if ev.sweep is not None and coverage is not None:
        lines += [
            "### The sweep: every executable line",
            "",
            f"Set aside before running: {ev.sweep_results.skipped if ev.sweep_results else {}}.",
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
            mark = "✅" if c.verdict == "killed" else "❌"
            lines.append(f"| `{c.id}` | {mark} {c.verdict} | {c.file} | {_cell(c.scope)} | {_cell(c.why)} |")
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
        for option, path in (("--json", args.json), ("--html", args.html), ("--markdown", args.markdown)):
            if path is not None and str(path) != "-":
                check_output(path, option)
        results = load_results(args.results, hint="python scripts/mutation_run.py run")
        ev = evaluate(
            results, load_gate_config(args.config), load_critical(args.critical) if args.critical else None
        )
        if args.sweep:
            attach_sweep(ev, args.sweep, args.config)
        seen = visibility(args.pyproject)
    except InputError as exc:
        print(f"mutation report: error: {exc}", file=sys.stderr)
        return 2
    report = schema_report(ev)
    outputs = [
        (args.json, json.dumps(report, indent=2, ensure_ascii=False) + "\n"),
        (args.html, render_html(ev, report, seen)),
        (args.markdown, render_markdown(ev, seen=seen)),
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

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
import html
import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mutation_common import (
    InputError,
    MutantRecord,
    add_input_arguments,
    load_gate_config,
    load_results,
    natural_key,
    read_toml,
    repo_text,
)
from mutation_gate import CriticalMutant, Evaluation, attach_sweep, evaluate, load_critical
from mutation_sweep.tools.line_engines import LineCoverage, line_coverage
from mutmut_coverage import analyse

ROOT = Path(__file__).resolve().parents[1]

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
    "timeout": "Timeout",
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
                source = repo_text(path, ROOT)
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
        line = _critical_line(crit, entry["source"])
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
                "description": f"{m.scope}: {_one_line(m.original)} -> {_one_line(m.mutated) or '(nothing)'}",
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
    }


def _one_line(text: str, limit: int = 80) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


# the sweep made mutants there and set every one aside unrun: inside an annotation, or the same code
SET_ASIDE = "sweep, set aside"
ENGINES = ("sweep", "mutmut", "critical", SET_ASIDE)


def line_engines(ev: Evaluation) -> LineCoverage | None:
    """Which engines mutated each executable line of the package, when the sweep's results say which lines
    are executable."""
    if ev.sweep_results is None:
        return None
    hits: list[tuple[str, str, int]] = [
        ("sweep", r.mutant.file, r.mutant.line) for r in ev.sweep_results.results
    ]
    hits += [(SET_ASIDE, file, line) for file, lines in ev.sweep_results.set_aside.items() for line in lines]
    hits += [("mutmut", m.file, m.line) for m in ev.results.mutants]
    for crit in ev.critical or []:
        source = repo_text(crit.file, ROOT) or ""
        hits.append(("critical", crit.file, _critical_line(crit, source)))
    return line_coverage(ev.sweep_results.executable, hits)


def _coverage_lines(coverage: LineCoverage) -> list[str]:
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


def _describe(mutant: MutantRecord) -> str:
    original = mutant.original or "(nothing)"
    replacement = mutant.replacement or "(nothing)"
    return f"{mutant.parsed.qualname}: {original!s} -> {replacement!s} [{mutant.status}]"


def _added_text(diff: str) -> str:
    added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return "\n".join(line.strip() for line in added)


def _critical_line(crit: CriticalMutant, source: str) -> int:
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


# --- HTML ------------------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em}table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}pre{margin:0;font-size:12px}code{font-size:12px}
.status{font-weight:600;padding:0 .4em;border-radius:3px;white-space:nowrap}
.Killed{background:#d4f4d4}.Survived{background:#f8c9c9}.NoCoverage{background:#fbe3b5}
.Timeout{background:#d4e4f8}.Ignored{background:#e6e6e6}.CompileError,.RuntimeError{background:#efd9f5}
.Pending{background:#fff}.verdict-pass{color:#1a7f1a}.verdict-fail{color:#b00020}
"""
_JS = """
document.addEventListener('DOMContentLoaded',function(){
 var rows=document.querySelectorAll('tr.mutant');
 document.getElementById('mutant-count').textContent=rows.length+' mutants listed';
 var box=document.getElementById('only-open');
 box.addEventListener('change',function(){
  document.querySelectorAll('tr.mutant').forEach(function(r){
   r.style.display=(box.checked&&/Killed|Timeout|Ignored/.test(r.dataset.status))?'none':'';});});});
"""


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


def render_html(ev: Evaluation, report: dict[str, Any], seen: str | None = None) -> str:
    e = html.escape
    counts = Counter(m["status"] for f in report["files"].values() for m in f["mutants"])
    findings = ev.findings()
    verdict = (
        '<p class="verdict-pass" id="verdict">Gate: PASSED</p>'
        if not findings
        else f'<p class="verdict-fail" id="verdict">Gate: FAILED ({len(findings)} finding(s))</p>'
    )
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>guard_lib mutation report</title>",
        f"<style>{_CSS}</style><script>{_JS}</script></head><body>",
        "<h1>guard_lib mutation report</h1>",
        verdict,
        f"<p id='score'>Mutation {e(ev.score_text())}; {len(ev.killed)} killed of {ev.counted} counted</p>",
        "<table id='totals'><tr><th>status</th><th>mutants</th></tr>",
        *(
            f"<tr><td><span class='status {e(s)}'>{e(s)}</span></td><td>{n}</td></tr>"
            for s, n in sorted(counts.items())
        ),
        "</table>",
        *([f"<p id='visibility'>{e(seen)}</p>"] if seen else []),
        *_html_sweep(ev),
        "<p id='mutant-count'></p>",
        "<label><input type='checkbox' id='only-open'> hide killed, timed-out and ignored mutants</label>",
    ]
    if findings:
        parts.append("<h2>Findings</h2><ul id='findings'>")
        parts += [f"<li>{e(f)}</li>" for f in findings]
        parts.append("</ul>")
    for path, entry in sorted(report["files"].items()):
        parts.append(f"<h2 class='file'>{e(path)}</h2>")
        parts.append(
            "<table class='mutants'><tr><th>status</th><th>mutant</th><th>line</th>"
            "<th>mutation</th><th>diff</th></tr>"
        )
        diffs = _diffs(ev)
        for m in sorted(entry["mutants"], key=lambda m: (m["location"]["start"]["line"], m["id"])):
            status = m["status"]
            reason = f"<br><small>{e(m['statusReason'])}</small>" if m.get("statusReason") else ""
            parts.append(
                f"<tr class='mutant' data-status='{e(status)}' id='{e(m['id'])}'>"
                f"<td><span class='status {e(status)}'>{e(status)}</span>{reason}</td>"
                f"<td><code>{e(m['id'])}</code></td><td>{m['location']['start']['line']}</td>"
                f"<td>{e(m.get('description', ''))}</td>"
                f"<td><pre>{e(diffs.get(m['id'], ''))}</pre></td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _html_sweep(ev: Evaluation) -> list[str]:
    e = html.escape
    coverage = line_engines(ev)
    if ev.sweep is None or coverage is None:
        return []
    j = ev.sweep
    parts = [
        "<h2>Every executable line</h2>",
        f"<p id='sweep'>Sweep: {len(j.killed)} killed, {len(j.equivalent)} reviewed equivalent, "
        f"{len(j.survivors)} not killed.</p>",
        *(f"<p class='lines'>{e(line)}</p>" for line in _coverage_lines(coverage)),
        "<table id='line-engines'><tr><th>file</th><th>executable lines</th><th>sweep</th><th>mutmut</th>"
        "<th>critical</th><th>set aside</th><th>any engine</th></tr>",
    ]
    for path, lines in sorted(coverage.executable.items()):
        per = coverage.engines.get(path, {})

        def count(engine: str | None, lines: list[int] = lines, per: dict[int, set[str]] = per) -> int:
            return sum(1 for ln in lines if (per.get(ln) if engine is None else engine in per.get(ln, set())))

        parts.append(
            f"<tr><td>{e(path)}</td><td>{len(lines)}</td><td>{count('sweep')}</td><td>{count('mutmut')}</td>"
            f"<td>{count('critical')}</td><td>{count(SET_ASIDE)}</td><td>{count(None)}</td></tr>"
        )
    parts.append("</table>")
    for path, lines in sorted(coverage.executable.items()):
        per = coverage.engines.get(path, {})
        source = (repo_text(path, ROOT) or "").splitlines()
        parts.append(f"<details class='line-engines'><summary>{e(path)}: engines per line</summary><table>")
        parts.append("<tr><th>line</th><th>engines</th><th>source</th></tr>")
        for ln in lines:
            engines = ", ".join(sorted(per.get(ln, set()))) or "none"
            text = source[ln - 1].strip() if 0 < ln <= len(source) else ""
            parts.append(
                f"<tr><td>{ln}</td><td>{e(engines)}</td><td><code>{e(_one_line(text))}</code></td></tr>"
            )
        parts.append("</table></details>")
    if j.equivalent:
        parts.append("<h3>Reviewed equivalent (sweep)</h3><ul id='sweep-equivalents'>")
        parts += [
            f"<li><code>{e(r.mutant.file)}:{r.mutant.line}</code> {e(r.mutant.operator)}: "
            f"<code>{e(_one_line(r.mutant.original))}</code> → <code>{e(_one_line(r.mutant.mutated))}</code>"
            f" — {e(entry.reason)}</li>"
            for r, entry in j.equivalent
        ]
        parts.append("</ul>")
    return parts


def _diffs(ev: Evaluation) -> dict[str, str]:
    found = {m.name: m.diff for m in ev.results.mutants}
    found.update({f"critical:{c.id}": c.diff for c in ev.critical or []})
    return found


# --- Markdown --------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def render_markdown(ev: Evaluation, *, max_rows: int = 50, seen: str | None = None) -> str:
    counts = Counter(m.status for m in ev.results.mutants)
    findings = ev.findings()
    lines = [
        "## Mutation testing",
        "",
        f"**Gate: {'PASSED' if not findings else 'FAILED'}** · {ev.score_text()} "
        f"· scope: {ev.results.scope.get('kind', 'full')}",
        "",
        "| status | mutants |",
        "| --- | ---: |",
        *(f"| {status} | {n} |" for status, n in sorted(counts.items())),
        f"| equivalent (reviewed) | {len(ev.equivalent_of)} |",
        f"| **total** | **{len(ev.results.mutants)}** |",
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
        j = ev.sweep
        lines += [
            "### The sweep: every executable line",
            "",
            f"{len(j.killed)} killed, {len(j.equivalent)} reviewed equivalent, {len(j.survivors)} not killed"
            f" (skipped before running: {ev.sweep_results.skipped if ev.sweep_results else {}}).",
            "",
            *_coverage_lines(coverage),
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

"""The run's table, kill matrix, JSON and JUnit XML."""

from __future__ import annotations

import re
import shutil
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from mutation_model import KILLED

from .model import EXIT_OK, NOT_EXERCISED, VERDICTS, Result, RunReport
from .outcomes import entry_matches


def table_text(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None = None) -> str:
    """Columns padded to line up; with ``width``, each line is clipped to it (the JSON keeps it all)."""
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    lines = [
        "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [headers, [("-" * w) for w in widths], *rows]
    ]
    return "\n".join(fit(line, width) for line in lines)


def fit(line: str, width: int | None) -> str:
    return line if width is None or len(line) <= width else line[: max(1, width - 1)] + "…"


def wrapped(text: str, width: int | None) -> str:
    """Prose within ``width``: wrapped at spaces, a word longer than a line clipped."""
    if width is None:
        return text
    lines = []
    for line in text.splitlines():
        pieces = textwrap.wrap(line, width, subsequent_indent="    ", break_long_words=False)
        lines += [fit(piece, width) for piece in pieces or [""]]
    return "\n".join(lines)


def terminal_width(verbose: bool) -> int | None:
    """Tables are clipped to the terminal (COLUMNS, else 100 off a terminal); not at all when verbose."""
    return None if verbose else max(40, shutil.get_terminal_size((100, 24)).columns)


def _note(result: Result, room: int | None = None) -> str:
    """What the tests did; a kill names its failing tests first, then as much of the first failure's
    message as ``room`` leaves (the test names are never cut for it)."""
    if result.verdict == KILLED:
        names = ", ".join(result.failed_tests)
        limit = 160 if room is None else room - len(names) - len(" -- ")
        message = result.first_failure[1] if result.first_failure and limit >= 10 else ""
        return names + (f" -- {_clip(message, limit)}" if message else "")
    if result.missing_killed_by:
        return f"should have failed and did not: {', '.join(result.missing_killed_by)}"
    if result.verdict == NOT_EXERCISED:
        return f"all killed_by skipped: {', '.join(result.skipped_killed_by)}"
    return result.detail or ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _finding_details(result: Result, width: int | None = None) -> str:
    spec = result.mutant.spec
    lines = [
        f"=== {spec.id}: {result.verdict} ===",
        f"file: {spec.file}   scope: {spec.scope}",
        f"why: {spec.why}",
        f"killed_by: {', '.join(spec.killed_by)}",
    ]
    if result.missing_killed_by:
        lines.append(f"should have failed and did not: {', '.join(result.missing_killed_by)}")
    if result.failed_tests:
        lines.append(f"tests that failed instead: {', '.join(result.failed_tests)}")
    if result.first_failure:
        lines.append(f"first failure: {result.first_failure[0]}: {result.first_failure[1]}")
    if result.detail:
        lines.append(f"detail: {result.detail}")
    diff = "".join(fit(line, width) + "\n" for line in result.mutant.diff.splitlines())
    return wrapped("\n".join(lines), width) + "\n" + (diff if width is not None else result.mutant.diff)


def kill_matrix(results: Sequence[Result], width: int | None = None) -> str:
    failed = {t for r in results for t in r.failed_tests}
    # A killed_by entry that matched no failing node id still gets a row, to show its "-".
    unmatched = {
        e for r in results for e in r.missing_killed_by if not any(entry_matches(e, t) for t in failed)
    }
    legend = [fit(f"  {i:>3}: {r.mutant.spec.id}", width) for i, r in enumerate(results, start=1)]
    # one character per mutant, in legend order, then the test: the grid stays narrow, the name is clipped
    rows = [["".join(_matrix_cell(test, r) for r in results), test] for test in sorted(failed | unmatched)]
    ruler = "".join(str(i % 10) for i in range(1, len(results) + 1))
    key = "K = killed_by test failed, x = other test failed, - = killed_by test did not fail, . = passed"
    return "\n".join(
        [fit("Kill matrix (" + key + "):", width), *legend, table_text([ruler, "test"], rows, width)]
    )


def _matrix_cell(test: str, result: Result) -> str:
    if test in result.failed_tests:
        return "K" if any(entry_matches(e, test) for e in result.mutant.spec.killed_by) else "x"
    return "-" if any(entry_matches(e, test) for e in result.missing_killed_by) else "."


def render(report: RunReport, width: int | None = None) -> str:
    headers = ["mutant", "verdict", "time", "tests"]
    rows = [
        [r.mutant.spec.id + (" (canary)" if r.canary else ""), r.verdict, f"{r.seconds:.1f}s"]
        for r in report.results
    ]
    lead = sum(max(len(row[i]) for row in [headers, *rows]) + 2 for i in range(3))
    room = None if width is None else width - lead
    rows = [[*row, _note(r, room)] for row, r in zip(rows, report.results, strict=True)]
    parts = [table_text(headers, rows, width)]
    parts += [_finding_details(r, width) for r in report.results if r.is_finding]
    if report.full:
        parts.append(kill_matrix(report.results, width))
    counts = {v: sum(r.verdict == v for r in report.results) for v in VERDICTS}
    summary = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    status = "OK" if report.exit_code == EXIT_OK else "FAIL"
    parts.append(
        wrapped(
            f"critical mutants ({report.runtime} runtime, {report.engine} engine): {len(report.results)} "
            f"run, {summary}{_reused(report)} in {report.seconds:.1f}s -> {status} (exit {report.exit_code})",
            width,
        )
    )
    return "\n\n".join(parts)


def _reused(report: RunReport) -> str:
    reused = sum(r.reused for r in report.results)
    return f" ({reused} of them reused from an earlier run)" if reused else ""


def report_json(report: RunReport) -> dict[str, object]:
    totals: dict[str, int] = {v: sum(r.verdict == v for r in report.results) for v in VERDICTS}
    totals["mutants"] = len(report.results)
    totals["findings"] = sum(r.is_finding for r in report.results)
    totals["reused"] = sum(r.reused for r in report.results)
    data: dict[str, object] = {
        "engine": report.engine,
        "warm_runs": report.warm_runs,
        "config": str(report.config),
        "runtime": report.runtime,
        "full": report.full,
        "exit_code": report.exit_code,
        "seconds": round(report.seconds, 3),
        "totals": totals,
        "mutants": [_result_json(r) for r in report.results],
    }
    if report.full:
        data["kill_matrix"] = {r.mutant.spec.id: r.failed_tests for r in report.results}
    return data


def _result_json(result: Result) -> dict[str, object]:
    spec = result.mutant.spec
    return {
        "id": spec.id,
        "key": spec.key,
        "verdict": result.verdict,
        "finding": result.is_finding,
        "canary": result.canary,
        "file": spec.file,
        "scope": spec.scope,
        "why": spec.why,
        "killed_by": list(spec.killed_by),
        "failed_tests": result.failed_tests,
        "missing_killed_by": result.missing_killed_by,
        "skipped_killed_by": result.skipped_killed_by,
        "first_failure": result.first_failure[1] if result.first_failure else None,
        "first_failure_test": result.first_failure[0] if result.first_failure else None,
        "detail": result.detail,
        "diff": result.mutant.diff,
        "seconds": round(result.seconds, 3),
        "engine": result.engine,
        "depends": result.depends,
        "reused": result.reused,
    }


def report_junit(report: RunReport) -> ET.ElementTree[ET.Element]:
    findings = sum(r.is_finding for r in report.results)
    suites = ET.Element("testsuites")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"critical-mutants.{report.runtime}",
        tests=str(len(report.results)),
        failures=str(findings),
        errors="0",
        skipped="0",
        time=f"{report.seconds:.3f}",
    )
    for result in report.results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=_xml_text(f"critical_mutants.{result.mutant.spec.file}"),
            name=result.mutant.spec.id,
            time=f"{result.seconds:.3f}",
        )
        if result.is_finding:
            failure = ET.SubElement(
                case, "failure", message=_xml_text(f"{result.verdict}: {_note(result)}"), type=result.verdict
            )
            failure.text = _xml_text(_finding_details(result))
    return ET.ElementTree(suites)


# XML 1.0 cannot hold these at all, escaped or not; test output can (a NUL in an assertion message).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)

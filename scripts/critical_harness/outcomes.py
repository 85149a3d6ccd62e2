"""Read what pytest reported for each test, and match ``killed_by`` entries to node ids."""

from __future__ import annotations

import json
from pathlib import Path

from .model import TestRun

_OUTCOME_RANK = {"passed": 0, "xfailed": 1, "skipped": 2, "failed": 3}


def _record_report(run: TestRun, record: dict[str, object]) -> None:
    nodeid = str(record["nodeid"])
    outcome = str(record["outcome"])
    if outcome == "skipped" and record.get("xfail"):
        outcome = "xfailed"
    if nodeid not in run.outcomes:
        run.order.append(nodeid)
        run.outcomes[nodeid] = outcome
    elif _OUTCOME_RANK[outcome] > _OUTCOME_RANK[run.outcomes[nodeid]]:
        run.outcomes[nodeid] = outcome
    else:
        return
    run.messages[nodeid] = str(record.get("message") or "")


def _apply_record(run: TestRun, record: dict[str, object], started: list[str]) -> bool:
    event = record.get("event")
    if event == "start":
        started.append(str(record["nodeid"]))
    elif event == "report":
        _record_report(run, record)
    elif event == "collect_error":
        run.collect_errors.append(f"{record['nodeid'] or '<session>'}: {record['message']}")
    elif event == "calls":
        calls = record.get("calls")
        run.calls[str(record["nodeid"])] = [str(c) for c in calls] if isinstance(calls, list) else []
    elif event == "collected":
        nodeids = record.get("nodeids")
        run.collected = [str(n) for n in nodeids] if isinstance(nodeids, list) else []
    elif event == "package":
        files = record.get("files")
        run.package_files = [str(f) for f in files] if isinstance(files, list) else []
        run.package_error = str(record["error"]) if record.get("error") else None
        return True
    return False


def parse_outcomes(path: Path, returncode: int | None, output: str) -> TestRun:
    run = TestRun(returncode, output)
    started: list[str] = []
    finished = False
    if path.exists():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
            finished = _apply_record(run, record, started) or finished
    if not finished and returncode is not None and started:
        # The process died inside a test (os._exit, a crash): that test is the one that failed.
        crashed = started[-1]
        if crashed not in run.outcomes:
            run.order.append(crashed)
        run.outcomes[crashed] = "failed"
        run.messages[crashed] = f"test process died (exit status {returncode})"
    return run


def entry_status(entry: str, outcomes: dict[str, str]) -> str:
    """failed / skipped / passed / absent for one killed_by entry (exact or `[`-parametrized match)."""
    matched = [o for nodeid, o in outcomes.items() if entry_matches(entry, nodeid)]
    if not matched:
        return "absent"
    if "failed" in matched:
        return "failed"
    if all(o == "skipped" for o in matched):
        return "skipped"
    return "passed"


def entry_matches(entry: str, nodeid: str) -> bool:
    return nodeid == entry or nodeid.startswith(entry + "[")


def merge_runs(runs: list[TestRun]) -> TestRun:
    """One record of several runs of disjoint tests: the first failure's status, every outcome."""
    merged = TestRun(next((r.returncode for r in runs if r.returncode != 0), runs[0].returncode), "")
    merged.output = "\n".join(r.output for r in runs)
    for run in runs:
        merged.outcomes |= run.outcomes
        merged.messages |= run.messages
        merged.order += run.order
        merged.collect_errors += run.collect_errors
        merged.calls |= run.calls
        if merged.collected is None:
            merged.collected = run.collected
        if merged.package_files is None:
            merged.package_files, merged.package_error = run.package_files, run.package_error
    return merged

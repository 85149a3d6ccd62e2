"""What one pytest run reported, read from the plugin's records (``plugin.py``), and how a ``killed_by``
entry names tests: exactly, or as the prefix of parametrized ids (``test_a`` matches ``test_a[x]``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_RANK = {"passed": 0, "xfailed": 1, "skipped": 2, "failed": 3}


@dataclass
class TestRun:
    __test__ = False  # not pytest's to collect
    returncode: int | None  # None: killed at the time limit
    output: str
    outcomes: dict[str, str] = field(default_factory=dict)  # node id -> passed/failed/skipped/xfailed
    messages: dict[str, str] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    collect_errors: list[str] = field(default_factory=list)
    package_files: list[str] | None = None
    package_error: str | None = None
    collected: list[str] | None = None  # every node id collected, where the run selected some
    hits: dict[str, list[str]] = field(default_factory=dict)  # node id -> "module:number" it reached
    durations: dict[str, float] = field(default_factory=dict)  # node id -> seconds, its phases together
    spawned: list[str] = field(default_factory=list)  # the tests that started a process (the map is blind)

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def failed(self) -> list[str]:
        return [nodeid for nodeid in self.order if self.outcomes[nodeid] == "failed"]

    def first_failure(self) -> str:
        """The first failed test and its message, on one line; "" when none failed."""
        failed = self.failed()
        return f"{failed[0]}: {self.messages.get(failed[0], '')}".rstrip(": ") if failed else ""

    def files_quickest_first(self) -> tuple[str, ...]:
        """The test files that ran, the quickest first: where a mutant of what runs at import dies soonest."""
        took: dict[str, float] = {}
        for nodeid in self.order:
            file = nodeid.split("::")[0]
            took[file] = took.get(file, 0.0) + self.durations.get(nodeid, 0.0)
        return tuple(sorted(took, key=took.__getitem__))


def _apply(run: TestRun, record: dict[str, Any], started: list[str]) -> None:
    event, nodeid = record.get("event"), str(record.get("nodeid") or "")
    if event == "start":
        started.append(nodeid)
    elif event == "report":
        run.durations[nodeid] = run.durations.get(nodeid, 0.0) + float(record.get("duration") or 0.0)
        outcome = (
            "xfailed" if record["outcome"] == "skipped" and record.get("xfail") else str(record["outcome"])
        )
        if nodeid not in run.outcomes:
            run.order.append(nodeid)
        if _RANK[outcome] > _RANK.get(run.outcomes.get(nodeid, ""), -1):
            run.outcomes[nodeid], run.messages[nodeid] = outcome, str(record.get("message") or "")
    elif event == "collect_error":
        run.collect_errors.append(f"{nodeid or '<session>'}: {record.get('message')}")
    elif event == "hits":
        run.hits[nodeid] = [str(c) for c in record.get("hits") or []]
        run.spawned += [nodeid] if record.get("spawned") else []
    elif event == "collected":
        run.collected = [str(n) for n in record.get("nodeids") or []]
    elif event == "package":
        run.package_files = [str(f) for f in record.get("files") or []]
        run.package_error = str(record["error"]) if record.get("error") else None


def parse(path: Path, returncode: int | None, output: str) -> TestRun:
    run, started = TestRun(returncode, output), list[str]()
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if path.exists() else ():
        try:
            _apply(run, json.loads(line), started)
        except json.JSONDecodeError:
            continue  # a line cut short by a kill
    if run.package_files is None and returncode is not None and started:
        # The process died inside a test (os._exit, a crash): that test is the one that failed.
        crashed = started[-1]
        run.order += [] if crashed in run.outcomes else [crashed]
        run.outcomes[crashed], run.messages[crashed] = (
            "failed",
            f"test process died (exit status {returncode})",
        )
    return run


def entry_matches(entry: str, nodeid: str) -> bool:
    return nodeid == entry or nodeid.startswith(entry + "[")


def entry_status(entry: str, outcomes: dict[str, str]) -> str:
    """failed / skipped / passed / absent for one killed_by entry."""
    matched = [o for nodeid, o in outcomes.items() if entry_matches(entry, nodeid)]
    if not matched or "failed" in matched:
        return "failed" if matched else "absent"
    return "skipped" if all(o == "skipped" for o in matched) else "passed"


def merge(runs: list[TestRun]) -> TestRun:
    """One record of several runs of disjoint tests (every one of which collects every test)."""
    merged = TestRun(next((r.returncode for r in runs if r.returncode != 0), runs[0].returncode), "")
    for run in runs:
        merged.output += run.output
        merged.outcomes |= run.outcomes
        merged.messages |= run.messages
        merged.order += run.order
        merged.collect_errors += run.collect_errors
        merged.hits |= run.hits
        merged.durations |= run.durations
        merged.spawned += run.spawned
        merged.collected = merged.collected or run.collected
        merged.package_files = merged.package_files or run.package_files
    return merged

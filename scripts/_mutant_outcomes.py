"""pytest plugin and import probe used by ``critical_mutants.py`` inside its temporary project copies.

The harness needs each test's node id and outcome exactly as pytest itself reports them; JUnit XML
loses the node id (classname/name are a lossy rewrite), so this plugin appends one JSON line per
report to the file named by ``CRITICAL_MUTANTS_OUTCOMES``.  It also records which file the mutated
package was really imported from, so the harness can refuse to run when an installed copy (for
example an editable install loaded early through a ``pytest11`` entry point) shadows the mutated one.

Run as ``python -m _mutant_outcomes MODULE...`` it imports the modules, which is how the harness
tells a mutant that breaks at import time (verdict ``invalid``) from one that tests must kill.

Both modes start a watchdog thread: the harness runs children in their own session so that it can
kill their whole process group, which also means that a SIGKILLed harness would leave a hung mutant
spinning forever; the watchdog ends the child once its parent is gone.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
import time
from collections.abc import Generator
from pathlib import Path
from types import FrameType, ModuleType

import pytest

OUTCOMES_ENV = "CRITICAL_MUTANTS_OUTCOMES"
PACKAGE_ENV = "CRITICAL_MUTANTS_PACKAGE"
PARENT_ENV = "CRITICAL_MUTANTS_PARENT_PID"
# A JSON list of killed_by entries: once every one has a failed test, the verdict is decided and the
# session stops, as -x would (exit status 1), instead of running the rest of a parametrized test.
DECIDED_ENV = "CRITICAL_MUTANTS_DECIDED_BY"
# A JSON list of killed_by entries: only their tests run, and every collected node id is recorded, so a
# baseline can run what verdicts rest on and still tell a killed_by entry that names no test.
SELECT_ENV = "CRITICAL_MUTANTS_SELECT"
# "1": record, for each test, which of the package's functions it calls ("file:qualname"), so that a later
# run can start a parametrized test with the cases that reach a mutant.
CALLS_ENV = "CRITICAL_MUTANTS_RECORD_CALLS"
# A JSON list of node ids: each runs before the other cases of its own test function, nothing else moves.
FIRST_ENV = "CRITICAL_MUTANTS_FIRST"
_ORPHAN_EXIT = 70


def _emit(record: dict[str, object]) -> None:
    path = os.environ.get(OUTCOMES_ENV)
    if not path:
        return
    # One open per record: a process killed mid-run still leaves every finished line behind.
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def _watch_harness(harness: int) -> None:
    while _alive(harness):
        time.sleep(0.5)
    os._exit(_ORPHAN_EXIT)


def start_watchdog() -> None:
    """End this process once the harness that started it is gone.

    Watching the harness itself, not this process's parent, also covers a harness killed before this
    process got this far: its parent is then already someone else, and it must not run on alone.
    """
    harness = os.environ.get(PARENT_ENV, "")
    if not harness.isdigit():
        return
    if not _alive(int(harness)):
        os._exit(_ORPHAN_EXIT)
    threading.Thread(target=_watch_harness, args=(int(harness),), daemon=True).start()


def _last_error_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    if errors:
        return errors[-1]
    return lines[0] if lines else ""


def _message(longrepr: object) -> str:
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple):
        # A skip's longrepr is (path, lineno, reason).
        return str(longrepr[-1]).strip()
    crash = getattr(longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    if isinstance(message, str) and message.strip():
        return message.strip().splitlines()[0]
    return _last_error_line(str(longrepr))


def _module_location(module: ModuleType) -> list[str]:
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        return [file]
    return [str(entry) for entry in getattr(module, "__path__", [])]


def entry_matches(entry: str, nodeid: str) -> bool:
    """outcomes.entry_matches, restated: this module runs on its own inside a project copy."""
    return nodeid == entry or nodeid.startswith(entry + "[")


class _Decider:
    """Stops the session once every killed_by entry has failed: a kill needs no more evidence."""

    def __init__(self, session: pytest.Session, entries: list[str]) -> None:
        self.session = session
        self.pending = set(entries)

    def failed(self, nodeid: str) -> None:
        self.pending -= {e for e in self.pending if entry_matches(e, nodeid)}
        if not self.pending:
            self.session.shouldfail = "every killed_by test has failed"


_decider: _Decider | None = None
_several_cases: set[str] = set()  # node ids of the cases of tests that have more than one


def pytest_configure(config: pytest.Config) -> None:
    start_watchdog()


def pytest_sessionstart(session: pytest.Session) -> None:
    global _decider
    entries = json.loads(os.environ.get(DECIDED_ENV) or "[]")
    _decider = _Decider(session, [str(e) for e in entries]) if entries else None


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected theirs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = json.loads(os.environ.get(SELECT_ENV) or "null")
    if wanted is not None:
        _emit({"event": "collected", "nodeids": [item.nodeid for item in items]})
        keep = [item for item in items if any(entry_matches(e, item.nodeid) for e in wanted)]
        config.hook.pytest_deselected(items=[item for item in items if item not in keep])
        items[:] = keep
    _run_first(items, set(json.loads(os.environ.get(FIRST_ENV) or "[]")))
    _several_cases.clear()
    if os.environ.get(CALLS_ENV) == "1":
        # Only a test with several cases has an order to learn: the others run as they are, untraced.
        places = _places(items)
        _several_cases.update(i.nodeid for i in items if len(places[_function_of(i.nodeid)]) > 1)


def _function_of(nodeid: str) -> str:
    return nodeid.split("[", maxsplit=1)[0]


def _places(items: list[pytest.Item]) -> dict[str, list[int]]:
    """Where each test function's cases stand in ``items``."""
    places: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        places.setdefault(_function_of(item.nodeid), []).append(index)
    return places


def _run_first(items: list[pytest.Item], first: set[str]) -> None:
    if not first:
        return
    # Only the cases of one test function trade places: they are independent of one another by design.
    for indices in _places(items).values():
        cases = [items[i] for i in indices]
        ordered = [c for c in cases if c.nodeid in first] + [c for c in cases if c.nodeid not in first]
        for index, case in zip(indices, ordered, strict=True):
            items[index] = case


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    package = os.environ.get(PACKAGE_ENV)
    if not package or item.nodeid not in _several_cases:
        yield
        return
    root = str(item.config.rootpath / package) + os.sep
    prefix = len(str(item.config.rootpath)) + 1
    calls: set[str] = set()

    def record(frame: FrameType, event: str, arg: object) -> None:
        # A global tracer that traces no frame: called once per Python call, never per line or C call.
        code = frame.f_code
        if code.co_filename.startswith(root):
            name = getattr(code, "co_qualname", code.co_name)
            calls.add(f"{code.co_filename[prefix:].replace(os.sep, '/')}:{name}")

    previous, previous_threads = sys.gettrace(), threading.gettrace()
    sys.settrace(record)
    threading.settrace(record)
    try:
        yield
    finally:
        sys.settrace(previous)
        threading.settrace(previous_threads)
        _emit({"event": "calls", "nodeid": item.nodeid, "calls": sorted(calls)})


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    _emit({"event": "start", "nodeid": nodeid})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _emit(
        {
            "event": "report",
            "nodeid": report.nodeid,
            "when": report.when,
            "outcome": report.outcome,
            "xfail": hasattr(report, "wasxfail"),
            "message": _message(report.longrepr) if report.outcome != "passed" else "",
        }
    )
    if report.failed and _decider is not None:
        _decider.failed(report.nodeid)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _emit({"event": "collect_error", "nodeid": report.nodeid, "message": _message(report.longrepr)})


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    name = os.environ.get(PACKAGE_ENV)
    if not name:
        return
    try:
        module = sys.modules.get(name) or importlib.import_module(name)
    except Exception as exc:
        _emit({"event": "package", "error": f"{type(exc).__name__}: {exc}", "files": []})
        return
    _emit({"event": "package", "error": None, "files": _module_location(module)})


def main(argv: list[str]) -> int:
    """Import each named module; print where the first one (the package) came from as JSON."""
    start_watchdog()
    modules = [importlib.import_module(name) for name in argv]
    files = _module_location(modules[0]) if modules else []
    print(json.dumps({"files": [str(Path(file)) for file in files]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

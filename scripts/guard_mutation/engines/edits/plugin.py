"""The pytest plugin of every run the engine makes (``-p guard_mutation.engines.edits.plugin``).

It appends one JSON line per event to the file ``GUARD_MUTATION_OUTCOMES`` names: each test's start and
report, collection errors, where the package was imported from, and on request which of the woven
build's switches each test reached and whether it started a process (what such a map cannot see). It
runs only the selected entries' tests, and starts a test's cases with those named first.
"""

from __future__ import annotations

import importlib
import json
import os
import sys

import pytest

NAME = "guard_mutation.engines.edits.plugin"
OUTCOMES_ENV = "GUARD_MUTATION_OUTCOMES"
PACKAGE_ENV = "GUARD_MUTATION_PACKAGE"
SELECT_ENV = "GUARD_MUTATION_SELECT"  # JSON entries: run only their tests, record every node id
FIRST_ENV = "GUARD_MUTATION_FIRST"  # JSON node ids: each runs before the other cases of its test
HITS_ENV = "GUARD_MUTATION_HITS"  # woven modules, comma-separated: record the switches each test reached
DECIDE_ENV = "GUARD_MUTATION_DECIDE"  # JSON entries: stop once each has a failed test (the verdict is made)
_SPAWNS = {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system"}
_spawned: list[bool] = []  # [whether the running test started a process], once the audit hook is in
_session: list[pytest.Session] = []


def _emit(record: dict[str, object]) -> None:
    path = os.environ.get(OUTCOMES_ENV)
    if path:  # one open per record: a process killed mid-run leaves every finished line
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")


def _message(longrepr: object) -> str:
    if isinstance(longrepr, tuple):  # a skip's: (path, lineno, reason)
        return str(longrepr[-1]).strip()
    message = str(getattr(getattr(longrepr, "reprcrash", None), "message", "") or "").strip()
    lines = [line.strip() for line in str(longrepr or "").splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    return message.splitlines()[0] if message else errors[-1] if errors else lines[0] if lines else ""


def entry_matches(entry: str, nodeid: str) -> bool:
    return nodeid == entry or nodeid.startswith(entry + "[")


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event in _SPAWNS and _spawned:
        _spawned[0] = True


def _reached() -> list[str]:
    hits: list[str] = []
    for module in filter(None, os.environ.get(HITS_ENV, "").split(",")):
        reached = getattr(sys.modules.get(module), "_harness_reached_", None)
        hits += [f"{module}:{n}" for n in reached()] if reached is not None else []
    return hits


def pytest_sessionstart(session: pytest.Session) -> None:
    _session[:] = [session]
    if os.environ.get(HITS_ENV) and not _spawned:
        _spawned.append(False)
        sys.addaudithook(_audit)
    _reached()  # what the set-up reached is no test's


@pytest.hookimpl(trylast=True)  # after -m and -k
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = json.loads(os.environ.get(SELECT_ENV) or "null")
    if wanted is not None:
        _emit({"event": "collected", "nodeids": [item.nodeid for item in items]})
        keep = [item for item in items if any(entry_matches(e, item.nodeid) for e in wanted)]
        config.hook.pytest_deselected(items=[item for item in items if item not in keep])
        items[:] = keep
    first = set(json.loads(os.environ.get(FIRST_ENV) or "[]"))
    places: dict[str, list[int]] = {}
    for index, item in enumerate(items if first else ()):
        places.setdefault(item.nodeid.split("[", maxsplit=1)[0], []).append(index)
    for indices in places.values():  # only the cases of one test trade places: independent by design
        cases = [items[i] for i in indices]
        ordered = [c for c in cases if c.nodeid in first] + [c for c in cases if c.nodeid not in first]
        for index, case in zip(indices, ordered, strict=True):
            items[index] = case


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    _emit({"event": "start", "nodeid": nodeid})


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    if _spawned:
        _emit({"event": "hits", "nodeid": nodeid, "hits": _reached(), "spawned": _spawned[0]})
        _spawned[0] = False


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    message = _message(report.longrepr) if report.outcome != "passed" else ""
    xfail = hasattr(report, "wasxfail")
    record = {"outcome": report.outcome, "xfail": xfail, "message": message, "duration": report.duration}
    _emit({"event": "report", "nodeid": report.nodeid, **record})
    if report.failed:
        _decide(report.nodeid)


def _decide(nodeid: str) -> None:
    """Stop the session once every entry of ``DECIDE_ENV`` has a failed test: no later test can change a
    kill into anything else."""
    entries = json.loads(os.environ.get(DECIDE_ENV) or "[]")
    if not entries or not _session:
        return
    failed = _failed.setdefault(os.environ.get(OUTCOMES_ENV, ""), set())
    failed.update(e for e in entries if entry_matches(e, nodeid))
    if failed >= set(entries):
        _session[0].shouldfail = "every killed_by test has failed"


_failed: dict[str, set[str]] = {}  # the entries with a failed test, by run (its outcomes file)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _emit({"event": "collect_error", "nodeid": report.nodeid, "message": _message(report.longrepr)})


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    name = os.environ.get(PACKAGE_ENV)
    if name:
        try:
            module = sys.modules.get(name) or importlib.import_module(name)
        except Exception as exc:
            _emit({"event": "package", "error": f"{type(exc).__name__}: {exc}", "files": []})
            return
        file = getattr(module, "__file__", None)
        files = [file] if isinstance(file, str) else [str(p) for p in getattr(module, "__path__", [])]
        _emit({"event": "package", "error": None, "files": files})

"""pytest plugin for the sweep's map: which of the package's modules the collection left imported, and which
tests import one of them (afresh, or for the first time) while they run.

A mutant of code run at import whose package looks the same once imported (``import_state``) can be told
apart only by a test that runs that code again; coverage cannot always say which (a test under a tracer
of its own hides its lines, a fixture runs in no test's context), so the imports themselves are watched,
from a test's setup to its teardown: a finder first on ``sys.meta_path`` notes every import of the
package's modules that nothing cached answered, and an audit hook every ``exec`` of a module's code from
the package's folder (a loader's ``exec_module``, ``importlib.reload``), which needs no finder. Each
process writes its own file (``<SWEEP_IMPORTS_OUT>.<pid>``), for xdist's workers.

It also notes, under coverage, the lines that had run once the suite was collected and the modules a warm
session imports beside it (``SWEEP_IMPORTS_PRELOAD``) were imported: all that such a session runs before it
forks a child per mutant. A fixture, a thread, a finaliser or a child interpreter runs its lines in no
test's context of coverage's, yet only after that point, where a mutant swapped into the session acts.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import sys
import types
from collections.abc import Generator, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

import pytest

OUT_ENV = "SWEEP_IMPORTS_OUT"
PACKAGE_ENV = "SWEEP_IMPORTS_PACKAGE"
PRELOAD_ENV = "SWEEP_IMPORTS_PRELOAD"  # comma-separated: what a warm session imports once it has collected


class _Watch(importlib.abc.MetaPathFinder):
    def __init__(self, package: str) -> None:
        self.package = package
        self.test = ""
        self.by_test: dict[str, set[str]] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if self.test and (fullname == self.package or fullname.startswith(self.package + ".")):
            self.by_test.setdefault(self.test, set()).add(fullname)
        return None  # the finders after it import the module as ever


class ImportProbe:
    def __init__(self, package: str, out: Path) -> None:
        self.watch = _Watch(package)
        self.out = out
        self.collected: list[str] = []
        self.before_tests: dict[str, list[int]] | None = None  # {file: lines} run before the first test
        self.ran = False  # whether this process ran a test
        spec = importlib.util.find_spec(package)  # the package's folder, without running its code
        folders = list(spec.submodule_search_locations or []) if spec is not None else []
        self.folder = Path(folders[0]).resolve() if folders else None
        sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple[object, ...]) -> None:
        if event != "exec" or not self.watch.test or self.folder is None:
            return
        code = args[0] if args else None
        if isinstance(code, types.CodeType) and code.co_name == "<module>":
            path = Path(code.co_filename).resolve()
            if path.suffix == ".py" and path.is_relative_to(self.folder):
                parts = path.relative_to(self.folder).with_suffix("").parts
                name = ".".join((self.watch.package, *parts[: -1 if parts[-1] == "__init__" else None]))
                self.watch.by_test.setdefault(self.watch.test, set()).add(name)

    def pytest_collection_finish(self) -> None:
        package = self.watch.package
        self.collected = sorted(n for n in sys.modules if n == package or n.startswith(package + "."))
        for name in filter(None, os.environ.get(PRELOAD_ENV, "").split(",")):
            try:
                importlib.import_module(name)
            except Exception:  # a warm session refuses such a module; the sweep then runs forked
                continue

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        # first again before each test: pytest's assertion rewriting puts its own finder first
        if self.watch in sys.meta_path:
            sys.meta_path.remove(self.watch)
        sys.meta_path.insert(0, self.watch)
        if not self.ran:  # all that ran before the first test, as a warm session runs it before it forks
            self.before_tests = _lines_so_far()
        self.ran = True
        self.watch.test = item.nodeid.split("[")[0]
        try:
            return (yield)
        finally:
            self.watch.test = ""

    def pytest_sessionfinish(self) -> None:
        by_test = {test: sorted(names) for test, names in sorted(self.watch.by_test.items())}
        found = {
            "collected": self.collected,
            "by_test": by_test,
            "before_tests": self.before_tests,
            "ran": self.ran,
        }
        self.out.with_name(f"{self.out.name}.{os.getpid()}").write_text(json.dumps(found), encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    out, package = os.environ.get(OUT_ENV), os.environ.get(PACKAGE_ENV)
    if out and package:
        config.pluginmanager.register(ImportProbe(package, Path(out)), "sweep-import-probe")


def _lines_so_far() -> dict[str, list[int]] | None:
    """The lines coverage has measured in this process so far (None: not under coverage)."""
    try:
        import coverage
    except ImportError:
        return None
    current = coverage.Coverage.current()
    if current is None:
        return None
    data = current.get_data()
    return {path: sorted(data.lines(path) or ()) for path in data.measured_files()}


def before_tests(out: Path) -> dict[str, frozenset[int]] | None:
    """{measured file: lines} that any process of a run had run before its first test; None where a
    process that ran tests could not say (not under coverage)."""
    found: dict[str, set[int]] = {}
    said = False
    for path in sorted(out.parent.glob(f"{out.name}.*")):
        written = json.loads(path.read_text(encoding="utf-8"))
        lines = written.get("before_tests")
        if lines is None:
            if written.get("ran", True):
                return None
            continue  # xdist's controller, say: it ran no test
        said = True
        for file, numbers in lines.items():
            found.setdefault(file, set()).update(numbers)
    return {file: frozenset(numbers) for file, numbers in found.items()} if said else None


def read(out: Path) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """What every process of a run wrote: the modules its collection left imported, and for each module
    the tests that imported it."""
    collected: set[str] = set()
    importers: dict[str, set[str]] = {}
    for written in sorted(out.parent.glob(f"{out.name}.*")):
        found = json.loads(written.read_text(encoding="utf-8"))
        collected.update(found["collected"])
        for test, names in found["by_test"].items():
            for name in names:
                importers.setdefault(name, set()).add(test)
    return tuple(sorted(collected)), {name: tuple(sorted(tests)) for name, tests in importers.items()}

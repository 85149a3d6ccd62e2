"""pytest plugin for the sweep's map, in each process of its run: what the package's imports were, the lines
run before the first test, and the tests whose reach coverage cannot see.

Which of the package's modules the collection left imported, and which tests import one of them
(afresh, or for the first time) while they run.

A mutant of code run at import whose package looks the same once imported (``import_state``) can be told
apart only by a test that runs that code again; coverage cannot always say which (a test under a tracer
of its own hides its lines, a fixture runs in no test's context), so the imports themselves are watched,
from a test's setup to its teardown: a finder first on ``sys.meta_path`` notes every import of the
package's modules that nothing cached answered, and an audit hook every ``exec`` of a module's code from
the package's folder (a loader's ``exec_module``, ``importlib.reload``), which needs no finder. Each
process writes its own file (``<SWEEP_IMPORTS_OUT>.<pid>``), for xdist's workers.

It also notes, under coverage, the lines that had run once the suite was collected and the modules a warm
session imports beside it (``SWEEP_IMPORTS_PRELOAD``) were imported: all that such a session runs before it
forks a child per mutant. A fixture, a thread a test starts and a finaliser of what a test made run their
lines in no test's context of coverage's, yet only after that point, where a mutant swapped into the
session acts; so does a child interpreter a test starts, which sees a woven core's mutant (by its
environment) and, on either path, no Python mutant (it reads the module's file).

And it names the tests whose reach coverage cannot see (``blind``), by the audit events they raise: one
that sets a tracer of its own (in coverage's place), one that starts a process without the variable that
has coverage measure it, one that forks (what a forked child runs is not reliably saved).
"""

from __future__ import annotations

import gc
import importlib.abc
import importlib.util
import json
import os
import sys
import threading
import types
from collections.abc import Generator, Mapping, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import FrameType, ModuleType

import pytest

OUT_ENV = "SWEEP_IMPORTS_OUT"
PACKAGE_ENV = "SWEEP_IMPORTS_PACKAGE"
PRELOAD_ENV = "SWEEP_IMPORTS_PRELOAD"  # comma-separated: what a warm session imports once it has collected
# coverage's ``patch = subprocess`` passes its configuration to a child interpreter in this variable: a child
# started with an environment of its own that lacks it runs unmeasured
COVERAGE_CHILD_ENV = "COVERAGE_PROCESS_CONFIG"
OWN_TRACER = "sets a tracer of its own"
UNMEASURED_CHILD = "starts a process coverage does not measure"
FORKS = "forks"
# what ctypes.util.find_library runs: ldconfig (Ubuntu's is a script around ldconfig.real), a C compiler
# and the linker, objdump
_LIBRARY_TOOLS = frozenset({"ldconfig", "ldconfig.real", "gcc", "cc", "ld", "objdump"})


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


class MapProbe:
    def __init__(self, package: str, out: Path) -> None:
        self.watch = _Watch(package)
        self.out = out
        self.collected: list[str] = []
        self.before_tests: dict[str, list[int]] | None = None  # {file: lines} run before the first test
        self.ran = False  # whether this process ran a test
        # {test: why}: the tests whose reach coverage cannot see, as this process saw them run
        self.blind: dict[str, set[str]] = {}
        self.blind_outside = False  # such an event outside any test: no test can be named for it
        spec = importlib.util.find_spec(package)  # the package's folder, without running its code
        folders = list(spec.submodule_search_locations or []) if spec is not None else []
        self.folder = Path(folders[0]).resolve() if folders else None
        sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple[object, ...]) -> None:
        test = self.watch.test
        why = _blind_by(event, args)
        if why and not test:
            self.blind_outside = True
        if not test:
            return
        if why:
            self.blind.setdefault(test, set()).add(why)
        if event != "exec" or self.folder is None:
            return
        code = args[0] if args else None
        if isinstance(code, types.CodeType) and code.co_name == "<module>":
            path = Path(code.co_filename).resolve()
            if path.suffix == ".py" and path.is_relative_to(self.folder):
                parts = path.relative_to(self.folder).with_suffix("").parts
                name = ".".join((self.watch.package, *parts[: -1 if parts[-1] == "__init__" else None]))
                self.watch.by_test.setdefault(self.watch.test, set()).add(name)

    def pytest_collection_finish(self) -> None:
        for name in filter(None, os.environ.get(PRELOAD_ENV, "").split(",")):
            try:
                importlib.import_module(name)
            except Exception:  # a warm session refuses such a module; the sweep then runs forked
                continue
        package = self.watch.package
        self.collected = sorted(n for n in sys.modules if n == package or n.startswith(package + "."))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self) -> None:
        # All that ran before the tests, in every process (xdist's controller too): a warm session runs it
        # before it forks a child per mutant, once it has collected what is garbage by then.
        gc.collect()
        self.before_tests = _lines_so_far()
        # A process that starts its tests and never writes what it saw (a worker that crashed) leaves the
        # map short of what its tests reached.
        self.out.with_name(f"{self.out.name}-started.{os.getpid()}").write_text("", encoding="utf-8")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        # first again before each test: pytest's assertion rewriting puts its own finder first
        if self.watch in sys.meta_path:
            sys.meta_path.remove(self.watch)
        sys.meta_path.insert(0, self.watch)
        if not self.ran and self.before_tests is None:  # a process whose loop another plugin ran first
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
            "blind": {test: sorted(why) for test, why in sorted(self.blind.items())},
            "blind_outside": self.blind_outside,
            "before_tests": self.before_tests,
            "ran": self.ran,
        }
        self.out.with_name(f"{self.out.name}.{os.getpid()}").write_text(json.dumps(found), encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    out, package = os.environ.get(OUT_ENV), os.environ.get(PACKAGE_ENV)
    if out and package:
        config.pluginmanager.register(MapProbe(package, Path(out)), "sweep-map-probe")


def _blind_by(event: str, args: tuple[object, ...]) -> str:
    """Why a test that raised the audit ``event`` reaches lines coverage does not tie to it, else ""."""
    if event == "sys.settrace" and not _coverage_sets_it():
        return OWN_TRACER
    if event in ("subprocess.Popen", "os.posix_spawn"):
        env = args[3] if event == "subprocess.Popen" else args[2]
        unmeasured = isinstance(env, Mapping) and not any(str(k) == COVERAGE_CHILD_ENV for k in env)
        if unmeasured and may_run_python(args[0] if args else None):
            return UNMEASURED_CHILD
    if event in ("os.fork", "os.forkpty"):
        return FORKS
    return ""


def may_run_python(program: object) -> bool:
    """Whether a process started as ``program`` may run Python, and so the package: any program but the
    tools ``ctypes.util.find_library`` starts, with an environment of their own, to find a library (it
    runs ``ldconfig`` while cuda-bindings is imported, outside any test). A launcher, a shell or a
    wrapper script may start Python, so only these named tools are let through."""
    try:
        name = os.fsdecode(program)  # type: ignore[arg-type]
    except TypeError:
        return True
    return os.path.basename(name) not in _LIBRARY_TOOLS


def _coverage_sets_it() -> bool:
    """Whether the tracer being set is coverage's own: set from coverage's code, or by ``threading`` for a
    new thread from the hook coverage gave it. The first frame below this plugin's own sets it."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    module = str(frame.f_globals.get("__name__", "")) if frame is not None else ""
    if module == "threading":
        hook = threading.gettrace()
        module = str(getattr(hook, "__module__", "") or getattr(type(hook), "__module__", ""))
    return module == "coverage" or module.startswith("coverage.")


def _lines_so_far() -> dict[str, list[int]] | None:
    """The lines coverage has measured in this process so far (None: not under coverage)."""
    try:
        import coverage
    except ImportError:
        return None
    current = coverage.Coverage.current()
    if current is None:
        return None
    try:
        data = current.get_data()
        return {path: sorted(data.lines(path) or ()) for path in data.measured_files()}
    except Exception:  # unreadable: the map then takes every line run outside a test instead
        return None


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
            continue  # a process that reached no test loop
        said = True
        for file, numbers in lines.items():
            found.setdefault(file, set()).update(numbers)
    return {file: frozenset(numbers) for file, numbers in found.items()} if said else None


def blind(out: Path) -> dict[str, tuple[str, ...]]:
    """{test: why} for every test any process of a run saw reach lines coverage does not tie to it."""
    found: dict[str, set[str]] = {}
    for path in sorted(out.parent.glob(f"{out.name}.*")):
        for test, why in json.loads(path.read_text(encoding="utf-8")).get("blind", {}).items():
            found.setdefault(test, set()).update(why)
    return {test: tuple(sorted(why)) for test, why in sorted(found.items())}


def complete(out: Path) -> bool:
    """Whether every process that started its tests wrote what it saw, and saw nothing it could not name
    a test for: else the run's coverage may lack what some test reached."""
    started = {path.suffix for path in out.parent.glob(f"{out.name}-started.*")}
    written = sorted(out.parent.glob(f"{out.name}.*"))
    if not started <= {path.suffix for path in written}:
        return False
    return not any(json.loads(path.read_text(encoding="utf-8")).get("blind_outside") for path in written)


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

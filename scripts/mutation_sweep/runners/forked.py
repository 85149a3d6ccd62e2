"""Run mutants in children forked from one warm process.

The parent imports pytest and the suite's third-party dependencies once, but never the package under
test, and makes no CUDA call (CUDA is not fork-safe once initialised). Each child installs an import
hook that serves the mutated module's text from memory, so nothing is written to the working tree,
then runs the mutant's tests in-process with ``pytest.main``; its exit status is the verdict.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.abc
import importlib.util
import itertools
import os
import select
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

from critical_harness.compiled import IMPL_ENV
from mutation_model import KILLED, SURVIVED, TIMEOUT

from .. import import_state
from ..config import test_paths
from ..select_tests import SUITE
from ..work_item import IMPORT_FAILED, NO_TESTS, Mutant, Result
from . import children
from .compiled_builds import SWITCH_ENV

WARM_IMPORTS = (
    "pytest",
    "_pytest.pytester",
    "hypothesis",
    "hypothesis.stateful",
    "hypothesis.strategies",
    "coverage",
)
STATE = "<what the import left>"  # a phase that compares the package's state after import, runs no test


@dataclass(frozen=True)
class Job:
    mutant: Mutant
    module: str  # dotted name of the mutated module
    source: str  # its mutated text
    tests: tuple[str, ...]  # node ids, or (SUITE,)
    suite_order: tuple[str, ...] = ("tests",)  # what SUITE runs, quickest files first
    then_suite: bool = False  # when ``tests`` all pass, run the whole suite before calling it a survivor
    # when ``tests`` all pass, these run next (before the whole suite, where that follows): the tests under
    # their own tracer, which coverage cannot tie to the lines they reach
    then_tests: tuple[str, ...] = ()
    # when every phase passed on the reference, the whole suite once more on the compiled core: what runs
    # at import may also differ only there (which classes a module takes from the core)
    then_compiled: bool = False
    again_compiled: bool = False  # ``then_compiled`` with ``tests`` alone: a survivor carried (``carry``)
    impl: str = ""  # the implementation the tests run (GUARD_LIB_IMPL); "": as the sweep was started
    spent: float = 0.0  # seconds an earlier phase of this mutant took
    # A compiled mutant: the copy whose extension holds it, its switch there (None: built alone; no source)
    built: Path | None = None
    switch: int | None = None
    timeout_scale: float = 1.0  # a job that runs the whole suite on purpose may take this many times longer
    # what its longest phase's tests took in the map's run: a phase may take a multiple of it (``limit_s``)
    expected_s: float = 0.0
    # may run in a warm session instead (``runners.warm``): it changes one function's body, and none of its
    # lines ran before the first test (at import, while collecting), where a swap after import would be late
    warm: bool = False
    # A mutant of code run at import: (implementation, tests, readers) in order. For each, what the import
    # leaves is compared with the unmutated package's (phase ``(STATE,)``): the same, only ``tests`` run
    # (those that run the code again), and ``readers`` (tests under a tracer of their own, which read line
    # numbers) where lines moved; else the whole suite, there and on any implementation after it.
    then_state: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()
    readers: tuple[str, ...] = ()  # a ``(STATE,)`` phase's: run where the state is the same but lines moved
    collected: tuple[str, ...] = ()  # the package's modules the suite's collection leaves imported
    found: tuple[str, ...] = ()  # what each comparison found ("python: the same"), for the result


# A timeout counts as a kill: a phase may take twice what its job's longest phase took in the map's
# run (under coverage), so load makes no kill; never past the whole suite's, so a hang waits no longer.
EXPECTED_MARGIN, EXPECTED_CAP_SCALE = 2.0, 4.0


def limit_s(job: Job, timeout_s: float) -> float:
    """The seconds a phase of ``job`` may take: the configured limit times its scale, or more (above)."""
    expected = min(EXPECTED_MARGIN * job.expected_s, EXPECTED_CAP_SCALE * timeout_s)
    return max(timeout_s * job.timeout_scale, expected)


class _MutantFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, module: str, path: str, source: str) -> None:
        self.module, self.path, self.source = module, path, source

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != self.module:
            return None
        is_package = self.path.endswith("__init__.py")
        spec = importlib.util.spec_from_loader(fullname, self, origin=self.path, is_package=is_package)
        if spec is not None:
            spec.has_location = True
            if is_package:
                spec.submodule_search_locations = [str(Path(self.path).parent)]
        return spec

    def exec_module(self, module: ModuleType) -> None:
        module.__file__ = self.path
        exec(compile(self.source, self.path, "exec", dont_inherit=True), module.__dict__)


class _FirstFailure:
    """pytest plugin: remember the first test that failed."""

    def __init__(self, out: Path) -> None:
        self.out = out

    def pytest_runtest_logreport(self, report: object) -> None:
        if getattr(report, "failed", False) and not self.out.exists():
            self.out.write_text(str(getattr(report, "nodeid", "")), encoding="utf-8")

    def pytest_collectreport(self, report: object) -> None:
        self.pytest_runtest_logreport(report)


class _MutantFirst:
    """pytest plugin: once pytest has put its assertion-rewriting import hook first on ``sys.meta_path``
    (it claims every module of a pytest11 plugin's distribution), put the mutant's finder back in front,
    so that a test which imports the module afresh gets the mutant too, not the file on disk."""

    def __init__(self, finder: _MutantFinder) -> None:
        self.finder = finder

    def pytest_configure(self, config: object) -> None:
        if self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)
        sys.meta_path.insert(0, self.finder)


def _die_with_the_parent() -> None:
    # The kernel ends the child when the process that forked it dies, even by SIGKILL.
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _child(job: Job, root: Path, pytest_args: Sequence[str], out: Path, parent: int) -> int:
    os.setpgid(0, 0)
    _die_with_the_parent()
    if os.getppid() != parent:  # the parent died before the line above took effect
        return 3
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    plugins: list[object] = [_FirstFailure(out)]
    if job.impl:
        os.environ[IMPL_ENV] = job.impl
    if job.tests == (STATE,):
        # The import happens inside the comparison, so that what it logs and warns is heard there.
        sys.meta_path.insert(0, _MutantFinder(job.module, str(root / job.mutant.file), job.source))
        try:
            found = import_state.state(job.module.split(".")[0], job.module, job.collected)
        except BaseException as exc:  # unreadable is never "the same"
            found = f"<unreadable: {type(exc).__name__}: {exc}>"
        out.write_text(found, encoding="utf-8")
        return 0
    if job.built is not None:
        if not _select_compiled(job.built, job.module, job.switch):
            out.write_text(IMPORT_FAILED, encoding="utf-8")
            return 1
    else:
        finder = _MutantFinder(job.module, str(root / job.mutant.file), job.source)
        sys.meta_path.insert(0, finder)
        plugins.append(_MutantFirst(finder))
        # Import the mutant now: pytest's assertion-rewriting hook would otherwise load the package's
        # modules itself (it rewrites every module of a pytest11 plugin's distribution), ahead of ours.
        try:
            importlib.import_module(job.module)
        except BaseException:  # a mutant that breaks the import fails every test
            out.write_text(IMPORT_FAILED, encoding="utf-8")
            return 1
    import pytest

    targets = list(job.suite_order if job.tests == (SUITE,) else job.tests)
    # The targets say what runs: the folders the configuration names would add the whole suite to them.
    paths = set(test_paths(pytest_args, root))
    options = [a for a in pytest_args if a not in paths]
    return int(pytest.main(["-q", "-x", "-p", "no:cacheprovider", *options, *targets], plugins=plugins))


def _select_compiled(built: Path, module: str, switch: int | None) -> bool:
    """Run the tests in the copy ``built`` on its extension, with the mutant's switch on; False when the
    copy's own extension is not what imports (which the green check before any mutant would show)."""
    os.chdir(built)
    sys.path.insert(0, str(built))
    os.environ[IMPL_ENV] = "compiled"
    if switch is not None:
        os.environ[SWITCH_ENV] = str(switch)
    try:
        extension = importlib.import_module(module)
        if not str(extension.__file__).startswith(str(built)):
            return False
    except BaseException:  # a mutant that breaks the import fails every test
        return False
    return True


def warm_up() -> None:
    for name in WARM_IMPORTS:
        try:
            __import__(name)
        except ImportError:
            continue


def verdict_of(status: int) -> str:
    # pytest: 0 passed, 1 a test failed, 2 interrupted (a KeyboardInterrupt a mutant let escape), 3 internal
    # error, 4 usage error (a conftest that cannot import the mutant), 5 no tests; below 0, a signal. The
    # unmutated suite ran green with the same arguments: any other failure to pass is the mutant's doing.
    if status == 0:
        return SURVIVED
    if status == 5:
        return NO_TESTS
    return KILLED


def _spawn(job: Job, root: Path, pytest_args: Sequence[str], out: Path) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        status = 3
        try:
            status = _child(job, root, pytest_args, out, parent)
        finally:
            os._exit(status)
    return pid


@dataclass
class _Running:
    job: Job
    started: float
    fd: int
    out: Path


def run(
    jobs: Iterable[Job],
    root: Path,
    pytest_args: Sequence[str],
    *,
    parallel: int,
    timeout_s: float,
    on_result: Callable[[Result], None],
) -> list[Result]:
    """Run every job, ``parallel`` at a time; each child and its process group die past ``timeout_s``."""
    os.chdir(root)
    pending = list(jobs)
    running: dict[int, _Running] = {}
    results: list[Result] = []
    unmutated: dict[tuple[str, str], str] = {}  # (module, implementation): its state after import
    with tempfile.TemporaryDirectory(prefix="sweep-run-") as tmp:
        try:
            while pending or running:
                while pending and len(running) < parallel:
                    job = pending.pop(0)
                    out = Path(tmp, f"{job.mutant.id}-{next(_serial)}")
                    pid = _spawn(job, root, pytest_args, out)
                    running[pid] = _Running(job, time.monotonic(), os.pidfd_open(pid), out)
                deadline = min(r.started + limit_s(r.job, timeout_s) for r in running.values())
                fds = [r.fd for r in running.values()]
                ready, _, _ = select.select(fds, [], [], max(0.0, deadline - time.monotonic()))
                now = time.monotonic()
                for pid, child in list(running.items()):
                    verdict = _reap(pid, child, ready, now, limit_s(child.job, timeout_s))
                    if verdict is None:
                        continue
                    del running[pid]
                    job = child.job
                    same = DIFFERS
                    if verdict == SURVIVED and job.tests == (STATE,):
                        where = (root, pytest_args, Path(tmp), timeout_s)
                        same = _same_state(job, child.out, where, unmutated)
                        job = dataclasses.replace(job, found=(*job.found, f"{job.impl or 'python'}: {same}"))
                    later = next_phase(job, same) if verdict == SURVIVED else None
                    if later is not None:
                        # The likeliest killers passed: the next tests decide, in another child.
                        pending.insert(0, dataclasses.replace(later, spent=job.spent + now - child.started))
                        continue
                    wrote = child.out.exists() and job.tests != (STATE,)
                    failed = child.out.read_text(encoding="utf-8") if wrote else ""
                    took = round(job.spent + now - child.started, 3)
                    found = f"what the import left: {', '.join(job.found)}" if job.found else ""
                    results.append(Result(job.mutant, verdict, job.tests, failed, took, detail=found))
                    on_result(results[-1])
        finally:
            for pid, child in running.items():
                children.kill(pid)
                os.waitpid(pid, 0)
                os.close(child.fd)
    return results


DIFFERS, MOVED, SAME = "differs", "the same, lines moved", "the same"


def next_phase(job: Job, same: str = DIFFERS) -> Job | None:
    """What a job whose tests all passed runs next, if anything: the traced tests, then the comparisons of
    the state after import, then the whole suite, then the whole suite (or ``tests``) on the core. ``same``:
    what a ``(STATE,)`` phase found, against the unmutated package (DIFFERS, MOVED or SAME)."""
    if job.tests == (STATE,):
        on_core = job.impl == "compiled"
        if same == DIFFERS:
            # What the import left differs here: the whole suite decides, here and on the core after.
            return dataclasses.replace(
                job,
                tests=(SUITE,),
                then_tests=(),
                then_state=(),
                readers=(),
                then_suite=False,
                then_compiled=job.then_compiled and not on_core,
            )
        # The same: only the tests that may still tell run here, and no whole suite on this implementation.
        readers = tuple(t for t in job.readers if t not in job.then_tests) if same == MOVED else ()
        job = dataclasses.replace(
            job,
            then_tests=(*job.then_tests, *readers),
            readers=(),
            then_suite=job.then_suite if on_core else False,
            then_compiled=False if on_core else job.then_compiled,
        )
    if job.then_tests:
        return dataclasses.replace(job, tests=job.then_tests, then_tests=())
    if job.then_state:
        (impl, after, readers), rest = job.then_state[0], job.then_state[1:]
        return dataclasses.replace(
            job, tests=(STATE,), impl=impl, then_tests=after, readers=readers, then_state=rest
        )
    if job.then_suite:
        return dataclasses.replace(job, tests=(SUITE,), then_suite=False)
    if job.then_compiled or job.again_compiled:
        tests = (SUITE,) if job.then_compiled else job.tests
        job = dataclasses.replace(job, then_compiled=False, again_compiled=False)
        return dataclasses.replace(job, tests=tests, impl="compiled")
    return None


_serial = itertools.count()


def _same_state(
    job: Job, out: Path, where: tuple[Path, Sequence[str], Path, float], unmutated: dict[tuple[str, str], str]
) -> str:
    """What the state a ``(STATE,)`` phase wrote to ``out`` is against the unmutated package's, on the
    phase's implementation (DIFFERS, MOVED, SAME); that one is found once per module, the same way, in a
    child of its own."""
    found = out.read_text(encoding="utf-8") if out.exists() else "<nothing written>"
    root, pytest_args, tmp, timeout_s = where
    key = (job.module, job.impl)
    if key not in unmutated:
        original = (root / job.mutant.file).read_text(encoding="utf-8")
        plain = Path(tmp, f"unmutated-{next(_serial)}")
        pid = _spawn(dataclasses.replace(job, source=original), root, pytest_args, plain)
        status = children.wait(pid, timeout_s)
        written = plain.read_text(encoding="utf-8") if plain.exists() else ""
        unmutated[key] = written if status == 0 and written else "<none>"
    # "<…>": an import that failed, or a state that could not be read, is never the same as another
    if found.startswith("<") or unmutated[key].startswith("<"):
        return DIFFERS
    (state, layout), (plain_state, plain_layout) = found.split(":"), unmutated[key].split(":")
    if state != plain_state:
        return DIFFERS
    return SAME if layout == plain_layout else MOVED


def _reap(pid: int, child: _Running, ready: list[int], now: float, timeout_s: float) -> str | None:
    """The child's verdict once it has ended (or been ended for its time), else None."""
    if child.fd in ready:
        _, status = os.waitpid(pid, 0)
        verdict = verdict_of(os.waitstatus_to_exitcode(status))
    elif now - child.started >= timeout_s:
        children.kill(pid)
        os.waitpid(pid, 0)
        verdict = TIMEOUT
    else:
        return None
    os.close(child.fd)
    return verdict

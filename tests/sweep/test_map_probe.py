"""What the map's probe tells beside coverage.

The lines run before the first test are those a warm session runs before it forks: at import, while
collecting, in what it imports beside the suite. A fixture, a thread, a finaliser or a child interpreter
runs its lines in no test's coverage context, yet after that point, so a mutant swapped into a warm
session still acts there.

The tests whose reach coverage cannot see are those that set a tracer of their own, start a process it
does not measure, or fork; not those that start a thread or a child it measures.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mutation_sweep import map_probe
from mutation_sweep.runners import warm
from mutation_sweep.runners.compiled_builds import SWITCH_ENV
from mutation_sweep.runners.forked import Job
from mutation_sweep.select_tests import (
    IMPORTS,
    covered_run,
    lines_before_tests,
    lines_outside_tests,
    traced_tests,
)
from mutation_sweep.work_item import Mutant

MODULE = """\
def at_import():
    return "import"


def at_preload():
    return "preload"


def in_fixture():
    return "fixture"


def in_thread():
    return "thread"


def in_child():
    return "child"


def in_test():
    return "test"


at_import()
"""
LATE = "from pkg import mod\n\nmod.at_preload()\n"
CONFTEST = """\
import pytest

from pkg import mod


@pytest.fixture(autouse=True)
def _around():
    mod.in_fixture()
    yield
"""
TESTS = f"""\
import ctypes.util
import os
import subprocess
import threading

import pytest

from pkg import mod

# while collecting, outside any test: the tools ctypes.util.find_library starts with an environment of
# their own (ldconfig, a compiler) run no Python, so the map stays complete
ctypes.util.find_library("c")
ctypes.util.find_library("no-such-library-anywhere")


@pytest.mark.parametrize("case", range(6))  # each worker of two runs a test after its first one
def test_everything_else(case):
    mod.in_test()
    worker = threading.Thread(target=mod.in_thread)
    worker.start()
    worker.join()
    program = "from pkg import mod; mod.in_child()"
    subprocess.run([{sys.executable!r}, "-c", program], check=True)
    # an environment of its own that keeps coverage's variable: still measured
    subprocess.run([{sys.executable!r}, "-c", "pass"], env={{**os.environ, "X": "1"}}, check=True)
"""


BLIND = f"""\
import os
import subprocess
import sys


def test_own_tracer():
    previous = sys.gettrace()
    sys.settrace(lambda *args: None)
    sys.settrace(previous)


def test_unmeasured_child():
    subprocess.run([{sys.executable!r}, "-c", "pass"], env={{"PATH": os.environ.get("PATH", "")}}, check=True)


def test_forks():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
"""


def _body_line(name: str) -> int:
    lines = MODULE.splitlines()
    return lines.index(f"def {name}():") + 2


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, Path]:
    project = tmp_path_factory.mktemp("project")
    for rel, text in {
        "pkg/__init__.py": "",
        "pkg/mod.py": MODULE,
        "pkg/late.py": LATE,
        "tests/conftest.py": CONFTEST,
        "tests/test_all.py": TESTS,
        "tests/test_blind.py": BLIND,
    }.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text, encoding="utf-8")
    scratch = tmp_path_factory.mktemp("scratch")
    done, data_file, junit = covered_run(project, "pkg", ["tests"], scratch, preload=("pkg.late",))
    assert done.returncode == 0, done.stdout + done.stderr
    return project, scratch, data_file, junit


def test_only_what_runs_before_the_first_test_counts(run: tuple[Path, Path, Path, Path]) -> None:
    project, scratch, data_file, _ = run
    before = lines_before_tests(scratch, data_file, project, suffix="")["pkg/mod.py"]
    assert _body_line("at_import") in before
    assert _body_line("at_preload") in before  # what a warm session imports beside the suite
    for name in ("in_fixture", "in_thread", "in_child", "in_test"):
        assert _body_line(name) not in before, name
    # coverage alone, by the lines that ran in no test's context, cannot tell these apart
    outside = lines_outside_tests(data_file, project, suffix="")["pkg/mod.py"]
    assert {_body_line("in_fixture"), _body_line("in_child")} <= outside
    # reading coverage's data mid-run lost none of it: the combined data still holds what ran first
    assert _body_line("at_import") in outside


def test_the_tests_coverage_cannot_follow_are_named(run: tuple[Path, Path, Path, Path]) -> None:
    project, scratch, _, junit = run
    assert traced_tests(junit, project, scratch) == (
        "tests/test_blind.py::test_forks",
        "tests/test_blind.py::test_own_tracer",
        "tests/test_blind.py::test_unmeasured_child",
    )
    assert map_probe.complete(scratch / IMPORTS)
    why = map_probe.blind(scratch / IMPORTS)
    assert why["tests/test_blind.py::test_own_tracer"] == (map_probe.OWN_TRACER,)
    assert why["tests/test_blind.py::test_unmeasured_child"] == (map_probe.UNMEASURED_CHILD,)
    assert why["tests/test_blind.py::test_forks"] == (map_probe.FORKS,)


def test_a_process_that_ran_tests_and_could_not_say_leaves_it_to_coverage(tmp_path: Path) -> None:
    out = tmp_path / IMPORTS
    said: dict[str, object] = {
        "collected": [],
        "by_test": {},
        "before_tests": {"/p/pkg/mod.py": [2]},
        "ran": True,
    }
    controller: dict[str, object] = {"collected": [], "by_test": {}, "before_tests": None, "ran": False}
    Path(f"{out}.1").write_text(json.dumps(said), encoding="utf-8")
    Path(f"{out}.2").write_text(json.dumps(controller), encoding="utf-8")
    assert map_probe.before_tests(out) == {"/p/pkg/mod.py": frozenset({2})}
    other: dict[str, object] = {**said, "before_tests": {"/p/pkg/mod.py": [5], "/p/pkg/b.py": [1]}}
    Path(f"{out}.4").write_text(json.dumps(other), encoding="utf-8")  # another worker: both count
    assert map_probe.before_tests(out) == {
        "/p/pkg/mod.py": frozenset({2, 5}),
        "/p/pkg/b.py": frozenset({1}),
    }
    unsure = {**controller, "ran": True}
    Path(f"{out}.3").write_text(json.dumps(unsure), encoding="utf-8")
    assert map_probe.before_tests(out) is None
    assert map_probe.before_tests(tmp_path / "nothing") is None


def test_a_map_is_complete_only_where_every_process_said_what_it_saw(tmp_path: Path) -> None:
    out = tmp_path / IMPORTS
    said = {"collected": [], "by_test": {}, "blind": {}, "blind_outside": False}
    for pid in ("11", "12"):
        Path(f"{out}-started.{pid}").write_text("", encoding="utf-8")
    Path(f"{out}.11").write_text(json.dumps(said), encoding="utf-8")
    assert not map_probe.complete(out)  # a worker that started its tests and never wrote: it crashed
    Path(f"{out}.12").write_text(json.dumps(said), encoding="utf-8")
    assert map_probe.complete(out)
    Path(f"{out}.13").write_text(json.dumps({**said, "blind_outside": True}), encoding="utf-8")
    assert not map_probe.complete(out)  # a tracer set, or a process started, in no test


class _Server:
    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, str], object]] = []

    def run_tests(
        self, tests: object, exitfirst: bool, env: dict[str, str], timeout: float, swap: object
    ) -> tuple[int, str]:
        self.calls.append((env, swap))
        return 0, ""


def test_a_woven_mutant_is_switched_on_for_the_interpreters_its_tests_start_too() -> None:
    mutant = Mutant("pkg/_core.pyx", "f", "comparison", "a < 1", "a <= 1", 1, 1)
    job = Job(mutant, "pkg._core", "", ("t",), built=Path("copy"), switch=7)
    server = _Server()
    warm._run(server, job, ["t"], 1.0)  # type: ignore[arg-type]
    warm._run(server, job, ["t"], 1.0, mutated=False)  # type: ignore[arg-type]
    (on, swap), (off, none) = server.calls
    assert on == {SWITCH_ENV: "7"}
    assert swap is not None
    assert off == {}
    assert none is None


def test_what_no_test_can_be_named_for_is_noted_apart() -> None:
    probe = map_probe.MapProbe.__new__(map_probe.MapProbe)  # no audit hook for this process
    probe.watch, probe.blind, probe.blind_outside, probe.folder = map_probe._Watch("pkg"), {}, False, None
    probe._audit("os.fork", ())
    assert probe.blind_outside
    assert probe.blind == {}
    probe.watch.test = "tests/test_a.py::test_x"
    probe._audit("os.forkpty", ())
    probe._audit("subprocess.Popen", ("python", ["python"], None, None))  # the environment inherited
    assert probe.blind == {"tests/test_a.py::test_x": {map_probe.FORKS}}


def test_only_the_tools_that_find_a_library_are_taken_to_run_no_python(tmp_path: Path) -> None:
    for tool in ("/sbin/ldconfig", "ldconfig.real", b"/usr/bin/gcc", Path("/usr/bin/objdump"), "ld", "cc"):
        assert not map_probe.may_run_python(tool), tool
    # a launcher, a shell, a wrapper or an interpreter may start Python; so may what cannot be named
    for other in (
        sys.executable,
        "true",
        "/bin/sh",
        "uv",
        "nvidia-smi",
        str(tmp_path / "ldconfig-like"),
        None,
    ):
        assert map_probe.may_run_python(other), other
    probe = map_probe.MapProbe.__new__(map_probe.MapProbe)  # no audit hook for this process
    probe.watch, probe.blind, probe.blind_outside, probe.folder = map_probe._Watch("pkg"), {}, False, None
    probe._audit("subprocess.Popen", ("/sbin/ldconfig", ["/sbin/ldconfig", "-p"], None, {"LC_ALL": "C"}))
    probe._audit("os.posix_spawn", ("/usr/bin/gcc", ["gcc"], {"LC_ALL": "C"}))
    assert not probe.blind_outside
    probe._audit("os.posix_spawn", (sys.executable, [sys.executable], {"LC_ALL": "C"}))
    assert probe.blind_outside

"""The mutmut engine: mutmut's ``mutants/`` read into records, its statuses as verdicts, the diffs, the reuse
rule around its cache and the selection of a change; and, end to end, plain ``mutmut run`` on a tiny project.

The unit tests build ``mutants/`` as mutmut 3.8 writes it and stand a fake in for the ``mutmut run``
subprocess, which judges what is left without a result as ``VERDICTS`` say, as mutmut would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib
import guard_mutation.engines.mutmut as engine
from guard_mutation.config import Config, Edits, Harness
from guard_mutation.engines import GROUP, EngineError, Request
from guard_mutation.engines.mutmut_results import VERDICT_BY_STATUS, State
from guard_mutation.model import INVALID, KILLED, NO_TESTS, SURVIVED, TIMEOUT, Run

F, G = "pkg.mod.x_f__mutmut_1", "pkg.mod.xǁCǁg__mutmut_1"
SOURCE = "def f(a):\n    return a + 1\n\n\nclass C:\n    def g(self):\n        return True\n"
MUTATED = (
    "def x_f__mutmut_orig(a):\n    return a + 1\n"
    "def x_f__mutmut_1(a):\n    return a - 1\n"
    "class C:\n"
    "    def xǁCǁg__mutmut_orig(self):\n        return True\n"
    "    def xǁCǁg__mutmut_1(self):\n        return False\n"
)
SPANS = {
    "x_f__mutmut_orig": [1, 2],
    "x_f__mutmut_1": [3, 4],
    "xǁCǁg__mutmut_orig": [6, 7],
    "xǁCǁg__mutmut_1": [8, 9],
}
TESTS = {
    "tests/test_f.py": "def test_f():\n    assert True\n",
    "tests/test_g.py": "def test_g():\n    assert True\n",
}
PYPROJECT = '[tool.mutmut]\nsource_paths = ["pkg"]\npytest_add_cli_args_test_selection = ["tests"]\n'
VERDICTS = {F: 1, G: 0}  # what the fake mutmut judges: f killed, g survived
FIXTURE = Path(__file__).with_name("mutmut_fixture")
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def meta(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / "mutants/pkg/mod.py.meta").read_text(encoding="utf-8"))
    return data


def stats(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / "mutants/mutmut-stats.json").read_text(encoding="utf-8"))
    return data


def write_meta(root: Path, codes: dict[str, int | None]) -> None:
    data = {
        "exit_code_by_key": codes,
        "hash_by_function_name": {"x_f": "1", "xǁCǁg": "2"},
        "type_check_error_by_key": {},
        "durations_by_key": {name: 0.5 for name, code in codes.items() if code is not None},
        "estimated_durations_by_key": {},
    }
    (root / "mutants/pkg/mod.py.meta").write_text(json.dumps(data, indent=4), encoding="utf-8")


def copy_tests(root: Path) -> None:
    """What every `mutmut run` does first: copy the tests into mutants/."""
    shutil.copytree(root / "tests", root / "mutants/tests", dirs_exist_ok=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with ``mutants/`` as mutmut leaves it after judging f's mutant killed and g's survived."""
    root = tmp_path / "project"
    for rel, text in {
        **TESTS,
        "pyproject.toml": PYPROJECT,
        "pkg/__init__.py": "",
        "pkg/mod.py": SOURCE,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "mutants/pkg").mkdir(parents=True)
    (root / "mutants/pkg/mod.py").write_text(MUTATED, encoding="utf-8")
    (root / "mutants/pkg/__init__.py").write_text("", encoding="utf-8")
    (root / "mutants/pkg/mod.py.spans").write_text(
        json.dumps({"version": 1, "spans": SPANS}), encoding="utf-8"
    )
    write_meta(root, dict(VERDICTS))
    reach = {"pkg.mod.x_f": ["tests/test_f.py::test_f"], "pkg.mod.xǁCǁg": ["tests/test_g.py::test_g"]}
    timed = {"tests/test_f.py::test_f": 0.1, "tests/test_g.py::test_g": 0.1}
    recorded = {"tests_by_mangled_function_name": reach, "duration_by_test": timed, "stats_time": 1.0}
    (root / "mutants/mutmut-stats.json").write_text(json.dumps(recorded), encoding="utf-8")
    copy_tests(root)
    for source in ("pkg/mod.py", "pkg/__init__.py"):  # mutmut's own test of a fresh copy: older source
        os.utime(root / source, (1_000_000, 1_000_000))
        os.utime(root / "mutants" / source, (2_000_000, 2_000_000))
    return root


@dataclass
class FakeMutmut:
    """``mutmut run [NAMES]``: copies the tests, judges the named mutants (or, named none, every one without
    a result), and lets a test say what the stats record meanwhile."""

    root: Path
    calls: list[list[str]] = field(default_factory=list)
    seen: list[dict[str, int | None]] = field(default_factory=list)  # the results as each run found them
    during: Callable[[Path], None] = lambda root: None

    def __call__(self, request: Request, names: list[str]) -> None:
        assert request.root == self.root
        self.calls.append(list(names))
        codes = meta(self.root)["exit_code_by_key"]
        self.seen.append(dict(codes))
        copy_tests(self.root)
        self.during(self.root)
        write_meta(
            self.root,
            {n: VERDICTS[n] if n in names or (not names and c is None) else c for n, c in codes.items()},
        )


@pytest.fixture
def fake(project: Path, monkeypatch: pytest.MonkeyPatch) -> FakeMutmut:
    runner = FakeMutmut(project)
    monkeypatch.setattr(engine, "_mutmut", runner)
    return runner


def request(root: Path, **fields: Any) -> Request:
    return Request(root, Config(root / "mutation_config.toml", root, Harness(), (), Edits(), ()), **fields)


def verdicts(run: Run) -> dict[str, tuple[str, bool]]:
    return {r.mutant.id: (r.outcome.verdict, r.outcome.reused) for r in run.records}


def test_the_engine_is_registered_by_its_entry_point_and_imports_neither_mutmut_nor_libcst() -> None:
    command = (
        "import sys, guard_mutation.engines.mutmut as m\n"
        "print(m.ENGINE.name, sorted({n.split('.')[0] for n in sys.modules} & {'mutmut', 'libcst'}))"
    )
    done = subprocess.run([sys.executable, "-c", command], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["mutmut", "[]"]
    declared = tomllib.loads((SCRIPTS / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "entry-points"
    ]
    value = declared[GROUP]["mutmut"]
    assert EntryPoint("mutmut", value, GROUP).load() is engine.ENGINE


def test_the_meta_files_are_read_into_one_mutant_and_one_outcome_each(
    project: Path, fake: FakeMutmut
) -> None:
    run = engine.ENGINE.run(request(project, options={"from": "results"}))
    assert fake.calls == []
    f, g = run.records
    assert (f.mutant.id, f.mutant.file, f.mutant.line, f.mutant.end_line) == (F, "pkg/mod.py", 2, 2)
    assert (g.mutant.id, g.mutant.line, g.mutant.end_line) == (G, 7, 7)
    assert (f.mutant.engine, f.mutant.operator, f.mutant.function, g.mutant.function) == (
        "mutmut",
        "mutmut",
        "pkg.mod:f",
        "pkg.mod:C.g",
    )
    assert (f.outcome.verdict, f.outcome.seconds, g.outcome.verdict) == (KILLED, 0.5, SURVIVED)
    assert "" != f.outcome.depends != g.outcome.depends != ""
    assert (f.outcome.reused, run.whole) == (False, True)


def test_a_meta_file_left_by_a_deleted_source_is_no_mutant(project: Path) -> None:
    (project / "mutants/pkg/gone.py.meta").write_text(
        json.dumps({"exit_code_by_key": {"pkg.gone.x_h__mutmut_1": 0}})
    )
    assert State(project, "").names() == [F, G]


def test_the_diff_is_the_function_before_and_after_as_mutmut_show_prints_it(project: Path) -> None:
    mutant = State(project, "").mutant(G)
    assert mutant.diff == (
        "--- pkg/mod.py\n+++ pkg/mod.py\n@@ -1,2 +1,2 @@\n def g(self):\n-    return True\n+    return False"
    )
    assert mutant.changed_lines() == ("return True", "return False")


def test_results_without_their_spans_are_refused(project: Path) -> None:
    (project / "mutants/pkg/mod.py.spans").write_text(json.dumps({"version": 1, "spans": {}}))
    with pytest.raises(EngineError, match=r"mod\.py\.spans has no x_f__mutmut_orig"):
        State(project, "").mutant(F)


@pytest.mark.parametrize(
    ("code", "verdict", "status"),
    [
        (1, KILLED, ""),
        (3, KILLED, ""),
        (0, SURVIVED, ""),
        (5, NO_TESTS, ""),
        (33, NO_TESTS, ""),
        (36, TIMEOUT, ""),
        (-24, TIMEOUT, ""),
        (255, TIMEOUT, ""),
        (-11, TIMEOUT, "segfault"),
        (-9, TIMEOUT, "segfault"),
        (37, INVALID, "caught by type check"),
        (34, INVALID, "skipped"),
        (35, INVALID, "suspicious"),
        (99, INVALID, "suspicious"),
        (2, INVALID, "check was interrupted by user"),
        (None, INVALID, "not checked"),
    ],
)
def test_each_status_of_mutmut_maps_onto_one_verdict(
    project: Path, code: int | None, verdict: str, status: str
) -> None:
    write_meta(project, {F: code, G: 0})
    outcome = State(project, "").outcome(F)
    assert outcome.verdict == verdict
    assert outcome.detail == (f"mutmut: {status} (exit status {code})" if status else "")
    assert bool(outcome.depends) == (verdict != INVALID)  # an invalid outcome is never reused


def test_every_status_mutmut_knows_has_a_verdict() -> None:
    from mutmut.stats import status_by_exit_code

    assert set(status_by_exit_code.values()) | {"suspicious"} == set(VERDICT_BY_STATUS)


def test_an_unchanged_project_runs_no_mutmut_and_reuses_every_verdict(
    project: Path, fake: FakeMutmut
) -> None:
    first = engine.ENGINE.run(request(project, options={"from": "results"}))
    again = engine.ENGINE.run(request(project, previous=first))
    assert fake.calls == []
    assert verdicts(again) == {F: (KILLED, True), G: (SURVIVED, True)}
    assert [r.outcome.depends for r in again.records] == [r.outcome.depends for r in first.records]
    assert "mutmut was not run" in again.notes[0]


def test_a_verdict_mutants_no_longer_holds_is_judged_again(project: Path, fake: FakeMutmut) -> None:
    first = engine.ENGINE.run(request(project, options={"from": "results"}))
    write_meta(project, {F: None, G: 0})  # an interrupted `mutmut run F` leaves it so
    run = engine.ENGINE.run(request(project, previous=first))
    assert (fake.calls, verdicts(run)) == ([[]], {F: (KILLED, False), G: (SURVIVED, True)})


def test_a_changed_test_file_clears_the_kill_it_made(project: Path, fake: FakeMutmut) -> None:
    first = engine.ENGINE.run(request(project, options={"from": "results"}))
    (project / "tests/test_f.py").write_text("def test_f():\n    assert 1\n", encoding="utf-8")
    VERDICTS[F] = 0  # the new test no longer kills it
    try:
        run = engine.ENGINE.run(request(project, previous=first))
    finally:
        VERDICTS[F] = 1
    assert fake.calls == [[]]  # plain `mutmut run`
    assert fake.seen == [{F: None, G: 0}]  # the kill cleared before mutmut ran, the survivor kept
    assert verdicts(run) == {F: (SURVIVED, False), G: (SURVIVED, True)}
    assert run.records[0].outcome.depends != first.records[0].outcome.depends
    # mutmut records again what the edited file's tests reach: they are new to it
    assert list(stats(project)["duration_by_test"]) == ["tests/test_g.py::test_g"]


def test_a_comment_in_a_test_file_clears_nothing(project: Path, fake: FakeMutmut) -> None:
    first = engine.ENGINE.run(request(project, options={"from": "results"}))
    (project / "tests/test_f.py").write_text(
        "def test_f():  # still the same\n    assert True\n", encoding="utf-8"
    )
    run = engine.ENGINE.run(request(project, previous=first))
    assert fake.seen == [{F: 1, G: 0}]  # run for the stats of the edited file, every verdict kept
    assert verdicts(run) == {F: (KILLED, True), G: (SURVIVED, True)}


def test_a_deleted_test_file_leaves_mutants_and_clears_its_kill(project: Path, fake: FakeMutmut) -> None:
    first = engine.ENGINE.run(request(project, options={"from": "results"}))
    (project / "tests/test_f.py").unlink()
    run = engine.ENGINE.run(request(project, previous=first))
    assert not (project / "mutants/tests/test_f.py").exists()  # mutmut would run it from its copy still
    assert fake.seen == [{F: None, G: 0}]
    assert verdicts(run)[F] == (KILLED, False)


@pytest.mark.parametrize(
    "changed", ["pkg/__init__.py", "tests/conftest.py", "tests/support.py", "conftest.py"]
)
def test_a_change_of_the_package_or_of_a_helper_of_the_tests_judges_everything_afresh(
    project: Path, fake: FakeMutmut, changed: str
) -> None:
    first = engine.ENGINE.run(request(project, options={"from": "results"}))
    (project / changed).write_text("X = 1\n", encoding="utf-8")  # what every test may see
    run = engine.ENGINE.run(request(project, previous=first))
    assert fake.seen == [{F: None, G: None}]
    assert not (project / "mutants/mutmut-stats.json").exists()  # every test's reach recorded anew
    assert verdicts(run) == {F: (KILLED, False), G: (SURVIVED, False)}


def test_no_previous_run_keeps_no_verdict_and_a_rebuilt_core_is_copied_again(
    project: Path, fake: FakeMutmut
) -> None:
    (project / "pkg/_core.so").write_bytes(b"\x7fELF new")
    (project / "mutants/pkg/_core.so").write_bytes(b"\x7fELF old")  # mutmut copies a built file once
    run = engine.ENGINE.run(request(project))
    assert (project / "mutants/pkg/_core.so").read_bytes() == b"\x7fELF new"
    assert fake.seen == [{F: None, G: None}]
    assert verdicts(run) == {F: (KILLED, False), G: (SURVIVED, False)}


def test_the_listing_reads_a_fresh_mutants_folder_without_judging(project: Path, fake: FakeMutmut) -> None:
    listed = engine.ENGINE.mutants(request(project))
    assert [(m.id, m.function) for m in listed] == [(F, "pkg.mod:f"), (G, "pkg.mod:C.g")]
    assert (fake.calls, meta(project)["exit_code_by_key"]) == ([], VERDICTS)


def test_a_kept_verdict_whose_function_a_changed_test_reaches_now_is_judged_again(
    project: Path, fake: FakeMutmut
) -> None:
    first = engine.ENGINE.run(request(project, options={"from": "results"}))
    (project / "tests/test_f.py").write_text("def test_f():\n    assert 2\n", encoding="utf-8")

    def now_reaches_g(root: Path) -> None:  # what mutmut's stats of the edited (so new) test record
        recorded = stats(root) if (root / "mutants/mutmut-stats.json").exists() else {}
        if recorded:
            recorded["tests_by_mangled_function_name"]["pkg.mod.xǁCǁg"].append("tests/test_f.py::test_f")
            (root / "mutants/mutmut-stats.json").write_text(json.dumps(recorded), encoding="utf-8")

    fake.during = now_reaches_g
    run = engine.ENGINE.run(request(project, previous=first))
    assert fake.calls == [[], [G]]
    assert verdicts(run) == {F: (KILLED, False), G: (SURVIVED, False)}


def test_only_names_the_mutants_to_judge_and_keeps_the_rest(project: Path, fake: FakeMutmut) -> None:
    first = engine.ENGINE.run(request(project, options={"from": "results"}))
    (project / "tests/test_g.py").write_text("def test_g():\n    assert 3\n", encoding="utf-8")
    run = engine.ENGINE.run(request(project, only=(G, F), previous=first))
    assert fake.calls == [[G]]  # f's kept verdict is not judged again
    assert (verdicts(run), run.whole) == ({F: (KILLED, True), G: (SURVIVED, False)}, False)
    with pytest.raises(EngineError, match=r"no mutant named pkg\.mod\.x_nothing__mutmut_1"):
        engine.ENGINE.run(request(project, only=("pkg.mod.x_nothing__mutmut_1",)))


@dataclass(frozen=True)
class Change:
    functions: frozenset[str] = frozenset()
    tests: frozenset[str] = frozenset()

    def touches(self, file: str, first: int, last: int) -> bool:
        return False

    def changed_test(self, test: str) -> bool:
        return test.partition("::")[0] in self.tests


@pytest.mark.parametrize(
    ("change", "names"),
    [
        (Change(functions=frozenset({"pkg.mod:C.g"})), [G]),
        (Change(functions=frozenset({"pkg.mod:C.g.inner"})), [G]),  # mutmut mutates it as part of C.g
        (Change(functions=frozenset({"pkg.mod:f", "pkg.other:h"})), [F]),
        (Change(tests=frozenset({"tests/test_f.py"})), [F]),  # the functions its tests reached
        (Change(functions=frozenset({"pkg.mod:C"})), []),  # a class's own lines: no function of mutmut's
    ],
)
def test_a_change_selects_its_functions_and_those_its_tests_reached(
    project: Path, fake: FakeMutmut, change: Change, names: list[str]
) -> None:
    run = engine.ENGINE.run(request(project, change=change))
    assert fake.calls == ([names] if names else [])
    assert ([r.mutant.id for r in run.records], run.whole) == (names, False)


def test_results_without_mutants_are_refused(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match=r"no mutmut results here; run `mutmut run`"):
        engine.ENGINE.run(request(tmp_path, options={"from": "results"}))


def test_a_failed_mutmut_run_is_an_engine_error(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    failing = project / "bin/mutmut"
    failing.parent.mkdir()
    failing.write_text(
        "#!/bin/sh\necho 'failed to collect stats. runner returned 1'\nexit 1\n", encoding="utf-8"
    )
    failing.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(project / "bin/python"))
    with pytest.raises(EngineError, match=r"exit status 1.*failed to collect stats"):
        engine.ENGINE.run(request(project))


@pytest.mark.e2e
def test_plain_mutmut_run_end_to_end(tmp_path: Path) -> None:
    root = shutil.copytree(FIXTURE, tmp_path / "tinycalc")
    listed = engine.ENGINE.mutants(request(root))  # mutmut's generation step, no test run
    names = [
        "tinycalc.ops.x_add__mutmut_1",
        "tinycalc.ops.x_is_adult__mutmut_1",
        "tinycalc.ops.x_is_adult__mutmut_2",
    ]
    assert [m.id for m in listed] == names
    assert State(root, "").entries[names[0]].exit_code is None

    first = engine.ENGINE.run(request(root, jobs=2))
    assert verdicts(first) == {
        names[0]: (KILLED, False),
        names[1]: (SURVIVED, False),
        names[2]: (SURVIVED, False),
    }
    shown = subprocess.run(
        [str(Path(sys.executable).with_name("mutmut")), "show", names[1]],
        cwd=root,
        capture_output=True,
        check=True,
        text=True,
    )
    assert shown.stdout.split("\n", 1)[1].strip() == first.records[1].mutant.diff
    assert (first.records[1].mutant.line, first.records[1].mutant.function) == (9, "tinycalc.ops:is_adult")

    second = engine.ENGINE.run(request(root, jobs=2, previous=first))
    assert "mutmut was not run" in second.notes[0]
    assert all(r.outcome.reused for r in second.records)

    # a test of add's that now reaches is_adult, at its boundary: mutmut learns it, is_adult goes again
    check = root / "tests/check_add.py"
    adult = (
        "def test_adult_at_18() -> None:\n    from tinycalc.ops import is_adult\n\n    assert is_adult(18)\n"
    )
    check.write_text(check.read_text() + "\n\n" + adult)
    third = engine.ENGINE.run(request(root, jobs=2, previous=second))
    assert verdicts(third) == {name: (KILLED, False) for name in names}
    read = engine.ENGINE.run(request(root, options={"from": "results"}))
    assert {r.mutant.id: r.outcome for r in read.records} == {r.mutant.id: r.outcome for r in third.records}

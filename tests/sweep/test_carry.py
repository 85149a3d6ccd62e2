"""Verdicts carried test by test: a kill while its killer is unchanged, a survivor against the new and
changed tests alone; everything else judged whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from mutation_changes import changed_code_lines, changed_tests_within, spans_of_tests
from mutation_model import KILLED, SURVIVED, TIMEOUT
from mutation_sweep import carry, select_tests, suite_code
from mutation_sweep.results import ResultsError, SweepResults, load, universe_of
from mutation_sweep.work_item import Mutant, Result

A = Mutant("pkg/m.py", "f", "comparison", "a < 1", "a <= 1", 2, 2)
B = Mutant("pkg/m.py", "g", "comparison", "b < 1", "b <= 1", 5, 5)
C = Mutant("pkg/m.py", "<module>", "delete-statement", "X = 1", "pass", 8, 8, at_import=True)
T1, T2, T3 = (f"tests/test_a.py::test_{n}" for n in ("one", "two", "three"))
MAP = select_tests.TestMap(
    {"pkg/m.py": {2: (T1, T2), 5: (T1,), 8: (T1,)}}, ("tests/test_a.py",), seconds={T1: 0.1, T2: 0.2}
)
TESTS = """import pytest


def helper():
    return 1


def test_one():
    assert helper() == 1


@pytest.mark.parametrize("n", [1, 2])
def test_two(n):
    assert n
"""


def _suite(
    tests: dict[str, str], *, package: str = "p", python: str = "3.11", helpers: str = "h"
) -> carry.Suite:
    return carry.Suite(python, package, helpers, tests)


def _carry(earlier: list[Result], before: carry.Suite, now: carry.Suite, **kw: object) -> carry.Carried:
    return carry.carry([A, B, C], earlier, before, now, mapping=MAP, root=Path("."), files=["pkg/m.py"], **kw)  # type: ignore[arg-type]


def test_a_test_is_its_own_code_and_its_files_shared_code(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    path = tmp_path / "tests/test_a.py"
    path.write_text(TESTS, encoding="utf-8")
    ids = [T1, f"{T2}[1]", "tests/test_a.py::Machine::runTest", "tests/gone.py::test_x"]
    before = suite_code.digests(tmp_path, ids)
    # parameters dropped, a gone file left out
    assert sorted(before) == sorted([T1, T2, "tests/test_a.py::Machine::runTest"])
    path.write_text(TESTS.replace("assert n\n", "assert n  # spacing and a note\n"), encoding="utf-8")
    assert suite_code.digests(tmp_path, ids) == before
    path.write_text(TESTS.replace("assert n\n", "assert n > 0\n"), encoding="utf-8")
    assert suite_code.changed(before, suite_code.digests(tmp_path, ids)) == (T2,)
    path.write_text(TESTS.replace("[1, 2]", "[1, 3]"), encoding="utf-8")  # a decorator is the test's own
    assert suite_code.changed(before, suite_code.digests(tmp_path, ids)) == (T2,)
    path.write_text(TESTS.replace("return 1", "return 2"), encoding="utf-8")  # shared: every test of the file
    assert suite_code.changed(before, suite_code.digests(tmp_path, ids)) == tuple(sorted(before))


def test_a_change_inside_tests_names_them_and_any_other_names_the_whole_file() -> None:
    assert set(spans_of_tests(TESTS)) == {"test_one", "test_two"}
    added = TESTS + "\n\ndef test_three():\n    assert True\n"
    assert changed_tests_within(TESTS, added, {17, 18}) == frozenset({"test_three"})
    assert changed_tests_within(TESTS, TESTS.replace("[1, 2]", "[1, 3]"), {12}) == frozenset({"test_two"})
    assert changed_tests_within(TESTS, TESTS.replace("return 1", "return 2"), {5}) is None  # a helper
    assert changed_tests_within(TESTS, "import pytest\n" + TESTS, {1}) is None  # module level
    # a test removed may have been a killer: the whole file counts, though the lines either side are tests
    gone = added.replace('@pytest.mark.parametrize("n", [1, 2])\ndef test_two(n):\n    assert n\n\n\n', "")
    assert changed_code_lines(added, gone) == {9, 12}
    assert changed_tests_within(added, gone, {9, 12}) is None


def test_a_kill_is_carried_while_its_killer_is_unchanged() -> None:
    earlier = [Result(A, KILLED, (T1, T2), f"{T2}[1]", depends="d")]
    carried = _carry(earlier, _suite({T1: "1", T2: "2"}), _suite({T1: "x", T2: "2", T3: "3"}))
    assert [r.mutant.id for r in carried.kept] == [A.id]
    assert carried.kept[0].verdict == KILLED
    for now in ({T1: "1", T2: "changed"}, {T1: "1"}):  # the killer changed, or is gone
        assert A in _carry(earlier, _suite({T1: "1", T2: "2"}), _suite(now)).whole


def test_a_survivor_runs_only_the_new_and_changed_tests_that_reach_it() -> None:
    earlier = [Result(A, SURVIVED, (T1, T2), depends="d"), Result(B, SURVIVED, (T1,), depends="d")]
    carried = _carry(earlier, _suite({T1: "1", T2: "2"}), _suite({T1: "1", T2: "changed", T3: "new"}))
    # T3 reaches neither line; T2 reaches A's and not B's: B's verdict holds whole
    assert carried.narrowed == {A.id: (T2,)}
    assert [r.mutant.id for r in carried.kept] == [B.id]
    passed = carry.merged(Result(A, SURVIVED, (T2,)), carried)
    assert passed.verdict == SURVIVED
    assert passed.tests == (T1, T2)
    assert "carried" in passed.detail
    killed = Result(A, KILLED, (T2,), T2)
    assert carry.merged(killed, carried) == killed


@pytest.mark.parametrize(
    ("before", "now", "scoped"),
    [
        (_suite({T1: "1"}, python="3.11"), _suite({T1: "1"}, python="3.12"), ()),
        (_suite({T1: "1"}, helpers="h"), _suite({T1: "1"}, helpers="changed"), ()),
        (_suite({T1: "1"}, package="p"), _suite({T1: "1"}, package="changed"), ()),
        (None, _suite({T1: "1"}), ()),
    ],
    ids=["another-python", "a-helper-changed", "the-package-changed", "no-earlier-suite"],
)
def test_nothing_is_carried_where_what_every_verdict_depends_on_changed(
    before: carry.Suite | None, now: carry.Suite, scoped: tuple[str, ...]
) -> None:
    earlier = [Result(A, KILLED, (T1,), T1, depends="d"), Result(B, SURVIVED, (T1,), depends="d")]
    carried = _carry(earlier, before, now)  # type: ignore[arg-type]
    assert carried.whole == [A, B, C]
    assert not carried.kept
    assert not carried.narrowed


def test_a_scoped_run_carries_what_a_changed_test_alone_chose_though_the_package_changed() -> None:
    earlier = [Result(A, KILLED, (T1,), T1, depends="d"), Result(B, KILLED, (T1,), T1, depends="d")]
    carried = _carry(earlier, _suite({T1: "1"}), _suite({T1: "1"}, package="changed"), scoped={B.id})
    assert [r.mutant.id for r in carried.kept] == [B.id]
    assert carried.whole == [A, C]


def test_only_a_recorded_kill_or_survivor_is_carried_and_an_import_survivor_never() -> None:
    earlier = [
        Result(A, TIMEOUT, (T1,), depends="d"),
        Result(B, SURVIVED, (T1,)),  # recorded before verdicts had their inputs
        Result(C, SURVIVED, (T1,), depends="d"),  # proved through the import's phases
    ]
    assert _carry(earlier, _suite({T1: "1"}), _suite({T1: "changed"})).whole == [A, B, C]
    imported = [Result(C, KILLED, (T1,), T1, depends="d")]
    assert [r.mutant for r in _carry(imported, _suite({T1: "1"}), _suite({T1: "1"})).kept] == [C]


def test_a_run_keeps_its_suite_and_a_malformed_one_is_refused(tmp_path: Path) -> None:
    suite = _suite({T1: "1"})
    path = tmp_path / "r.json"
    SweepResults([Result(A, KILLED)], universe_of([A.id]), suite=suite).write(path)
    assert load(path).suite == suite
    text = path.read_text(encoding="utf-8").replace('"helpers": "h"', '"helpers": 3')
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ResultsError, match=r"r\.json: 'suite' must hold"):
        load(path)

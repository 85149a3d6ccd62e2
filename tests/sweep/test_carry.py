"""Verdicts carried test by test: a kill while its killer is unchanged, a survivor against the new and
changed tests alone; everything else judged whole."""

from __future__ import annotations

import ast
from collections import Counter
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest
from mutation_changes import changed_code_lines, changed_tests_within, digest, imported_tests, spans_of_tests
from mutation_environment import digest_of
from mutation_model import KILLED, SURVIVED, TIMEOUT
from mutation_sweep import carry, jobs, select_tests, suite_code
from mutation_sweep.generate import Generated
from mutation_sweep.results import ResultsError, SweepResults, load, universe_of
from mutation_sweep.runners import forked
from mutation_sweep.select_tests import SUITE
from mutation_sweep.work_item import IMPORT_FAILED, Mutant, Result

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
    tests: dict[str, str],
    *,
    package: str = "p",
    python: str = "3.11",
    helpers: str = "h",
    core_built: bool | None = True,
    environment: str = "e",
) -> carry.Suite:
    return carry.Suite(python, package, helpers, tests, core_built, environment)


def _carry(
    earlier: list[Result],
    before: carry.Suite | None,
    now: carry.Suite,
    *,
    mapping: select_tests.TestMap = MAP,
    scoped: frozenset[str] | set[str] = frozenset(),
    package_at_ref: str = "",
) -> carry.Carried:
    return carry.carry(
        [A, B, C],
        earlier,
        before,
        now,
        mapping=mapping,
        root=Path("."),
        files=["pkg/m.py"],
        scoped=scoped,
        package_at_ref=package_at_ref,
    )


def test_a_test_is_its_own_code_and_its_files_shared_code(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    path = tmp_path / "tests/test_a.py"
    path.write_text(TESTS, encoding="utf-8")
    machine = "tests/test_a.py::Machine::runTest"
    ids = [T1, f"{T2}[1]", machine, "tests/gone.py::test_x"]
    before = suite_code.digests(tmp_path, ids, ran=ids)
    # parameters dropped, a gone file left out
    assert sorted(before) == sorted([T1, T2, machine])
    path.write_text(TESTS.replace("assert n\n", "assert n  # spacing and a note\n"), encoding="utf-8")
    assert suite_code.digests(tmp_path, ids, ran=ids) == before
    path.write_text(TESTS.replace("assert n\n", "assert n > 0\n"), encoding="utf-8")
    # a test that is no function of its own (a state machine's TestCase) depends on the whole file
    assert suite_code.changed(before, suite_code.digests(tmp_path, ids, ran=ids)) == (machine, T2)
    path.write_text(TESTS.replace("[1, 2]", "[1, 3]"), encoding="utf-8")  # a decorator is the test's own
    assert suite_code.changed(before, suite_code.digests(tmp_path, ids, ran=ids)) == (machine, T2)
    path.write_text(TESTS.replace("return 1", "return 2"), encoding="utf-8")  # shared: every test of the file
    assert suite_code.changed(before, suite_code.digests(tmp_path, ids, ran=ids)) == tuple(sorted(before))
    path.write_text(TESTS, encoding="utf-8")
    # a test the map's run skipped then and runs now, or the other way, is a changed test
    assert suite_code.changed(before, suite_code.digests(tmp_path, ids, ran=[T1, machine])) == (T2,)


def test_only_what_pytest_collects_is_a_test_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    mixin = (
        "class Contract:\n    def test_restores(self):\n        assert True\n\n\n"
        "class TestPython(Contract):\n    def test_own(self):\n        assert True\n"
    )
    path = tmp_path / "tests/test_m.py"
    path.write_text(mixin, encoding="utf-8")
    assert set(spans_of_tests(ast.parse(mixin))) == {"TestPython.test_own"}
    inherited, own = "tests/test_m.py::TestPython::test_restores", "tests/test_m.py::TestPython::test_own"
    before = suite_code.digests(tmp_path, [inherited, own])
    path.write_text(mixin.replace("assert True", "assert 1", 1), encoding="utf-8")  # the mixin's method
    assert suite_code.changed(before, suite_code.digests(tmp_path, [inherited, own])) == (own, inherited)


def test_a_test_file_another_imports_from_is_part_of_its_shared_code(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_a.py").write_text("def make():\n    return 1\n", encoding="utf-8")
    (tmp_path / "tests/test_b.py").write_text(
        "from .test_a import make\n\n\ndef test_b():\n    assert make()\n", encoding="utf-8"
    )
    (tmp_path / "tests/support.py").write_text(
        "HELP = 1\n", encoding="utf-8"
    )  # a helper: the suite's, not its
    source = "from .support import HELP\nfrom . import test_a\nimport tests.test_a\n"
    assert imported_tests("tests/test_b.py", ast.parse(source), tmp_path) == {"tests/test_a.py"}
    before = suite_code.digests(tmp_path, ["tests/test_b.py::test_b"])
    (tmp_path / "tests/test_a.py").write_text("def make():\n    return 0\n", encoding="utf-8")
    assert suite_code.changed(before, suite_code.digests(tmp_path, ["tests/test_b.py::test_b"]))


def test_a_change_inside_tests_names_them_and_any_other_names_the_whole_file() -> None:
    assert set(spans_of_tests(ast.parse(TESTS))) == {"test_one", "test_two"}
    added = TESTS + "\n\ndef test_three():\n    assert True\n"
    assert changed_tests_within(TESTS, added, {17, 18}) == frozenset({"test_three"})
    assert changed_tests_within(TESTS, TESTS.replace("[1, 2]", "[1, 3]"), {12}) == frozenset({"test_two"})
    assert changed_tests_within(TESTS, TESTS.replace("return 1", "return 2"), {5}) is None  # a helper
    assert changed_tests_within(TESTS, "import pytest\n" + TESTS, {1}) is None  # module level
    # a test removed may have been a killer: the whole file counts, though the lines either side are tests
    gone = added.replace('@pytest.mark.parametrize("n", [1, 2])\ndef test_two(n):\n    assert n\n\n\n', "")
    assert changed_code_lines(added, gone) == {9, 12}
    assert changed_tests_within(added, gone, {9, 12}) is None
    # a fixture removed from between two tests marks only the lines either side, inside those tests
    fixture = "@pytest.fixture(autouse=True)\ndef guard():\n    yield\n\n\n"
    with_fixture = added.replace("@pytest.mark.parametrize", fixture + "@pytest.mark.parametrize")
    assert changed_tests_within(with_fixture, added, changed_code_lines(with_fixture, added)) is None
    assert changed_tests_within("def test_one(:\n", added, {17}) is None  # the old version did not parse
    assert changed_tests_within(added, "def test_one(:\n", {1}) is None  # nor the new one


def test_a_kill_is_carried_while_its_killer_and_what_ran_before_it_are_unchanged() -> None:
    earlier = [Result(A, KILLED, (T1, T2), f"{T2}[1]", depends="d")]
    was = _suite({T1: "1", T2: "2"})
    carried = _carry(earlier, was, _suite({T1: "1", T2: "2", T3: "new"}))
    assert [r.mutant.id for r in carried.kept] == [A.id]
    assert carried.kept[0].verdict == KILLED
    assert not carried.kept[0].depends  # no digest vouches for a verdict carried in part
    for now in (
        {T1: "1", T2: "changed"},  # the killer changed
        {T1: "1"},  # the killer is gone
        {T1: "changed", T2: "2"},  # a test that ran before the killer changed: the kill may have needed it
        {T2: "2"},  # a test that ran before the killer is gone
    ):
        assert A in _carry(earlier, was, _suite(now)).whole
    # killed in a later phase (the traced tests) by a test that changed since
    traced = [Result(A, KILLED, (T1,), T2, depends="d")]
    assert A in _carry(traced, was, _suite({T1: "1", T2: "changed"})).whole
    # the killer no longer reaches the mutant (skipped on this machine, say)
    skipped = select_tests.TestMap({"pkg/m.py": {2: (T1,)}}, ("tests/test_a.py",))
    assert A in _carry(earlier, was, _suite({T1: "1", T2: "2"}), mapping=skipped).whole
    # the whole suite ran before the kill: any test changed since may have mattered, a new one not
    suite = [Result(A, KILLED, (SUITE,), T2, depends="d")]
    assert [r.mutant for r in _carry(suite, was, _suite({T1: "1", T2: "2", T3: "new"})).kept] == [A]
    assert A in _carry(suite, was, _suite({T1: "changed", T2: "2"})).whole
    assert A in _carry(suite, was, _suite({T2: "2"})).whole


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
        (_suite({T1: "1"}, environment="e"), _suite({T1: "1"}, environment="changed"), ()),
        (_suite({T1: "1"}, environment=""), _suite({T1: "1"}), ()),
        (None, _suite({T1: "1"}), ()),
    ],
    ids=[
        "another-python",
        "a-helper-changed",
        "the-package-changed",
        "how-the-tests-run-changed",
        "an-earlier-suite-that-recorded-no-environment",
        "no-earlier-suite",
    ],
)
def test_nothing_is_carried_where_what_every_verdict_depends_on_changed(
    before: carry.Suite | None, now: carry.Suite, scoped: tuple[str, ...]
) -> None:
    earlier = [Result(A, KILLED, (T1,), T1, depends="d"), Result(B, SURVIVED, (T1,), depends="d")]
    carried = _carry(earlier, before, now)
    assert carried.whole == [A, B, C]
    assert not carried.kept
    assert not carried.narrowed


def test_a_scoped_run_carries_what_a_changed_test_alone_chose_where_the_earlier_run_judged_its_ref() -> None:
    earlier = [Result(A, KILLED, (T1,), T1, depends="d"), Result(B, KILLED, (T1,), T1, depends="d")]
    before, now = _suite({T1: "1"}, package="at-ref"), _suite({T1: "1"}, package="changed")
    carried = _carry(earlier, before, now, scoped={B.id}, package_at_ref="at-ref")
    assert [r.mutant.id for r in carried.kept] == [B.id]
    assert carried.whole == [A, C]
    # an earlier run of another commit than the ref: B's own code may have changed in between
    assert _carry(earlier, before, now, scoped={B.id}, package_at_ref="other").whole == [A, B, C]


def test_a_survivor_with_no_single_test_of_its_own_runs_every_new_and_changed_test(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/m.py").write_text("def f(a):\n    return a < 1\n", encoding="utf-8")
    # no map of the core's lines: the tests of the reference's f are a guess, and its proof the whole suite's
    core = Mutant("pkg/c.pyx", "f", "comparison", "a < 1", "a <= 1", 2, 2)
    alone = Mutant("pkg/m.py", "h", "comparison", "c < 1", "c <= 1", 9, 9)  # no test reaches line 9
    earlier = [Result(m, SURVIVED, (T1,), depends="d") for m in (core, alone)]
    now = _suite({T1: "1", T2: "changed", T3: "new"})
    carried = carry.carry(
        [core, alone],
        earlier,
        _suite({T1: "1", T2: "2"}),
        now,
        mapping=MAP,
        root=tmp_path,
        files=["pkg/m.py"],
    )
    assert carried.narrowed == {core.id: (T3, T2), alone.id: (T3, T2)}


def test_a_file_in_the_map_stands_for_its_tests_and_the_traced_tests_reach_every_mutant() -> None:
    by_file = select_tests.TestMap({"pkg/m.py": {2: ("tests/test_a.py",), 5: ("tests/test_b.py::t",)}}, ())
    traced = select_tests.TestMap({"pkg/m.py": {2: (T1,), 5: (T1,)}}, (), (T3,))
    earlier = [Result(A, SURVIVED, (T1,), depends="d"), Result(B, SURVIVED, (T1,), depends="d")]
    was, now = _suite({T1: "1", T2: "2"}), _suite({T1: "1", T2: "changed", T3: "new"})
    assert _carry(earlier, was, now, mapping=by_file).narrowed == {A.id: (T3, T2)}
    assert _carry(earlier, was, now, mapping=traced).narrowed == {A.id: (T3,), B.id: (T3,)}


def test_a_runs_record_holds_every_test_the_map_saw_and_whether_it_was_skipped(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_a.py").write_text(TESTS, encoding="utf-8")
    mapping = select_tests.TestMap(
        {"pkg/m.py": {2: (T1,)}},
        (),
        (f"{T2}[1]",),
        {T3: 0.0, "tests/test_a.py": 1.0},
        skipped=frozenset({T3}),
    )
    suite = carry.suite_of(tmp_path, [], ["tests"], mapping)
    assert suite.tests == suite_code.digests(tmp_path, [T1, T2, T3], ran=[T1, T2])
    assert suite.tests[T3] != suite_code.digests(tmp_path, [T3], ran=[T3])[T3]  # skipped in the map's run


def test_a_narrowed_survivor_runs_those_tests_alone(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/m.py").write_text("def f(a):\n    return a < 1\n", encoding="utf-8")
    generated = Generated([A], {A.id: ""}, Counter(), {})
    mapping = select_tests.TestMap({"pkg/m.py": {2: (T1, T2)}}, ("tests/test_a.py",), (T3,), {T1: 0.1})
    made, _ = jobs.make(
        [A],
        generated,
        root=tmp_path,
        files=[],
        mapping=mapping,
        scratch=tmp_path,
        parallel=1,
        only={A.id: (T2,)},
    )
    assert [(j.tests, j.then_tests, j.then_suite) for j in made] == [((T2,), (), False)]


def test_only_a_recorded_kill_or_survivor_is_carried() -> None:
    earlier = [
        Result(A, TIMEOUT, (T1,), depends="d"),
        Result(B, SURVIVED, (T1,)),  # recorded before verdicts had their inputs
    ]
    assert _carry(earlier, _suite({T1: "1"}), _suite({T1: "changed"})).whole == [A, B, C]
    imported = [Result(C, KILLED, (T1,), T1, depends="d")]
    assert [r.mutant for r in _carry(imported, _suite({T1: "1"}), _suite({T1: "1"})).kept] == [C]


def test_a_survivor_of_what_runs_at_import_runs_every_new_and_changed_test_whatever_coverage_says() -> None:
    # Coverage ties line 8 to T1 alone, but every test may see what the import left: T3, new, and T2,
    # changed, run too. A header's survivor is the same.
    header = Mutant("pkg/m.py", "g", "drop-element", "b=1", "b", 4, 4, definition=True)
    earlier = [
        Result(C, SURVIVED, (SUITE,), depends="d"),
        Result(header, SURVIVED, (T1,), depends="d"),
    ]
    carried = carry.carry(
        [C, header],
        earlier,
        _suite({T1: "1", T2: "2"}),
        _suite({T1: "1", T2: "changed", T3: "3"}),
        mapping=MAP,
        root=Path("."),
        files=["pkg/m.py"],
    )
    assert carried.narrowed == {C.id: (T3, T2), header.id: (T3, T2)}
    assert (carried.kept, carried.whole) == ([], [])
    unchanged = _carry([Result(C, SURVIVED, (SUITE,), depends="d")], _suite({T1: "1"}), _suite({T1: "1"}))
    assert [r.mutant for r in unchanged.kept] == [C]


def test_a_narrowed_survivor_of_what_runs_at_import_runs_its_tests_alone_on_each_implementation(
    tmp_path: Path,
) -> None:
    # Not the import's phases (the comparisons, the whole suite): the earlier run proved those for every
    # unchanged test. Where the module loads under a built core too, the same tests run there after.
    (tmp_path / "guard_lib").mkdir()
    (tmp_path / "guard_lib" / "a.py").write_text("a = 1\n", encoding="utf-8")
    (tmp_path / "guard_lib" / "_core.pyx").write_text("", encoding="utf-8")
    mutant = Mutant("guard_lib/a.py", "<module>", "replace-value", "1", "3", 1, 1, at_import=True)
    generated = Generated([mutant], {mutant.id: ""}, Counter(), {})
    mapping = select_tests.TestMap(
        {"guard_lib/a.py": {1: (T1,)}}, ("t",), collected=("guard_lib", "guard_lib.a"), seconds={T1: 0.1}
    )

    def made() -> forked.Job:
        found, _ = jobs.make(
            [mutant],
            generated,
            root=tmp_path,
            files=["guard_lib/_core.pyx", "guard_lib/a.py"],
            mapping=mapping,
            scratch=tmp_path,
            parallel=1,
            only={mutant.id: (T2,)},
        )
        assert len(found) == 1
        return found[0]

    alone = made()
    assert (alone.tests, alone.then_state, alone.then_tests, alone.then_suite) == ((T2,), (), (), False)
    assert (alone.then_compiled, alone.again_compiled, alone.warm) == (False, False, False)
    assert forked.next_phase(alone) is None
    (tmp_path / "guard_lib" / f"_core{EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    both = made()
    assert (both.tests, both.then_state, both.then_compiled, both.again_compiled) == ((T2,), (), False, True)
    on_core = forked.next_phase(both)
    assert on_core is not None
    assert (on_core.tests, on_core.impl, on_core.again_compiled) == ((T2,), "compiled", False)
    assert forked.next_phase(on_core) is None


def test_a_run_keeps_its_suite_and_a_malformed_one_is_refused(tmp_path: Path) -> None:
    suite = _suite({T1: "1"})
    path = tmp_path / "r.json"
    SweepResults([Result(A, KILLED)], universe_of([A.id]), suite=suite).write(path)
    assert load(path).suite == suite
    text = path.read_text(encoding="utf-8").replace('"helpers": "h"', '"helpers": 3')
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ResultsError, match=r"r\.json: 'suite' must hold"):
        load(path)


def test_a_kill_by_a_failed_import_of_python_is_kept_whatever_the_tests_are() -> None:
    # No test ran: the mutated module did not import. Every test changed, and none reaches it by the map.
    earlier = [Result(A, KILLED, (SUITE,), IMPORT_FAILED, depends="d")]
    carried = _carry(earlier, _suite({T1: "1", T2: "2"}), _suite({T3: "3"}))
    assert [(r.mutant, r.verdict, r.failed) for r in carried.kept] == [(A, KILLED, IMPORT_FAILED)]
    assert carried.whole == [B, C]
    assert _carry(earlier, _suite({T1: "1"}), _suite({T1: "1"}, package="changed")).whole == [A, B, C]
    # a compiled mutant's import depends on its build too: no test-level rule keeps it
    core = Mutant("pkg/core.pyx", "f", "comparison", "a < 1", "a <= 1", 2, 2)
    compiled = carry.carry(
        [core],
        [Result(core, KILLED, (SUITE,), IMPORT_FAILED, depends="d")],
        _suite({T1: "1"}),
        _suite({T3: "3"}),
        mapping=MAP,
        root=Path("."),
        files=["pkg/core.pyx"],
    )
    assert compiled.whole == [core]


def test_a_survivor_of_what_runs_at_import_is_narrowed_only_where_the_core_was_built_as_now() -> None:
    # Its earlier proof ran on the core only where the core was built then; the narrowed job runs there
    # only where it is built now. Unknown (an older record) or different: judged whole.
    earlier = [Result(C, SURVIVED, (SUITE,), depends="d")]
    same: list[tuple[bool | None, bool | None]] = [(True, True), (False, False)]
    for before, now in same:
        carried = _carry(earlier, _suite({T1: "1"}, core_built=before), _suite({T1: "2"}, core_built=now))
        assert carried.narrowed == {C.id: (T1,)}
    differ: list[tuple[bool | None, bool | None]] = [(None, True), (None, None), (False, True), (True, False)]
    for before, now in differ:
        carried = _carry(earlier, _suite({T1: "1"}, core_built=before), _suite({T1: "2"}, core_built=now))
        assert C in carried.whole
    # a body's survivor ran on one implementation, whatever was built
    body = [Result(B, SURVIVED, (T1,), depends="d")]
    assert B.id in _carry(body, _suite({T1: "1"}, core_built=None), _suite({T1: "2"})).narrowed


def test_a_suite_records_whether_the_core_was_built_and_an_older_record_reads_as_unknown(
    tmp_path: Path,
) -> None:
    suite = _suite({T1: "1"})
    assert carry.Suite.from_json(suite.to_json()) == suite
    older = {k: v for k, v in suite.to_json().items() if k != "core_built"}
    assert carry.Suite.from_json(older).core_built is None
    with pytest.raises(ValueError, match="'core_built' must be true, false or null"):
        carry.Suite.from_json({**older, "core_built": "yes"})
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "core.pyx").write_text("cdef int y = 1\n", encoding="utf-8")
    empty = select_tests.TestMap({}, ())
    assert carry.suite_of(tmp_path, ["pkg/core.pyx"], [], empty).core_built is False
    (tmp_path / "pkg" / f"core{EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    assert carry.suite_of(tmp_path, ["pkg/core.pyx"], [], empty).core_built is True


def test_a_suite_records_how_the_tests_ran_and_an_older_record_carries_nothing(tmp_path: Path) -> None:
    empty = select_tests.TestMap({}, ())
    suite = carry.suite_of(tmp_path, [], ["tests", "-x"], empty)
    assert suite.environment == digest([digest_of(tmp_path, ["tests", "-x"]), "tests", "-x"])
    older = {k: v for k, v in _suite({T1: "1"}).to_json().items() if k != "environment"}
    assert carry.Suite.from_json(older).environment == ""
    with pytest.raises(ValueError, match="'environment' must be a string"):
        carry.Suite.from_json({**older, "environment": 1})


def test_what_a_scoped_run_carried_past_a_package_change_keeps_no_digest() -> None:
    # A (narrowed) and B (a kill kept) were chosen only because a changed test reaches them, and carried
    # with the package elsewhere taken as judged before; C was judged here, and D carried but chosen for
    # its own changed line: only A's and B's digests go.
    D = Mutant("pkg/m.py", "h", "comparison", "d < 1", "d <= 1", 9, 9)
    kept = [Result(B, KILLED, (T1,), T1), Result(D, KILLED, (T1,), T1)]
    carried = carry.Carried(kept, {A.id: (T2,)}, {}, [C])
    judged = [Result(m, KILLED, (T1,), T1, depends=f"d-{m.line}") for m in (A, B, C, D)]
    vouched = carry.vouched(judged, carried, {A.id, B.id, C.id})
    assert [r.depends for r in vouched] == ["", "", "d-8", "d-9"]
    assert carry.vouched(judged, carried, ()) == judged  # a whole run carried nothing past a change

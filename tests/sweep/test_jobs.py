"""What a sweep runs: the woven build checked beside its mutants, on the tests they run."""

from __future__ import annotations

import dataclasses
from collections import Counter
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest
from mutation_model import KILLED, SURVIVED
from mutation_sweep import compiled_coverage, jobs, select_tests, selection
from mutation_sweep.generate import Generated
from mutation_sweep.runners import forked
from mutation_sweep.select_tests import SUITE
from mutation_sweep.work_item import Mutant, Result

WOVEN = Path("/copies/woven")


def _mutant(line: int) -> Mutant:
    return Mutant("guard_lib/_core.pyx", "f", "comparison", f"a < {line}", f"a <= {line}", line, line)


def _job(line: int, tests: tuple[str, ...], then_suite: bool = False, switch: int | None = 1) -> forked.Job:
    return forked.Job(
        _mutant(line), "guard_lib._core", "", tests, ("t",), then_suite, built=WOVEN, switch=switch
    )


def test_the_check_runs_every_test_its_woven_mutants_run_and_the_suite_where_one_will() -> None:
    mapping = select_tests.TestMap({}, ("tests/a.py", "tests/b.py"))
    check = jobs._green_check([_job(1, ("t::a",)), _job(2, ("t::b", "t::a"))], mapping)
    assert (check.tests, check.switch, check.built) == (("t::a", "t::b"), None, WOVEN)
    assert check.mutant.scope == jobs.GREEN_CHECK
    assert check.timeout_scale > 1
    whole = jobs._green_check([_job(1, ("t::a",)), _job(2, ("t::b",), then_suite=True)], mapping)
    assert whole.tests == (SUITE,)


def test_a_check_that_passed_is_taken_out_and_one_that_failed_stops_the_run() -> None:
    check = Result(dataclasses.replace(_mutant(0), scope=jobs.GREEN_CHECK), SURVIVED)
    mine = Result(_mutant(1), KILLED)
    assert jobs.take_green_check([mine, check]) == [mine]
    failed = Result(check.mutant, KILLED, failed="t::a")
    with pytest.raises(RuntimeError, match="fails t::a: no compiled mutant can be judged on it"):
        jobs.take_green_check([mine, failed])


def test_the_maps_made_are_only_those_the_mutants_need(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []

    def reference(*args: object) -> select_tests.TestMap:
        made.append("reference")
        skipped = frozenset({"t::core_only", "t::gpu"})
        return select_tests.TestMap({"guard_lib/a.py": {1: ("t::a",)}}, ("tests/a.py",), skipped=skipped)

    def core(*args: object) -> select_tests.TestMap:
        made.append("core")
        skipped = frozenset({"t::gpu"})
        return select_tests.TestMap({"guard_lib/_core.pyx": {1: ("t::b",)}}, ("tests/b.py",), skipped=skipped)

    monkeypatch.setattr(jobs, "test_map", reference)
    monkeypatch.setattr(compiled_coverage, "core_map", core)
    compiled = [_mutant(1)]
    python = [Mutant("guard_lib/a.py", "f", "comparison", "a < 1", "a <= 1", 1, 1)]
    root = Path()
    assert jobs.test_maps(compiled, root, "guard_lib", [], every_file=False, preload=()).suite_order == (
        "tests/b.py",
    )
    assert made == ["core"]
    both = jobs.test_maps(compiled + python, root, "guard_lib", [], every_file=False, preload=())
    assert set(both.lines) == {"guard_lib/a.py", "guard_lib/_core.pyx"}
    assert both.suite_order == ("tests/a.py",)  # the reference's order, the one every mutant's tests pass
    assert both.skipped == {"t::gpu"}  # a test that ran on either implementation ran
    made.clear()
    jobs.test_maps(
        compiled, root, "guard_lib", [], every_file=True, preload=()
    )  # a changed test may reach any file
    assert sorted(made) == ["core", "reference"]
    made.clear()
    assert jobs.test_maps([], root, "guard_lib", [], every_file=True, preload=()) == select_tests.TestMap(
        {}, ()
    )
    assert made == []


def test_a_job_that_runs_the_whole_suite_has_the_time_of_the_whole_suite(tmp_path: Path) -> None:
    (tmp_path / "guard_lib").mkdir()
    source = "a = 1\nb = 2\ntry:\n    pass\nexcept BaseException:\n    c = 3\n"
    (tmp_path / "guard_lib" / "a.py").write_text(source, encoding="utf-8")

    def mutant(line: int) -> Mutant:
        return Mutant("guard_lib/a.py", "<module>", "replace-value", "1", "2", line, line)

    reached, unreached, in_handler = mutant(1), mutant(2), mutant(6)
    made_of = [reached, unreached, in_handler]
    generated = Generated(made_of, {m.id: "" for m in made_of}, Counter(), {})
    reaching: dict[int, tuple[str, ...]] = {1: ("t::a",), 6: ("t::c",)}
    mapping = select_tests.TestMap({"guard_lib/a.py": reaching}, ("t",))
    made, invalid = jobs.make(
        made_of, generated, root=tmp_path, files=[], mapping=mapping, scratch=tmp_path, parallel=1
    )
    seen = {j.mutant.line: (j.tests, j.then_suite, j.timeout_scale) for j in made}
    whole = selection.WHOLE_SUITE_TIMEOUT_SCALE
    assert seen == {
        1: (("t::a",), False, 1.0),
        2: ((SUITE,), False, whole),
        # a handler of an interrupt: its own tests (the traced ones, which interrupt it, would follow)
        6: (("t::c",), False, 1.0),
    }
    assert invalid == []


def test_a_mutant_whose_own_tests_pass_runs_the_traced_tests_next(tmp_path: Path) -> None:
    # Tests under their own tracer hide what they reach from coverage: after a mutant's own tests, and
    # before the whole suite where that follows, they run too; never twice, never beside the whole suite.
    (tmp_path / "guard_lib").mkdir()
    source = "a = 1\nb = 2\ntry:\n    pass\nexcept BaseException:\n    c = 3\n"
    (tmp_path / "guard_lib" / "a.py").write_text(source, encoding="utf-8")

    def mutant(line: int) -> Mutant:
        return Mutant("guard_lib/a.py", "f", "replace-value", "1", "2", line, line)

    reached, traced_too, unreached, in_handler = mutant(1), mutant(2), mutant(3), mutant(6)
    made_of = [reached, traced_too, unreached, in_handler]
    generated = Generated(made_of, {m.id: "" for m in made_of}, Counter(), {})
    reaching: dict[int, tuple[str, ...]] = {1: ("t::a",), 2: ("t::traced",), 6: ("t::c",)}
    mapping = select_tests.TestMap({"guard_lib/a.py": reaching}, ("t",), ("t::other", "t::traced"))
    made, _ = jobs.make(
        made_of, generated, root=tmp_path, files=[], mapping=mapping, scratch=tmp_path, parallel=1
    )
    seen = {j.mutant.line: (j.tests, j.then_tests, j.then_suite) for j in made}
    assert seen == {
        1: (("t::a",), ("t::other", "t::traced"), False),
        2: (("t::traced",), ("t::other",), False),
        # the try statement holding line 3 ran (its handler did): what ran of it may be the whole suite's
        3: ((SUITE,), (), False),
        # a handler of an interrupt: the traced tests, which interrupt it, follow its own
        6: (("t::c",), ("t::other", "t::traced"), False),
    }
    first = next(j for j in made if j.mutant.line == 1)
    check = jobs._green_check([dataclasses.replace(first, built=WOVEN, switch=1)], mapping)
    assert set(check.tests) >= {"t::other", "t::traced"}


def test_a_statement_no_measured_process_ran_is_left_to_its_functions_tests_and_those_coverage_cannot_see(
    tmp_path: Path,
) -> None:
    # A statement that ran nowhere in the map's run: a test coverage does not follow (its own tracer, a
    # process it does not measure) may reach it, or one of its function's on a path the map's run missed.
    # A statement that ran keeps the whole suite, even where coverage recorded another of its lines than
    # the mutant's; so does what runs at import, and any of it where the map's run was not complete.
    (tmp_path / "guard_lib").mkdir()
    source = (
        "def f(a):\n    x = 1\n    if a > 5:\n        b = (2,\n             3)\n"
        "    c = (4,\n         5)\n    return x\n\n\ny = 1\nif y > 5:\n    z = 2\n"
    )
    (tmp_path / "guard_lib" / "a.py").write_text(source, encoding="utf-8")
    never = Mutant("guard_lib/a.py", "f", "replace-value", "3", "9", 5, 5)
    ran = Mutant("guard_lib/a.py", "f", "replace-value", "5", "9", 7, 7)
    at_import = Mutant("guard_lib/a.py", "<module>", "replace-value", "2", "9", 13, 13, at_import=True)
    made_of = [never, ran, at_import]
    generated = Generated(made_of, {m.id: "" for m in made_of}, Counter(), {})
    in_f = ("t::f",)
    reaching: dict[int, tuple[str, ...]] = {1: (), 2: in_f, 3: in_f, 6: in_f, 8: in_f, 11: (), 12: ()}
    traced = ("t::slow", "t::traced")
    blind = select_tests.TestMap(
        {"guard_lib/a.py": reaching}, ("t",), traced, {"t::slow": 9.0}, complete=True
    )

    def seen(mapping: select_tests.TestMap) -> dict[int, tuple[tuple[str, ...], bool, float]]:
        made, _ = jobs.make(
            made_of, generated, root=tmp_path, files=[], mapping=mapping, scratch=tmp_path, parallel=1
        )
        return {j.mutant.line: (j.tests, j.then_suite, j.timeout_scale) for j in made}

    whole = selection.WHOLE_SUITE_TIMEOUT_SCALE
    suite = ((SUITE,), False, whole)
    assert seen(blind) == {5: (("t::f", "t::traced", "t::slow"), False, whole), 7: suite, 13: suite}
    for short in (dataclasses.replace(blind, traced=()), dataclasses.replace(blind, complete=False)):
        assert seen(short) == {5: suite, 7: suite, 13: suite}


def test_a_surviving_phase_leads_to_the_traced_tests_then_to_the_whole_suite() -> None:
    job = dataclasses.replace(_job(1, ("t::a",), then_suite=True), then_tests=("t::traced",))
    traced = forked.next_phase(job)
    assert traced is not None
    assert (traced.tests, traced.then_tests, traced.then_suite) == (("t::traced",), (), True)
    whole = forked.next_phase(traced)
    assert whole is not None
    assert (whole.tests, whole.then_tests, whole.then_suite) == ((SUITE,), (), False)
    assert forked.next_phase(whole) is None
    assert forked.next_phase(_job(1, ("t::a",))) is None


def test_what_runs_at_import_is_judged_on_the_built_core_too(tmp_path: Path) -> None:
    (tmp_path / "guard_lib").mkdir()
    (tmp_path / "guard_lib" / "a.py").write_text("a = 1\n\ndef f():\n    return 2\n", encoding="utf-8")
    (tmp_path / "guard_lib" / "_core.pyx").write_text("", encoding="utf-8")
    at_import = Mutant("guard_lib/a.py", "<module>", "replace-value", "1", "3", 1, 1, at_import=True)
    in_body = Mutant("guard_lib/a.py", "f", "replace-value", "2", "3", 4, 4)
    made_of = [at_import, in_body]
    generated = Generated(made_of, {m.id: "" for m in made_of}, Counter(), {})
    mapping = select_tests.TestMap({"guard_lib/a.py": {1: ("t::a",), 4: ("t::b",)}}, ("t",))
    files = ["guard_lib/_core.pyx", "guard_lib/a.py"]

    def made() -> dict[int, bool]:
        found, _ = jobs.make(
            made_of, generated, root=tmp_path, files=files, mapping=mapping, scratch=tmp_path, parallel=1
        )
        return {j.mutant.line: j.then_compiled for j in found}

    assert made() == {1: False, 4: False}  # no core built here: nothing to judge it on
    (tmp_path / "guard_lib" / f"_core{EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    assert made() == {1: True, 4: False}


def test_after_the_whole_suite_on_the_reference_comes_the_whole_suite_on_the_core() -> None:
    job = dataclasses.replace(_job(1, ("t::a",), then_suite=True), then_compiled=True, impl="")
    whole = forked.next_phase(job)
    assert whole is not None
    assert (whole.tests, whole.impl, whole.then_compiled) == ((SUITE,), "", True)
    on_core = forked.next_phase(whole)
    assert on_core is not None
    assert (on_core.tests, on_core.impl, on_core.then_compiled) == ((SUITE,), "compiled", False)
    assert forked.next_phase(on_core) is None


def test_only_an_edit_of_one_function_body_none_of_it_run_before_the_tests_goes_warm(tmp_path: Path) -> None:
    # A warm session has imported the package and collected the suite: an edit of what ran by then (at
    # import, in a definition's header, in a function called while collecting) would come too late.
    (tmp_path / "guard_lib").mkdir()
    source = "A = 1\n\n\ndef f():\n    return 2\n\n\ndef g():\n    return 3\n"
    (tmp_path / "guard_lib" / "a.py").write_text(source, encoding="utf-8")
    body = Mutant("guard_lib/a.py", "f", "replace-value", "2", "5", 5, 5)
    called_at_import = Mutant("guard_lib/a.py", "g", "replace-value", "3", "5", 9, 9)
    at_import = Mutant("guard_lib/a.py", "<module>", "replace-value", "1", "5", 1, 1, at_import=True)
    header = Mutant("guard_lib/a.py", "f", "keyword-only", "def f():", "def f(*):", 4, 4, definition=True)
    made_of = [body, called_at_import, at_import, header]
    sources = {m.id: source.replace(f"    return {m.original}", f"    return {m.mutated}") for m in made_of}
    sources[at_import.id] = source.replace("A = 1", "A = 5")
    sources[header.id] = source.replace("def f():", "def f(*, x=1):")
    generated = Generated(made_of, sources, Counter(), {})
    reaching: dict[int, tuple[str, ...]] = {1: ("t::a",), 5: ("t::f",), 9: ("t::g",)}
    mapping = select_tests.TestMap(
        {"guard_lib/a.py": reaching}, ("t",), before_tests={"guard_lib/a.py": frozenset({1, 4, 8, 9})}
    )
    made, _ = jobs.make(
        made_of, generated, root=tmp_path, files=[], mapping=mapping, scratch=tmp_path, parallel=1
    )
    assert {j.mutant.scope + str(j.mutant.line): j.warm for j in made} == {
        "f5": True,
        "g9": False,
        "<module>1": False,
        "f4": False,
    }
    # Its module imported only once the tests ran (the session would import it itself, before the swap),
    # or imported afresh by one of its tests (which reads the file, where a forked child gets the mutant).
    late = dataclasses.replace(mapping, collected=("guard_lib",))
    imported_by_its_test = dataclasses.replace(
        mapping, collected=("guard_lib", "guard_lib.a"), importers={"guard_lib.a": ("t::f",)}
    )
    imported_by_another = dataclasses.replace(imported_by_its_test, importers={"guard_lib.a": ("t::g",)})
    for changed, warm in ((late, False), (imported_by_its_test, False), (imported_by_another, True)):
        found, _ = jobs.make(
            [body], generated, root=tmp_path, files=[], mapping=changed, scratch=tmp_path, parallel=1
        )
        assert [j.warm for j in found] == [warm]
    # No map of the file's lines at all: nothing says what ran before the tests, so nothing goes warm.
    unmapped, _ = jobs.make(
        [body],
        generated,
        root=tmp_path,
        files=[],
        mapping=select_tests.TestMap({}, ("t",)),
        scratch=tmp_path,
        parallel=1,
    )
    assert [j.warm for j in unmapped] == [False]

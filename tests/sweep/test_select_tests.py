"""The map of which tests reach which line names each test as pytest collected it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mutation_sweep import select_tests


def test_a_test_is_found_by_any_name_coverage_gives_its_module(tmp_path: Path) -> None:
    for rel in ("tests/behaviour/__init__.py", "tests/behaviour/test_x.py", "tests/test_top.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("", encoding="utf-8")
    modules = select_tests.test_modules(tmp_path)
    assert modules["behaviour.test_x"] == modules["tests.behaviour.test_x"] == "tests/behaviour/test_x.py"
    assert modules["test_top"] == "tests/test_top.py"
    collected = {"tests/behaviour/test_x.py::test_y"}
    # pytest's rootdir-relative package: the module is behaviour.test_x, as this project's tests are
    assert select_tests._node_id("behaviour.test_x.test_y", modules, collected) == (
        "tests/behaviour/test_x.py::test_y"
    )
    assert (
        select_tests._node_id("behaviour.test_x.Case.test_z", modules, collected)
        == "tests/behaviour/test_x.py"
    )


def test_the_tests_a_report_names_as_tracing_are_read_by_node_id(tmp_path: Path) -> None:
    junit = _report(
        tmp_path,
        '<testcase classname="tests.test_a" name="test_plain" />'
        '<testcase classname="tests.test_a" name="test_traced[1]">'
        '<properties><property name="traces" value="true" /></properties></testcase>'
        '<testcase classname="tests.test_a" name="test_traced[2]">'
        '<properties><property name="traces" value="true" /></properties></testcase>'
        '<testcase classname="tests.test_a" name="test_other_property">'
        '<properties><property name="other" value="true" /></properties></testcase>'
        '<testcase classname="tests.test_a" name="test_failed"><failure message="x" /></testcase>'
        '<testcase classname="tests.test_a" name="test_in_error"><error message="x" /></testcase>',
    )
    # a test that failed in the map's run stopped short of what it reaches once it passes
    assert select_tests.traced_tests(junit, tmp_path, tmp_path) == (
        "tests/test_a.py::test_failed",
        "tests/test_a.py::test_in_error",
        "tests/test_a.py::test_traced",
    )


def test_this_suites_tracing_tests_are_named_in_its_report(tmp_path: Path) -> None:
    # The mark reaches the report through the conftest: the sweep finds them in the map's own run.
    root = Path(__file__).resolve().parents[2]
    junit = tmp_path / "junit.xml"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/behaviour/test_result.py",
            f"--junitxml={junit}",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert select_tests.traced_tests(junit, root, tmp_path) == (
        "tests/behaviour/test_result.py::test_an_outcome_interrupted_while_it_is_made_is_finalised_without_an_error",
    )


def test_a_mutants_tests_run_the_quickest_first_by_what_each_took(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    for name in ("test_a.py", "test_b.py"):
        (tmp_path / "tests" / name).write_text("", encoding="utf-8")
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_a" name="test_slow[1]" time="2.0" />'
        '<testcase classname="tests.test_a" name="test_slow[2]" time="3.0" />'
        '<testcase classname="tests.test_a" name="test_quick" time="0.5" />'
        '<testcase classname="tests.test_b" name="test_middle" time="1.0" />'
        "</testsuite></testsuites>",
        encoding="utf-8",
    )
    seconds = select_tests.test_seconds(junit, select_tests.test_modules(tmp_path))
    assert seconds == {
        "tests/test_a.py::test_slow": 5.0,
        "tests/test_a.py::test_quick": 0.5,
        "tests/test_a.py": 5.5,
        "tests/test_b.py::test_middle": 1.0,
        "tests/test_b.py": 1.0,
    }
    # by each test, not by its file: test_a's quick test goes before test_b's, its slow one after
    reached = ("tests/test_a.py::test_slow", "tests/test_a.py::test_quick", "tests/test_b.py::test_middle")
    mapping = select_tests.TestMap({"m.py": {3: reached}}, (), (), seconds)
    assert select_tests.tests_for(mapping, "m.py", range(3, 4)) == (
        "tests/test_a.py::test_quick",
        "tests/test_b.py::test_middle",
        "tests/test_a.py::test_slow",
    )
    # a test the run did not time (a file where coverage's name and pytest's disagree) costs its file's
    mapping = select_tests.TestMap(
        {"m.py": {3: ("tests/test_a.py", "tests/test_b.py::test_middle")}}, (), (), seconds
    )
    assert select_tests.tests_for(mapping, "m.py", range(3, 4)) == (
        "tests/test_b.py::test_middle",
        "tests/test_a.py",
    )
    assert select_tests.tests_for(mapping, "m.py", range(4, 5)) == (select_tests.SUITE,)


def test_a_test_is_skipped_only_where_every_case_of_it_was(tmp_path: Path) -> None:
    junit = _report(
        tmp_path,
        '<testcase classname="tests.test_a" name="test_gpu[1]"><skipped message="no CUDA" /></testcase>',
        '<testcase classname="tests.test_a" name="test_gpu[2]"><skipped message="no CUDA" /></testcase>',
        '<testcase classname="tests.test_a" name="test_some[cuda]"><skipped message="no CUDA" /></testcase>',
        '<testcase classname="tests.test_a" name="test_some[sim]" />',
        '<testcase classname="tests.test_a" name="test_plain" />',
    )
    skipped = select_tests.skipped_tests(junit, select_tests.test_modules(tmp_path))
    assert skipped == {"tests/test_a.py::test_gpu"}


def _report(root: Path, *cases: str) -> Path:
    """A run's JUnit report of ``cases``, beside an empty ``tests/test_a.py`` they name."""
    (root / "tests").mkdir()
    (root / "tests" / "test_a.py").write_text("", encoding="utf-8")
    junit = root / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">' + "".join(cases) + "</testsuite></testsuites>",
        encoding="utf-8",
    )
    return junit

"""mutmut's verdicts reused from an earlier run: what a verdict depends on, and which ones a run keeps."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mutmut_reuse
import pytest
from mutation_common import MutantRecord, Results

PYPROJECT = """\
[tool.mutmut]
source_paths = ["pkg"]
pytest_add_cli_args_test_selection = ["tests/unit"]

[tool.pytest.ini_options]
python_files = ["test_*.py", "check_*.py"]
"""

NAME = "pkg.a.x_f__mutmut_1"
TEXTS = ("def f():\n    return 1", "def f():\n    return 2")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    files = {
        "pyproject.toml": PYPROJECT,
        "pkg/__init__.py": "",
        "pkg/a.py": "def f():\n    return 1\n",
        "pkg/core.pyx": "cdef int g():\n    return 1\n",
        "tests/conftest.py": "",
        "tests/unit/helper.py": "VALUE = 1\n",
        "tests/unit/test_a.py": "def test_a():\n    assert True\n",
        "tests/unit/check_b.py": "def test_b():\n    assert True\n",
        "docs/notes.py": "X = 1\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return tmp_path


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).write_text(text, encoding="utf-8")


def _digest(root: Path, tests: list[str] | None = None, texts: tuple[str, str] = TEXTS) -> str:
    ran = ["tests/unit/test_a.py::test_a"] if tests is None else tests
    return mutmut_reuse.digest(root, mutmut_reuse.base(root), NAME, texts, ran)


def test_comments_and_spacing_change_nothing(project: Path) -> None:
    before = _digest(project)
    _write(project, "pkg/a.py", "# a comment\ndef f():\n\n    return 1   # why\n")
    _write(project, "tests/unit/test_a.py", "def test_a():\n    assert True  # still\n")
    assert _digest(project) == before


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("pkg/a.py", "def f():\n    return 1\n\nEXTRA = 2\n"),  # the package's code, anywhere in it
        ("pkg/core.pyx", "cdef int g():\n    return 2\n"),  # the core's source
        ("tests/unit/test_a.py", "def test_a():\n    assert 1\n"),  # a test file that reaches it
        ("tests/unit/helper.py", "VALUE = 2\n"),  # a helper beside the tests
        ("tests/conftest.py", "X = 1\n"),  # a conftest above them
        ("pyproject.toml", PYPROJECT.replace('["tests/unit"]', '["tests/unit", "tests"]')),  # [tool.mutmut]
        ("pyproject.toml", PYPROJECT + 'filterwarnings = ["error"]\n'),  # how pytest runs the tests
    ],
)
def test_each_input_changes_the_digest(project: Path, rel: str, text: str) -> None:
    before = _digest(project)
    _write(project, rel, text)
    assert _digest(project) != before


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("tests/unit/check_b.py", "def test_b():\n    assert 1\n"),  # a test file that does not reach it
        ("docs/notes.py", "X = 2\n"),  # outside the package and the tests
        ("pyproject.toml", PYPROJECT + "\n[tool.other]\nx = 1\n"),  # another tool's table
    ],
)
def test_what_it_does_not_depend_on_changes_nothing(project: Path, rel: str, text: str) -> None:
    before = _digest(project)
    _write(project, rel, text)
    assert _digest(project) == before


def test_the_mutant_its_tests_the_interpreter_and_an_override_count(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _digest(project)
    assert _digest(project, texts=(TEXTS[0], "def f():\n    return 3")) != before
    assert _digest(project, tests=["tests/unit/test_a.py::test_a", "tests/unit/check_b.py::test_b"]) != before
    assert _digest(project, tests=["tests/unit/test_a.py::test_a", "tests/unit/test_a.py::other"]) == before
    override = project / "gpu.toml"
    override.write_text('[tool.mutmut]\npytest_add_cli_args = ["-m", "cuda"]\n', encoding="utf-8")
    assert mutmut_reuse.base(project, override) != mutmut_reuse.base(project)
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    assert _digest(project) != before


def test_the_tests_of_each_function_come_from_mutmuts_stats(tmp_path: Path) -> None:
    stats = tmp_path / "mutmut-stats.json"
    stats.write_text(
        json.dumps(
            {
                "tests_by_mangled_function_name": {
                    "pkg.a.x_f": ["tests/b.py::t", "tests/a.py::t[1]", "tests/a.py::u"]
                }
            }
        ),
        encoding="utf-8",
    )
    assert mutmut_reuse.test_files(stats) == {"pkg.a.x_f": ["tests/a.py", "tests/b.py"]}
    for text in ("{", "[]", '{"tests_by_mangled_function_name": 3}'):
        stats.write_text(text, encoding="utf-8")
        assert mutmut_reuse.test_files(stats) == {}
    assert mutmut_reuse.test_files(tmp_path / "gone.json") == {}


def test_a_mutant_is_named_by_its_function_as_the_stats_name_it() -> None:
    assert mutmut_reuse.mangled("pkg.a.x_f__mutmut_12") == "pkg.a.x_f"
    assert mutmut_reuse.mangled("pkg.a.xǁCǁm__mutmut_1") == "pkg.a.xǁCǁm"
    assert mutmut_reuse.mangled("pkg.__init__.x_f__mutmut_2") == "pkg.x_f"


def _record(
    name: str,
    status: str,
    depends: str = "",
    *,
    exit_code: int | None = None,
    duration: float | None = None,
    tests: tuple[str, ...] = (),
    line: int = 1,
) -> MutantRecord:
    return MutantRecord(
        name=name,
        file="pkg/a.py",
        status=status,
        exit_code=exit_code,
        duration=duration,
        tests=list(tests),
        line=line,
        depends=depends,
    )


def test_only_a_kill_whose_inputs_are_the_same_is_kept() -> None:
    earlier = Results(
        [
            _record("m.x_a__mutmut_1", "killed", "d1"),
            _record("m.x_a__mutmut_2", "survived", "d2"),  # a survivor is judged again
            _record("m.x_a__mutmut_3", "killed", "old"),  # an input changed
            _record("m.x_a__mutmut_4", "killed"),  # no record of what it depended on
        ]
    )
    now = {"m.x_a__mutmut_1": "d1", "m.x_a__mutmut_2": "d2", "m.x_a__mutmut_3": "new", "m.x_a__mutmut_4": ""}
    names = [*now, "m.x_a__mutmut_5"]  # and one the earlier run did not have
    kept, again = mutmut_reuse.split(names, earlier, lambda r: now[r.name])
    assert list(kept) == ["m.x_a__mutmut_1"]
    assert again == names[1:]


def test_a_kept_verdict_is_placed_where_its_mutant_is_now_and_the_rest_say_what_they_ran() -> None:
    held = _record("m.x_a__mutmut_1", "killed", "d1", exit_code=1, duration=0.5, tests=("t.py",), line=3)
    fresh = [
        _record("m.x_a__mutmut_1", "not checked", line=7),
        _record("m.x_a__mutmut_2", "survived", line=9),
        _record("m.x_b__mutmut_1", "no tests", line=12),
    ]
    tests_of = {"m.x_a": ["tests/t.py"]}
    out = mutmut_reuse.with_depends(
        fresh, {held.name: held}, tests_of, lambda r, tests: f"{r.name}:{','.join(tests)}"
    )
    kept = out[0]
    assert (kept.status, kept.exit_code, kept.duration, kept.tests, kept.depends, kept.line) == (
        "killed",
        1,
        0.5,
        ["t.py"],
        "d1",
        7,
    )
    assert [(r.status, r.tests, r.depends) for r in out[1:]] == [
        ("survived", ["tests/t.py"], "m.x_a__mutmut_2:tests/t.py"),
        ("no tests", [], "m.x_b__mutmut_1:"),
    ]

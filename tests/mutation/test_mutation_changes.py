"""What changed since a commit, as every engine scopes by it: code, never comments or spacing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mutation_changes import changed_code_lines, changed_since, functions_holding
from mutation_io import InputError

OLD = "def f(x):\n    # why f adds one\n    return x + 1\n\n\ndef g():\n    return (1,\n            2)\n"


@pytest.mark.parametrize(
    ("new", "lines"),
    [
        (OLD.replace("# why f adds one", "# why, again"), set()),
        (OLD.replace("x + 1", "x+1"), set()),
        (OLD.replace("\n\n\ndef g", "\n\ndef g"), set()),
        (OLD.replace("    return (1,\n            2)", "    return (1, 2)"), set()),
        (OLD.replace("x + 1", "x - 1"), {3}),
        (OLD.replace("2)", "3)"), {7, 8}),  # a statement over two lines changes as a whole
        (OLD.replace("    return x + 1\n", ""), {1, 5}),  # either side of what was removed
        (OLD.replace("    return (1,", "    if x:\n        return (1,"), {7, 8, 9}),
        (OLD + "def h():\n    return 0\n", {9, 10}),
    ],
    ids=[
        "comment",
        "spacing",
        "blank-line",
        "rewrapped",
        "operator",
        "multi-line",
        "removed",
        "nested",
        "new",
    ],
)
def test_only_lines_whose_code_changed_count(new: str, lines: set[int]) -> None:
    assert changed_code_lines(OLD, new) == lines


def test_an_indentation_change_is_a_code_change() -> None:
    old = "if a:\n    b()\nc()\n"
    assert changed_code_lines(old, "if a:\n    b()\n    c()\n") == {3}


def test_a_source_the_tokenizer_refuses_is_compared_line_by_line() -> None:
    old = "cdef int f():\n    '''open\n    return 1\n"
    assert changed_code_lines(old, old.replace("return 1", "return 2")) == {3}
    assert changed_code_lines(old, old.replace("cdef int f():", "cdef  int  f():")) == set()


def test_a_changed_line_names_the_innermost_function_whose_body_holds_it() -> None:
    source = (
        "class C:\n"
        "    x = 1\n"
        "    @staticmethod\n"
        "    def m():\n"
        "        def inner():\n"
        "            return 1\n"
        "        return inner\n"
    )
    assert functions_holding(source, [6]) == {"C.m.inner"}
    assert functions_holding(source, [7]) == {"C.m"}
    assert functions_holding(source, [2, 3, 4]) == set()  # a class body, a decorator, a def line
    cython = "cdef class G:\n    cdef int n\n    def close(self):\n        cdef int k = 0\n        return k\n"
    assert functions_holding(cython, [5], cython=True) == {"G.close"}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
    )


def _committed(repo: Path, files: dict[str, str]) -> None:
    """``files`` (path to text) written into a new git repository at ``repo``, and committed."""
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")


def test_changed_since_sorts_code_tests_and_cosmetic_changes(tmp_path: Path) -> None:
    _committed(tmp_path, {"pkg/m.py": OLD, "pkg/c.pyx": OLD, "tests/test_m.py": "def test():\n    pass\n"})
    (tmp_path / "pkg/m.py").write_text(OLD.replace("x + 1", "x - 1"), encoding="utf-8")
    (tmp_path / "pkg/c.pyx").write_text(OLD.replace("# why f adds one", "# reworded"), encoding="utf-8")
    (tmp_path / "tests/test_m.py").write_text("def test():\n    assert True\n", encoding="utf-8")
    (tmp_path / "pkg/new.py").write_text("X = 1\n", encoding="utf-8")
    changes = changed_since("HEAD", tmp_path)
    assert changes.lines == {"pkg/m.py": frozenset({3}), "pkg/new.py": frozenset({1})}
    assert changes.functions == {"pkg/m.py": frozenset({"f"}), "pkg/new.py": frozenset()}
    assert changes.tests == {"tests/test_m.py"}
    assert changes.cosmetic == ("pkg/c.pyx",)
    assert changes.touches("pkg/m.py", 2, 3)
    assert not changes.touches("pkg/m.py", 6, 8)
    assert changes.describe() == (
        "changed since HEAD: pkg/m.py 3; pkg/new.py 1; tests tests/test_m.py (test); "
        "comments or spacing only in pkg/c.pyx"
    )
    with pytest.raises(InputError, match="not a commit"):
        changed_since("no-such-ref", tmp_path)


def test_a_changed_helper_of_the_tests_changes_every_test_beside_and_below_it(tmp_path: Path) -> None:
    files = ["tests/unit/support.py", "tests/unit/test_a.py", "tests/unit/deep/test_b.py", "tests/test_c.py"]
    _committed(tmp_path, dict.fromkeys(files, "X = 1\n"))
    (tmp_path / "tests/unit/support.py").write_text("X = 2\n", encoding="utf-8")
    changes = changed_since("HEAD", tmp_path)
    assert changes.tests == {"tests/unit/support.py", "tests/unit/test_a.py", "tests/unit/deep/test_b.py"}
    assert changes.changed_test("tests/unit/deep/test_b.py::test_x[plain]")
    assert not changes.changed_test("tests/test_c.py::test_y")


def test_a_change_inside_some_tests_changes_those_tests_alone(tmp_path: Path) -> None:
    tests = (
        "X = 1\n\n\nclass TestK:\n    def test_a(self):\n        assert X\n\n\ndef test_b():\n    assert X\n"
    )
    files = {"tests/unit/test_k.py": tests, "tests/unit/test_l.py": tests, "tests/other/test_m.py": tests}
    files["tests/other/test_n.py"] = "from .test_m import test_b\n\n\ndef test_n():\n    test_b()\n"
    _committed(tmp_path, files)
    (tmp_path / "tests/unit/test_k.py").write_text(tests.replace("assert X\n", "assert X == 1\n", 1), "utf-8")
    (tmp_path / "tests/unit/test_l.py").write_text(tests.replace("X = 1", "X = 2"), encoding="utf-8")
    (tmp_path / "tests/other/test_m.py").write_text(tests + "\n\ndef test_c():\n    pass\n", "utf-8")
    changes = changed_since("HEAD", tmp_path)
    assert changes.test_functions == {
        "tests/unit/test_k.py": {"TestK.test_a"},
        "tests/other/test_m.py": {"test_c"},
    }
    assert changes.changed_test("tests/unit/test_k.py::TestK::test_a")
    assert changes.changed_test("tests/unit/test_k.py")  # a file stands for all its tests
    assert not changes.changed_test("tests/unit/test_k.py::test_b")
    assert changes.changed_test("tests/unit/test_l.py::test_b")  # outside every test: the whole file
    assert changes.changed_test("tests/other/test_m.py::test_c[1]")
    assert not changes.changed_test("tests/other/test_m.py::test_b")
    assert changes.within([], ["tests/other"]).test_functions == {"tests/other/test_m.py": {"test_c"}}
    # a test file that imports from a changed one changes whole: what it imports may be what changed
    assert changes.changed_test("tests/other/test_n.py::test_b")
    (tmp_path / "tests/unit/conftest.py").write_text("Y = 1\n", encoding="utf-8")  # a new helper beside
    assert changed_since("HEAD", tmp_path).test_functions == {"tests/other/test_m.py": {"test_c"}}


def test_a_change_to_how_the_tests_run_changes_every_test(tmp_path: Path) -> None:
    pyproject = (
        '[tool.pytest.ini_options]\nxfail_strict = true\npython_files = ["test_*.py", "check_*.py"]\n\n'
        "[tool.ruff]\nline-length = 100\n"
    )
    files = {
        "pyproject.toml": pyproject,
        "setup.py": "from setuptools import setup\n\nsetup()\n",
        "tests/unit/test_a.py": "def test_a():\n    pass\n",
        "tests/test_b.py": "def test_b():\n    pass\n",
        "tests/check_c.py": "def test_c():\n    pass\n",  # a test file by pytest's python_files here
        "tests/support.py": "X = 1\n",
    }
    _committed(tmp_path, files)
    # another tool's table, and the build script's comments, change no test
    (tmp_path / "pyproject.toml").write_text(pyproject.replace("100", "90"), encoding="utf-8")
    (tmp_path / "setup.py").write_text("# builds the core\n" + files["setup.py"], encoding="utf-8")
    (tmp_path / "tests/unit/test_a.py").write_text("def test_a():\n    assert 1\n", encoding="utf-8")
    quiet = changed_since("HEAD", tmp_path)
    assert quiet.configuration == ()
    assert quiet.test_functions == {"tests/unit/test_a.py": {"test_a"}}
    (tmp_path / "pyproject.toml").write_text(pyproject.replace("true", "false"), encoding="utf-8")
    (tmp_path / "setup.py").write_text(files["setup.py"].replace("setup()", "setup(name='x')"), "utf-8")
    changes = changed_since("HEAD", tmp_path)
    assert changes.configuration == (
        "pytest's configuration in pyproject.toml",
        "the build (setup.py, [tool.setuptools])",
    )
    assert changes.tests == {"tests/unit/test_a.py", "tests/test_b.py", "tests/check_c.py"}
    assert changes.test_functions == {}  # whole files: any line of them may run otherwise
    assert changes.changed_test("tests/test_b.py::test_b")
    assert changes.within([], ["tests/unit"]).tests == {"tests/unit/test_a.py"}
    assert changes.describe() == (
        "changed since HEAD: setup.py 3; tests tests/check_c.py, tests/test_b.py, tests/unit/test_a.py; "
        "pytest's configuration in pyproject.toml, the build (setup.py, [tool.setuptools]), so every test"
    )

"""What a change touches, and the refusal that keeps a committed change from passing unseen."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from guard_mutation.changes import Change, ChangeError, changed_since, definitions, functions_holding

MODULE = "X = 1\n\n\nclass C:\n    def f(self):\n        return 1\n\n\ndef g():\n    return 2\n"
CYTHON = (
    "cdef int _x = 0\n\n"
    "cdef class _Borrow:\n"
    "    cdef int _close(self) except -1:\n"
    "        with nogil:\n"
    "            code = 1\n"
    "        return 0\n\n"
    "    def __exit__(self, *args):\n"
    "        self._close()\n"
)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "m.py").write_text(MODULE)
    (tmp_path / "pkg" / "core.pyx").write_text(CYTHON)
    (tmp_path / "tests" / "test_m.py").write_text("def test_a():\n    pass\n")
    (tmp_path / "tests" / "sub" / "test_s.py").write_text("def test_s():\n    pass\n")
    (tmp_path / "tests" / "sub" / "helper.py").write_text("V = 1\n")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one", "--allow-empty")
    git(tmp_path, "add", ".")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "two")
    return tmp_path


def since(repo: Path, ref: str = "HEAD~1") -> Change:
    return changed_since(ref, repo, "pkg", ["tests"])


def test_a_changed_body_names_its_lines_and_its_function(repo: Path) -> None:
    git(repo, "tag", "base")
    (repo / "pkg" / "m.py").write_text(MODULE.replace("return 1", "return 3"))
    change = since(repo, "base")
    assert change.lines == {"pkg/m.py": frozenset({6})}
    assert change.functions == frozenset({"pkg.m:C.f"})
    assert change.touches("pkg/m.py", 5, 6)
    assert not change.touches("pkg/m.py", 9, 10)
    assert not change.changed_test("tests/test_m.py::test_a")
    assert change.describe() == "changed since base: pkg/m.py lines 6"


def test_a_removed_last_statement_marks_the_line_before_it(repo: Path) -> None:
    git(repo, "tag", "base")
    (repo / "pkg" / "m.py").write_text(MODULE.replace("\n    return 2\n", "\n"))
    assert since(repo, "base").lines == {"pkg/m.py": frozenset({9})}


def test_comments_and_spacing_change_no_code(repo: Path) -> None:
    (repo / "pkg" / "m.py").write_text(MODULE.replace("return 1", "return  1  # why"))
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "words")
    assert since(repo, "HEAD~1").lines == {}


def test_a_changed_helper_changes_every_test_beside_and_below_it(repo: Path) -> None:
    git(repo, "tag", "base")
    (repo / "tests" / "sub" / "helper.py").write_text("V = 2\n")
    change = since(repo, "base")
    assert change.changed_test("tests/sub/test_s.py::test_s")
    assert not change.changed_test("tests/test_m.py::test_a")


def test_a_changed_configuration_changes_every_test(repo: Path) -> None:
    git(repo, "tag", "base")
    (repo / "pyproject.toml").write_text("[project]\n")
    git(repo, "add", ".")
    assert since(repo, "base").changed_test("tests/test_m.py::test_a")


def test_a_change_committed_on_the_checked_out_ref_is_refused_not_passed(repo: Path) -> None:
    (repo / "pkg" / "m.py").write_text(MODULE.replace("return 1", "return 3"))
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "bug")
    (repo / "notes.txt").write_text("an edit that is no code")
    with pytest.raises(
        ChangeError, match=r"main is the checked-out commit.*name the commit the change started"
    ):
        since(repo, "main")
    assert since(repo, "HEAD~1").lines == {"pkg/m.py": frozenset({6})}
    (repo / "pkg" / "m.py").write_text(MODULE)  # an edit of code beside it: that edit is the change
    assert since(repo, "main").lines == {"pkg/m.py": frozenset({6})}


def test_a_ref_git_does_not_know_is_refused(repo: Path) -> None:
    with pytest.raises(ChangeError, match="'--output=x': not a commit"):
        since(repo, "--output=x")


def test_cython_definitions_are_read_by_indentation() -> None:
    assert definitions(CYTHON) == [("_Borrow._close", 4, 7), ("_Borrow.__exit__", 9, 10), ("_Borrow", 3, 10)]
    assert functions_holding(CYTHON, [6, 10]) == {"_Borrow._close", "_Borrow.__exit__"}
    assert functions_holding(CYTHON, [1]) == set()

"""A verdict is reused only while everything it depends on is unchanged."""

from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import mutation_environment
import pytest
from mutation_model import KILLED, SURVIVED
from mutation_sweep import reuse, select_tests
from mutation_sweep.work_item import INVALID, Mutant, Result

A = Mutant("pkg/m.py", "f", "comparison", "a < 1", "a <= 1", 2, 2)
B = Mutant("pkg/m.py", "g", "comparison", "b < 1", "b <= 1", 5, 5)
C = Mutant("pkg/m.py", "<module>", "delete-statement", "X = 1", "pass", 8, 8, at_import=True)
MAP = select_tests.TestMap({"pkg/m.py": {2: ("tests/test_a.py::t",), 5: ("tests/test_b.py::t",)}}, ())


def _project(root: Path) -> Path:
    for rel, text in {
        "pkg/m.py": "def f(a):\n    return a < 1\n",
        "tests/test_a.py": "def t(): pass\n",
        "tests/test_b.py": "def t(): pass\n",
        "tests/support.py": "HELP = 1\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _digests(root: Path) -> dict[str, str]:
    return reuse.digests([A, B, C], MAP, root, ["pkg/m.py"], ["tests"])


def test_a_changed_test_changes_only_the_verdicts_that_ran_it(tmp_path: Path) -> None:
    root = _project(tmp_path)
    before = _digests(root)
    assert _digests(root) == before
    (root / "tests/test_a.py").write_text("# a note\ndef t():  pass\n", encoding="utf-8")
    assert _digests(root) == before  # comments and spacing are not code
    (root / "tests/test_a.py").write_text("def t(): assert 1\n", encoding="utf-8")
    after = _digests(root)
    assert after[A.id] != before[A.id]
    assert after[B.id] == before[B.id]
    assert after[C.id] != before[C.id]  # at import: the whole suite runs against it


def test_building_the_core_changes_the_verdicts_of_what_runs_at_import_alone(tmp_path: Path) -> None:
    # What runs at import is judged on the built core too: a verdict from a tree without one proves less.
    root = _project(tmp_path)
    (root / "pkg/core.pyx").write_text("cdef int y = 1\n", encoding="utf-8")

    def digests() -> dict[str, str]:
        return reuse.digests([A, B, C], MAP, root, ["pkg/core.pyx", "pkg/m.py"], ["tests"])

    before = digests()
    (root / "pkg" / f"core{EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    after = digests()
    assert (after[A.id], after[B.id]) == (before[A.id], before[B.id])
    assert after[C.id] != before[C.id]


def test_the_package_or_a_helper_of_the_tests_changes_every_verdict(tmp_path: Path) -> None:
    root = _project(tmp_path)
    before = _digests(root)
    (root / "tests/support.py").write_text("HELP = 2\n", encoding="utf-8")
    helped = _digests(root)
    assert all(helped[m] != before[m] for m in before)
    (root / "pkg/m.py").write_text("def f(a):\n    return a < 2\n", encoding="utf-8")
    assert all(_digests(root)[m] != helped[m] for m in before)


def test_how_the_tests_run_changes_every_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A kill can rest on pytest's configuration (a warning made an error), and on what Hypothesis draws
    root = _project(tmp_path)
    pyproject = '[project]\nname = "pkg"\ndependencies = ["hypothesis"]\n\n[tool.pytest.ini_options]\n'
    (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    before = _digests(root)
    (root / "pyproject.toml").write_text(pyproject + 'filterwarnings = ["error"]\n', encoding="utf-8")
    configured = _digests(root)
    assert all(configured[m] != before[m] for m in before)
    monkeypatch.setattr(mutation_environment, "version", lambda name: "0.0.1")
    versioned = _digests(root)
    assert all(versioned[m] != configured[m] for m in before)
    # pytest's arguments, and a conftest above the tests' folder, which no test file holds
    argued = reuse.digests([A, B, C], MAP, root, ["pkg/m.py"], ["tests", "--hypothesis-seed=1"])
    assert all(argued[m] != versioned[m] for m in before)
    (root / "tests/unit").mkdir()
    below = reuse.digests([A], MAP, root, ["pkg/m.py"], ["tests/unit"])
    (root / "tests/conftest.py").write_text("X = 1\n", encoding="utf-8")
    assert reuse.digests([A], MAP, root, ["pkg/m.py"], ["tests/unit"]) != below


def test_only_a_recorded_verdict_of_the_same_inputs_is_kept(tmp_path: Path) -> None:
    depends = _digests(_project(tmp_path))
    earlier = [
        Result(A, KILLED, depends=depends[A.id]),
        Result(B, SURVIVED, depends="0" * 64),  # recorded against other inputs
        Result(C, INVALID, depends=depends[C.id]),  # Cython's refusal is not a verdict to keep
    ]
    kept, again = reuse.split([A, B, C], depends, earlier)
    assert [r.mutant for r in kept] == [A]
    assert again == [B, C]
    assert reuse.split([A], depends, [Result(A, KILLED)]) == ([], [A])  # no record of its inputs
    moved = Mutant(**{**A.__dict__, "line": 3, "end_line": 3})  # a blank line added above it
    (kept_moved,), _ = reuse.split([moved], depends, earlier)
    assert kept_moved.mutant.line == 3
    stamped = reuse.stamped([Result(B, SURVIVED), Result(C, INVALID)], depends)
    assert [r.depends for r in stamped] == [depends[B.id], ""]


def test_a_traced_test_counts_for_every_verdict_that_ran_it_after_its_own(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "tests/test_traced.py").write_text("def t(): pass\n", encoding="utf-8")
    traced = select_tests.TestMap(MAP.lines, (), ("tests/test_traced.py::t",))
    before = reuse.digests([A, B], traced, root, ["pkg/m.py"], ["tests"])
    assert before == reuse.digests([A, B], traced, root, ["pkg/m.py"], ["tests"])
    (root / "tests/test_traced.py").write_text("def t(): assert 1\n", encoding="utf-8")
    after = reuse.digests([A, B], traced, root, ["pkg/m.py"], ["tests"])
    assert after[A.id] != before[A.id]
    assert after[B.id] != before[B.id]

"""A mutant's child runs the tests that reach it, not the folders the configuration names beside them."""

from __future__ import annotations

from pathlib import Path

import pytest

from .programs import answer, beside

ROOT = Path(__file__).resolve().parents[2]

# A fresh interpreter: the fork engine's children run pytest, which a forking pytest process would confuse.
PROGRAM = """
import json, sys
from pathlib import Path
from mutation_sweep.runners import forked
from mutation_sweep.select_tests import SUITE
from mutation_sweep.work_item import Mutant

root = Path(sys.argv[1])
mutant = Mutant("pkg/mod.py", "<module>", "replace-value", "1", "2", 1, 1)
def verdict(tests, order=("tests/test_a.py",)):
    job = forked.Job(mutant, "pkg.mod", "X = 2\\n", tests, order)
    [result] = forked.run([job], root, ["tests", "-q"], parallel=1, timeout_s=120, on_result=lambda r: None)
    return result.verdict
print(json.dumps({
    "reached": verdict(("tests/test_a.py::test_unaffected",)),
    "suite": verdict((SUITE,), ("tests/test_a.py", "tests/test_b.py")),
}))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "mod.py").write_text("X = 1\n", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_unaffected():\n    pass\n", encoding="utf-8")
    (tmp_path / "tests" / "test_b.py").write_text(
        "from pkg import mod\n\ndef test_x_is_one():\n    assert mod.X == 1\n", encoding="utf-8"
    )
    return tmp_path


def test_a_mutant_runs_only_its_tests_and_the_suite_only_when_asked(project: Path) -> None:
    found = answer(PROGRAM, [str(project)], cwd=project, env=beside(project, "/usr/bin:/bin"))
    # The test that reaches nothing of the mutant passes; test_b, under the configured "tests", is not run.
    assert found["reached"] == "survived"
    assert found["suite"] == "killed"

"""Mutants of one function's body judged in a warm session: the same verdicts as forked, and no kill
trusted from a test that fails there without the mutant."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mutation_sweep.runners.warm import first_failure

ROOT = Path(__file__).resolve().parents[2]

# A fresh interpreter: the runners fork, which a forking pytest process would confuse.
PROGRAM = """
import json, logging, sys
from pathlib import Path
from mutation_sweep.runners import forked, warm
from mutation_sweep.work_item import Mutant

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
root = Path(sys.argv[1])
original = (root / "pkg" / "mod.py").read_text()

def job(scope, old, new, tests, fit=True):
    mutant = Mutant("pkg/mod.py", scope, "replace-value", old, new, 2, 2)
    source = original.replace(f"x * {old}", f"x * {new}")
    return forked.Job(mutant, "pkg.mod", source, tests, ("tests/test_a.py",), warm=fit)

jobs = [
    job("double", "2", "3", ("tests/test_a.py::test_double",)),
    job("triple", "3", "4", ("tests/test_a.py::test_triple_unchecked",)),
    job("double", "2", "5", ("tests/test_pid.py::test_in_the_process_that_imported_it",)),
    job("double", "2", "6", ("tests/test_a.py::test_double",), fit=False),
]
results = warm.run(
    jobs, root, ["tests", "-q"], parallel=1, timeout_s=120, preload=(), on_result=lambda r: None
)
print(json.dumps({r.mutant.mutated: [r.verdict, r.failed] for r in results}))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    source = "def double(x):\n    return x * 2\n\n\ndef triple(x):\n    return x * 3\n"
    (tmp_path / "pkg" / "mod.py").write_text(source, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        "from pkg import mod\n\n\ndef test_double():\n    assert mod.double(2) == 4\n\n\n"
        "def test_triple_unchecked():\n    mod.triple(1)\n",
        encoding="utf-8",
    )
    # Green in a fresh run, red in any child forked from a session that imported it: a warm failure of
    # its own, which must not count as a kill.
    (tmp_path / "tests" / "test_pid.py").write_text(
        "import os\n\nfrom pkg import mod\n\nIMPORTED_BY = os.getpid()\n\n\n"
        "def test_in_the_process_that_imported_it():\n"
        "    mod.double(1)\n    assert os.getpid() == IMPORTED_BY\n",
        encoding="utf-8",
    )
    return tmp_path


def test_warm_verdicts_match_forked_and_a_test_red_without_the_mutant_kills_nothing(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(project)],
        cwd=project,
        env={"PYTHONPATH": f"{project}:{ROOT / 'scripts'}", "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {
        "3": ["killed", "tests/test_a.py::test_double"],
        "4": ["survived", ""],
        # red warm without the mutant, so judged forked, where it passes: a survivor, not a kill
        "5": ["survived", ""],
        "6": ["killed", "tests/test_a.py::test_double"],
    }
    assert "3 mutants of one function's body go warm, 1 forked" in done.stderr
    assert "test_in_the_process_that_imported_it fails in a warm session with no mutant" in done.stderr


def test_the_first_failure_is_read_from_pytests_short_summary_alone() -> None:
    summary = "=== short test summary info ==="
    failed = f"F.\n{summary}\nFAILED tests/t.py::test_a[1] - assert 1 == 2\nFAILED x\n"
    assert first_failure(failed) == "tests/t.py::test_a[1]"
    in_error = f"E\n{summary}\nERROR tests/t.py::test_b - fixture 'x' not found\n"
    assert first_failure(in_error) == "tests/t.py::test_b"
    # a failure's captured log comes before the summary, and its lines can start with ERROR too
    logged = "--- Captured log call ---\nERROR    pkg:mod.py:78 could not restore\n"
    assert first_failure(f"F\n{logged}{summary}\nFAILED tests/t.py::test_c - boom\n") == "tests/t.py::test_c"
    assert first_failure(f"F\n{logged}") == ""
    assert first_failure("1 passed\n") == ""

"""A phase's time limit follows what its tests took in the map's run: a slow machine makes no kill."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest
from mutation_sweep import jobs, select_tests, selection
from mutation_sweep.generate import Generated
from mutation_sweep.runners import forked
from mutation_sweep.select_tests import SUITE
from mutation_sweep.work_item import Mutant

from .programs import answer, beside

ROOT = Path(__file__).resolve().parents[2]


def test_a_phase_may_take_a_multiple_of_what_its_tests_took_in_the_map() -> None:
    mutant = Mutant("pkg/mod.py", "f", "replace-value", "1", "2", 1, 1)
    job = forked.Job(mutant, "pkg.mod", "", ("t::a",), timeout_scale=2.0)
    assert forked.limit_s(job, 10.0) == 20.0
    slow = forked.Job(mutant, "pkg.mod", "", ("t::a",), timeout_scale=2.0, expected_s=15.0)
    assert forked.limit_s(slow, 10.0) == forked.EXPECTED_MARGIN * 15.0
    # never past the whole suite's limit, so that a mutant that hangs is not waited for longer
    hanging = forked.Job(mutant, "pkg.mod", "", ("t::a",), expected_s=1000.0)
    assert forked.limit_s(hanging, 10.0) == forked.EXPECTED_CAP_SCALE * 10.0
    assert forked.limit_s(dataclasses.replace(hanging, timeout_scale=10.0), 10.0) == 100.0


def test_each_job_carries_the_seconds_of_its_longest_phase(tmp_path: Path) -> None:
    (tmp_path / "guard_lib").mkdir()
    (tmp_path / "guard_lib" / "a.py").write_text("def f():\n    a = 1\n    b = 2\n", encoding="utf-8")

    def mutant(line: int, *, at_import: bool = False) -> Mutant:
        return Mutant("guard_lib/a.py", "f", "replace-value", "1", "2", line, line, at_import=at_import)

    body, header = mutant(2), mutant(3, at_import=True)
    made_of = [body, header]
    generated = Generated(made_of, {m.id: "" for m in made_of}, Counter(), {})
    mapping = select_tests.TestMap(
        {"guard_lib/a.py": {2: ("t.py::a", "t.py::b"), 3: ("t.py::a",)}},
        ("t.py", "u.py"),
        ("u.py::traced",),
        {"t.py::a": 1.0, "t.py::b": 2.0, "u.py::traced": 5.0, "t.py": 3.0, "u.py": 9.0},
    )
    made, _ = jobs.make(
        made_of, generated, root=tmp_path, files=[], mapping=mapping, scratch=tmp_path, parallel=1
    )
    expected = {j.mutant.line: j.expected_s for j in made}
    # the body's own tests take 3 s, the traced one 5 s; what runs at import may go on to the suite (12 s)
    assert expected == {2: 5.0, 3: 12.0}
    assert selection.phase_seconds(mapping, (SUITE,)) == 12.0
    # where the map saw what the collection imports, what runs at import is proven by its state, whose
    # difference sends it to the suite as well
    proving = dataclasses.replace(mapping, collected=("guard_lib", "guard_lib.a"))
    [proof] = jobs.make(
        [header], generated, root=tmp_path, files=[], mapping=proving, scratch=tmp_path, parallel=1
    )[0]
    assert proof.then_state
    assert proof.expected_s == 12.0
    # a test the map did not time costs its whole file
    assert selection.phase_seconds(mapping, ("u.py::untimed",)) == 9.0


# A fresh interpreter: the runners fork, which a forking pytest process would confuse. Each job's limit is
# recorded as the runners ask for it; nothing is timed: the mutants 3 and 5 hang until they are stopped,
# the others end at once.
PROGRAM = """
import json, sys
from pathlib import Path
from mutation_sweep.runners import forked, warm
from mutation_sweep.work_item import Mutant

root = Path(sys.argv[1])
source = (root / "pkg" / "mod.py").read_text()
limits = {}
real_limit_s = forked.limit_s

def limit_s(job, timeout_s):
    limits[job.mutant.mutated] = real_limit_s(job, timeout_s)
    return limits[job.mutant.mutated]

forked.limit_s = limit_s

def job(new, expected, fit):
    mutant = Mutant("pkg/mod.py", "double", "replace-value", "2", new, 2, 2)
    return forked.Job(
        mutant, "pkg.mod", source.replace("x * 2", f"x * {new}"), ("tests/test_a.py::test_slowly",),
        ("tests/test_a.py",), warm=fit, expected_s=expected,
    )

jobs = [job("3", 0.0, False), job("4", 2.0, False), job("5", 0.0, True), job("6", 2.0, True)]
results = warm.run(jobs, root, ["tests", "-q"], parallel=1, timeout_s=1.0, preload=(), on_result=print)
print(json.dumps([{r.mutant.mutated: r.verdict for r in results}, limits]))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "mod.py").write_text("def double(x):\n    return x * 2\n", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        "import threading\n\nfrom pkg import mod\n\n\n"
        "def test_slowly():\n    if mod.double(1) in (3, 5):\n        threading.Event().wait()\n",
        encoding="utf-8",
    )
    return tmp_path


def test_a_slow_phase_within_its_maps_time_survives_forked_and_warm(project: Path) -> None:
    verdicts, limits = answer(PROGRAM, [str(project)], cwd=project, env=beside(project))
    # forked (3, 4) and warm (5, 6), each phase is given the configured 1 s, or twice the 2 s its tests
    # took in the map's run
    assert limits == {"3": 1.0, "4": 4.0, "5": 1.0, "6": 4.0}
    assert verdicts == {"3": "timeout", "4": "survived", "5": "timeout", "6": "survived"}

"""A mutant of code run at import is judged by what the import leaves behind: the whole suite runs only on
an implementation where that differs from the unmutated package's; where it is the same, the tests that
import the module afresh (and, where lines moved, those that read line numbers) still run."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mutation_sweep import select_tests
from mutation_sweep.jobs import _state_proof
from mutation_sweep.runners import forked
from mutation_sweep.runners.forked import DIFFERS, MOVED, SAME, STATE, next_phase
from mutation_sweep.select_tests import SUITE
from mutation_sweep.work_item import Mutant

MODULE = """import contextvars
import logging
import os

LIMIT = 3
CURRENT = contextvars.ContextVar("current", default=None)
MODE = "flag" if os.environ.get("PKG_FLAG") else "plain"
SCALE = 2 if os.environ.get("GUARD_LIB_IMPL") == "compiled" else 2
logging.getLogger("pkg").warning("loaded")


def double(x, by=2):
    return x * by


def triple(x):
    return x * 3
"""

SWAPPED_IMPORTS = MODULE.replace(
    "import contextvars\nimport logging\n", "import logging\nimport contextvars\n"
)
SWAPPED_DEFS = MODULE.replace(
    "def double(x, by=2):\n    return x * by\n\n\ndef triple(x):\n    return x * 3\n",
    "def triple(x):\n    return x * 3\n\n\ndef double(x, by=2):\n    return x * by\n",
)


def _env(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), *sys.path]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _state(root: Path, source: str) -> tuple[str, str]:
    (root / "pkg" / "mod.py").write_text(source, encoding="utf-8")
    program = "from mutation_sweep.import_state import state; print(state('pkg', 'pkg.mod'))"
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=root, env=_env(root), capture_output=True, text=True, check=True
    )
    found = done.stdout.strip()
    assert not found.startswith("<"), found
    plain, layout = found.split(":")
    return plain, layout


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "mod.py").write_text(MODULE, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        "from pkg import mod\n\n\ndef test_double():\n    assert mod.double(2) == 4\n\n\n"
        "def test_limit():\n    assert mod.LIMIT == 3\n\n\ndef test_scale():\n    assert mod.SCALE == 2\n",
        encoding="utf-8",
    )
    (tmp_path / "tests" / "test_again.py").write_text(
        "import importlib, importlib.util, sys\n\n\ndef test_flag_read_at_import(monkeypatch):\n"
        "    monkeypatch.setenv('PKG_FLAG', '1')\n    monkeypatch.delitem(sys.modules, 'pkg.mod')\n"
        "    assert importlib.import_module('pkg.mod').MODE == 'flag'\n\n\n"
        "def test_run_again_by_its_loader():\n    spec = importlib.util.find_spec('pkg.mod')\n"
        "    again = importlib.util.module_from_spec(spec)\n    spec.loader.exec_module(again)\n"
        "    assert again.LIMIT == 3\n",
        encoding="utf-8",
    )
    return tmp_path


def test_the_state_tells_what_a_test_could_see_apart_from_what_it_cannot(project: Path) -> None:
    unmutated = _state(project, MODULE)
    assert _state(project, MODULE) == unmutated  # the same package, imported afresh: the same state
    assert _state(project, SWAPPED_IMPORTS) == unmutated  # the same names bound, no line moved
    moved = _state(project, SWAPPED_DEFS)
    assert moved[0] == unmutated[0]
    assert moved[1] != unmutated[1]  # the same state, its code on other lines
    for changed in (
        MODULE.replace("LIMIT = 3", "LIMIT = 4"),
        MODULE.replace("by=2", "by=3"),
        MODULE.replace("return x * 3", "return x * 4"),
        MODULE.replace("default=None", 'default="x"'),  # held where only its repr shows it
        MODULE.replace('warning("loaded")', 'warning("loaded!")'),  # what the import said
    ):
        assert _state(project, changed)[0] != unmutated[0], changed


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # a function held by another library's object, and which of two it holds
        ("NS.fn = lambda x=1: x", "NS.fn = lambda x=2: x"),
        ("A = frozenset({double, triple}); Z = double", "A = frozenset({double, triple}); Z = triple"),
        ("D = {double: 1, triple: 2}; Z = list(D)[0]", "D = {double: 1, triple: 2}; Z = list(D)[1]"),
        # what only a call reads: a context variable's value, a factory, the warning filters
        ("CURRENT.set(None)", "CURRENT.set(1)"),
        ("F = collections.defaultdict(list)", "F = collections.defaultdict(set)"),
        ("warnings.filterwarnings('ignore', 'a')", "warnings.filterwarnings('ignore', 'b')"),
        ("B = [].append", "B = [0].append"),
    ],
)
def test_what_another_library_holds_for_the_package_counts_too(
    project: Path, before: str, after: str
) -> None:
    tail = "\nimport collections, types, warnings\nNS = types.SimpleNamespace()\n"
    assert (
        _state(project, MODULE + tail + before + "\n")[0] != _state(project, MODULE + tail + after + "\n")[0]
    )


def test_the_probe_names_the_tests_that_import_a_module_afresh(
    project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    out = tmp_path_factory.mktemp("probe") / "imports"
    env = {**_env(project), "SWEEP_IMPORTS_OUT": str(out), "SWEEP_IMPORTS_PACKAGE": "pkg"}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "mutation_sweep.map_probe",
    ]
    done = subprocess.run(
        [*command, "tests"], cwd=project, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout
    from mutation_sweep import map_probe

    collected, importers = map_probe.read(out)
    assert collected == ("pkg", "pkg.mod")
    # a fresh import goes through the finders; a loader run again on a module's spec only through exec
    expected = (
        "tests/test_again.py::test_flag_read_at_import",
        "tests/test_again.py::test_run_again_by_its_loader",
    )
    assert importers == {"pkg.mod": expected}


# A fresh interpreter: the runner forks, which a forking pytest process would confuse.
PROGRAM = """
import dataclasses, json, sys
from pathlib import Path
from mutation_sweep.jobs import _state_proof
from mutation_sweep.runners import forked
from mutation_sweep.select_tests import SUITE, TestMap
from mutation_sweep.work_item import Mutant

root = Path(sys.argv[1])
original = (root / "pkg" / "mod.py").read_text()
mapping = TestMap(
    {},
    ("tests/test_a.py", "tests/test_again.py"),
    traced=("tests/test_a.py::test_double",),  # stands for the tests that read line numbers
    collected=("pkg", "pkg.mod"),
    importers={"pkg.mod": ("tests/test_again.py::test_flag_read_at_import",)},
)

def job(old, new, importers=False, core=False):
    mutant = Mutant("pkg/mod.py", "<module>", "replace-value", old, new, 1, 1, at_import=True)
    chosen = mapping if importers else dataclasses.replace(mapping, importers={})
    proof = _state_proof(mutant, (SUITE,), "pkg.mod", chosen, core)
    return dataclasses.replace(proof, source=original.replace(old, new), suite_order=mapping.suite_order)

jobs = [
    job("import contextvars\\nimport logging\\n", "import logging\\nimport contextvars\\n"),
    job("LIMIT = 3", "LIMIT = 4"),
    job("def double(x, by=2):\\n    return x * by\\n\\n\\ndef triple(x):\\n    return x * 3\\n",
        "def triple(x):\\n    return x * 3\\n\\n\\ndef double(x, by=2):\\n    return x * by\\n"),
    job('"flag" if', '"FLAG" if', importers=True),
    job("SCALE = 2 if", "SCALE = 5 if", core=True),
    job('warning("loaded")', 'warning("LOADED")'),
]
results = forked.run(jobs, root, ["tests", "-q"], parallel=1, timeout_s=120, on_result=lambda r: None)
print(json.dumps({r.mutant.original[:5]: [r.verdict, list(r.tests), r.failed, r.detail] for r in results}))
"""


def test_a_mutant_whose_import_leaves_the_same_state_runs_no_whole_suite(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(project)],
        cwd=project,
        env=_env(project),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    verdicts = json.loads(done.stdout.strip().splitlines()[-1])
    # the same state, no line moved: nothing left that a test could tell, so no test runs
    assert verdicts["impor"] == ["survived", [STATE], "", "what the import left: python: the same"]
    # another state: the whole suite decides, and kills it
    assert verdicts["LIMIT"] == [
        "killed",
        [SUITE],
        "tests/test_a.py::test_limit",
        "what the import left: python: differs",
    ]
    # the same state on other lines: the tests that read line numbers run, and pass
    assert verdicts["def d"] == [
        "survived",
        ["tests/test_a.py::test_double"],
        "",
        "what the import left: python: the same, lines moved",
    ]
    # the same state, but a test imports the module afresh under another environment: it runs first, and kills
    again = "tests/test_again.py::test_flag_read_at_import"
    assert verdicts['"flag'] == ["killed", [again], again, ""]
    # the same on the reference, not on the core: the whole suite runs there, and kills
    assert verdicts["SCALE"] == [
        "killed",
        [SUITE],
        "tests/test_a.py::test_scale",
        "what the import left: python: the same, compiled: differs",
    ]
    # what the import logs is part of what it left, also where the runner imports the mutant
    assert verdicts["warni"] == ["survived", [SUITE], "", "what the import left: python: differs"]


def _job(**fields: object) -> forked.Job:
    mutant = Mutant("pkg/mod.py", "<module>", "replace-value", "3", "4", 4, 4, at_import=True)
    return dataclasses.replace(forked.Job(mutant, "pkg.mod", "", ("t::reach",)), **fields)  # type: ignore[arg-type]


def test_the_phases_of_a_proof_by_state() -> None:
    both = _job(
        then_state=(("", (), ("t::reader",)), ("compiled", ("t::reach",), ("t::reader",))), then_compiled=True
    )
    on_reference = next_phase(both)
    assert on_reference is not None
    assert (on_reference.tests, on_reference.impl, on_reference.readers) == ((STATE,), "", ("t::reader",))
    # differs on the reference: the whole suite there, then on the core
    suite = next_phase(on_reference, DIFFERS)
    assert suite is not None
    assert (suite.tests, suite.impl, suite.then_state, suite.then_compiled) == ((SUITE,), "", (), True)
    # the same, lines moved: the readers run, then the core's comparison
    readers = next_phase(on_reference, MOVED)
    assert readers is not None
    assert readers.tests == ("t::reader",)
    on_core = next_phase(readers)
    assert on_core is not None
    assert (on_core.tests, on_core.impl, on_core.then_tests) == ((STATE,), "compiled", ("t::reach",))
    # the same on the core too: its importers run there, and nothing after them
    reach = next_phase(on_core, SAME)
    assert reach is not None
    assert (reach.tests, reach.impl) == (("t::reach",), "compiled")
    assert next_phase(reach) is None
    # differs on the core: the whole suite on the core alone
    core_suite = next_phase(on_core, DIFFERS)
    assert core_suite is not None
    assert (core_suite.tests, core_suite.impl, core_suite.then_compiled) == ((SUITE,), "compiled", False)
    assert next_phase(core_suite) is None


def test_a_mutant_at_import_runs_its_importers_first_and_the_map_decides_whether_it_is_proven_so() -> None:
    mutant = Mutant("pkg/mod.py", "<module>", "replace-value", "3", "4", 4, 4, at_import=True)
    mapping = select_tests.TestMap(
        {},
        ("tests/test_a.py",),
        traced=("tests/test_t.py::test_traced",),
        collected=("pkg", "pkg.mod"),
        importers={"pkg.mod": ("tests/test_again.py::test_flag",)},
    )
    job = _state_proof(mutant, (SUITE,), "pkg.mod", mapping, on_core=True)
    assert job is not None
    assert job.tests == ("tests/test_again.py::test_flag",)
    assert job.then_state == (
        ("", (), ("tests/test_t.py::test_traced",)),
        ("compiled", ("tests/test_again.py::test_flag",), ("tests/test_t.py::test_traced",)),
    )
    assert (job.then_suite, job.then_compiled, job.collected) == (False, True, ("pkg", "pkg.mod"))
    # nobody imports it afresh: the comparison comes first
    alone = _state_proof(
        mutant, (SUITE,), "pkg.mod", dataclasses.replace(mapping, importers={}), on_core=False
    )
    assert alone is not None
    assert (alone.tests, alone.readers, alone.then_state) == ((STATE,), ("tests/test_t.py::test_traced",), ())
    # a map that did not watch the imports proves nothing this way; a mutant in a function is not one
    assert (
        _state_proof(mutant, (SUITE,), "pkg.mod", dataclasses.replace(mapping, collected=()), on_core=True)
        is None
    )
    inside = dataclasses.replace(mutant, scope="double", at_import=False)
    assert _state_proof(inside, ("t",), "pkg.mod", mapping, on_core=True) is None

"""The one command, end to end, over an engine plugged in by entry point and named nowhere else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TOY = """
import json, os
from pathlib import Path
from guard_mutation.engines import SuiteRed
from guard_mutation.model import Mutant, Outcome, Record, Run

DIFF = "--- a/pkg/m.py\\n+++ b/pkg/m.py\\n@@ -1 +1 @@\\n-X = 1\\n+X = 2\\n"


class Toy:
    name = "toy"

    def mutants(self, request):
        diffs = {i: DIFF.replace("X = 2", f"X = {i + 1}") for i in (1, 2)}
        return [Mutant("toy", f"t{i}", "pkg/m.py", 1, 1, "flip", diffs[i], "pkg.m:<module>") for i in (1, 2)]

    def run(self, request):
        verdicts = json.loads(Path(os.environ["TOY_VERDICTS"]).read_text())
        Path(os.environ["TOY_VERDICTS"]).with_name("previous").write_text(str(request.previous is not None))
        if "red" in verdicts:
            raise SuiteRed([verdicts["red"]])
        half = request.options.get("half") == "yes"  # an engine's own option that makes a part
        chosen = [m for m in self.mutants(request) if not request.only or m.id in request.only]
        chosen = [m for m in chosen if not (half and m.id == "t2")]
        records = tuple(Record(m, Outcome(verdicts[m.id], killers=("t.py::test_x",))) for m in chosen)
        return Run("toy", records, whole=request.whole and not half)


ENGINE = Toy()
"""
CONFIG = '[harness]\npackage = "pkg"\ntests = ["tests"]\n'
REVIEW = """
[[reviewed]]
engine = "toy"
function = "pkg.m:<module>"
diff = "X = 3"
reason = "X is not read."
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    plugins = tmp_path / "plugins"
    (plugins / "toy_engine-0.1.dist-info").mkdir(parents=True)
    (plugins / "toy_engine.py").write_text(TOY)
    (plugins / "toy_engine-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: toy-engine\nVersion: 0.1\n"
    )
    (plugins / "toy_engine-0.1.dist-info" / "entry_points.txt").write_text(
        "[guard_mutation.engines]\ntoy = toy_engine:ENGINE\n"
    )
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "m.py").write_text("X = 1\n")
    (root / "mutation_config.toml").write_text(CONFIG)
    verdicts(root, t1="killed", t2="survived")
    return root


def verdicts(root: Path, **by_id: str) -> None:
    (root / "verdicts.json").write_text(json.dumps(by_id))


def tool(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(root.parent / "plugins"), TOY_VERDICTS=str(root / "verdicts.json"))
    return subprocess.run(
        [sys.executable, "-m", "guard_mutation", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_plugged_in_engine_is_listed_run_stored_reported_and_gated(project: Path) -> None:
    listed = tool(project, "list", "toy")
    assert listed.stdout.splitlines() == [f"toy\tt{i}\tpkg/m.py:1\tflip\tpkg.m:<module>" for i in (1, 2)]
    ran = tool(project, "run", "toy", "--json", "out/verdicts.json")
    assert ran.returncode == 1, ran.stderr
    assert "FINDING: toy t2 (pkg/m.py:1, pkg.m:<module>) survived, reviewed by nobody: X = 3" in ran.stdout
    assert json.loads((project / "out" / "verdicts.json").read_text())["t2"]["verdict"] == "survived"
    stored = json.loads((project / "reports" / "mutation-store.json").read_text())
    assert [r["mutant"]["id"] for r in stored["runs"]["toy"]["records"]] == ["t1", "t2"]
    report = tool(project, "report", "--markdown", "out/summary.md", "--json", "out/report.json")
    assert report.returncode == 0, report.stderr
    assert "toy: 50.0 %" in (project / "out" / "summary.md").read_text()
    gated = tool(project, "gate")
    assert (gated.returncode, gated.stdout.splitlines()[-1]) == (1, "gate: FAILED")
    (project / "mutation_config.toml").write_text(CONFIG + REVIEW)
    assert (tool(project, "gate").returncode, tool(project, "gate").stdout.splitlines()[-1]) == (
        0,
        "gate: PASSED",
    )
    shown = tool(project, "show", "t2")
    assert "verdict': 'survived'" in shown.stdout
    assert "+X = 3" in shown.stdout


def test_fresh_hands_an_engine_no_earlier_run(project: Path) -> None:
    tool(project, "run", "toy")
    tool(project, "run", "toy")
    assert (project / "previous").read_text() == "True"
    tool(project, "run", "toy", "--fresh")
    assert (project / "previous").read_text() == "False"


def test_a_review_its_engine_refutes_fails_the_gate(project: Path) -> None:
    (project / "mutation_config.toml").write_text(CONFIG + REVIEW)
    verdicts(project, t1="survived", t2="killed")
    tool(project, "run", "toy")
    gated = tool(project, "gate")
    assert gated.returncode == 1
    assert "is refuted: t2 was killed by t.py::test_x" in gated.stdout


def test_red_tests_end_the_run_with_the_failing_tests_and_exit_1(project: Path) -> None:
    verdicts(project, red="tests/test_m.py::test_a")
    done = tool(project, "run", "toy")
    assert done.returncode == 1
    assert not (project / "reports").exists()
    assert done.stdout.splitlines()[-2:] == [
        "  tests/test_m.py::test_a",
        "run one again: python -m pytest 'tests/test_m.py::test_a'",
    ]


def test_a_part_of_a_run_is_judged_but_never_stored(project: Path) -> None:
    ran = tool(project, "run", "toy", "--only", "t1")
    assert ran.returncode == 0
    assert "toy (a part): 100.0 %" in ran.stdout
    assert not (project / "reports").exists()


def test_a_part_an_engine_makes_is_stored_but_never_over_a_whole_run(project: Path) -> None:
    assert tool(project, "run", "toy", "--option", "half=yes").returncode == 0
    held = project / "reports" / "mutation-store.json"
    assert json.loads(held.read_text())["runs"]["toy"]["whole"] is False
    assert "toy (a part): 100.0 %" in tool(project, "gate").stdout
    tool(project, "run", "toy")
    again = tool(project, "run", "toy", "--option", "half=yes")
    assert "not stored: a part of toy's run never replaces the whole run" in again.stdout
    assert json.loads(held.read_text())["runs"]["toy"]["whole"] is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", "nosuch"), "no engine named 'nosuch'; installed: "),
        (("gate",), "no engine's run is stored"),
        (("run", "toy", "--config", "missing.toml"), "missing.toml: no such config file"),
        (("run", "toy", "--changed-since", "nosuch"), "'nosuch': not a commit"),
        (("run", "toy", "--option", "novalue"), "give KEY=VALUE"),
        (("show", "t9"), "no mutant 't9'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_with_the_store_untouched(
    project: Path, args: tuple[str, ...], message: str
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    done = tool(project, *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert message in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert not (project / "reports").exists()


def test_a_plug_in_that_does_not_load_is_named(project: Path) -> None:
    (project.parent / "plugins" / "toy_engine.py").write_text("raise ImportError('no toy today')\n")
    done = tool(project, "run", "toy")
    assert done.returncode == 2
    assert "engine 'toy' (toy_engine:ENGINE) does not load: no toy today" in done.stderr


def test_the_gate_and_the_report_import_no_engine() -> None:
    code = (
        "import sys, guard_mutation.cli, guard_mutation.report\n"
        "print(sorted(m for m in sys.modules if 'engines.' in m or m.startswith('mutmut')))"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        == "[]\n"
    )

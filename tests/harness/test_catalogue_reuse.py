"""The catalogue's reuse of an earlier run: what a verdict depends on, and which verdicts a run keeps.

The digests are read in-process from a copy of tests/harness/fixture_project with two test files (the
entries "add" and "clamp" name one each), so that each input can be changed alone.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import critical_harness.cli as harness_cli
import pytest
from critical_harness import reuse
from critical_harness.catalogue import load_config
from critical_harness.model import Config, Mutant
from mutation_io import InputError

FIXTURE = Path(__file__).resolve().parent / "fixture_project"
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "critical_mutants.py"

CONFIG = """\
[harness]
package = "counterpkg"
tests = ["tests"]
timeout_s = 20
jobs = 1
canary = "clamp"  # the canary runs whenever anything does: here, the entry whose test changes

[[mutant]]
id = "add"
file = "counterpkg/core.py"
scope = "add"
replace = "a + b"
by = "a - b"
why = "addition must add"
killed_by = ["tests/check_core.py::test_add"]

[[mutant]]
id = "clamp"
file = "counterpkg/core.py"
scope = "clamp"
replace = "return low"
by = "return high"
why = "values below the range are raised to it"
killed_by = ["tests/check_clamp.py::test_clamp_below"]
"""

CLAMP_TEST = """\
from counterpkg import clamp


def test_clamp_below() -> None:
    assert clamp(-4, 0, 10) == 0
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    (root / "mutation_config.toml").write_text(CONFIG, encoding="utf-8")
    (root / "tests" / "check_clamp.py").write_text(CLAMP_TEST, encoding="utf-8")
    return root


def _config(root: Path) -> Config:
    return load_config(root / "mutation_config.toml", root)


def _digests(root: Path, runtime: str = "simulated", full: bool = False) -> dict[str, str]:
    config = _config(root)
    return reuse.digests(config, list(config.mutants), runtime, full)


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_comments_and_spacing_change_no_digest(project: Path) -> None:
    before = _digests(project)
    _append(project / "counterpkg" / "core.py", "\n\n# a comment\n")
    _append(project / "tests" / "check_core.py", "   # another\n")
    assert _digests(project) == before
    assert _digests(project) == _digests(project)


def test_a_change_of_the_packages_code_changes_every_digest(project: Path) -> None:
    before = _digests(project)
    _append(project / "counterpkg" / "__init__.py", "\nEXTRA = 1\n")
    after = _digests(project)
    assert all(after[i] != before[i] for i in before)


def test_a_change_of_how_the_tests_run_changes_every_digest(project: Path) -> None:
    # pytest's configuration decides what fails: a warning made an error kills what a warning alone would not
    before = _digests(project)
    _append(project / "pytest.ini", "filterwarnings = error\n")
    after = _digests(project)
    assert all(after[i] != before[i] for i in before)


def test_a_conftest_above_the_catalogues_tests_changes_every_digest(project: Path) -> None:
    config = project / "mutation_config.toml"
    config.write_text(
        CONFIG.replace('tests = ["tests"]', 'tests = ["tests/check_core.py"]'), encoding="utf-8"
    )
    before = _digests(project)
    (project / "tests" / "conftest.py").write_text("X = 1\n", encoding="utf-8")
    after = _digests(project)
    assert all(after[i] != before[i] for i in before)


def test_a_change_of_a_named_test_file_changes_only_the_digests_of_the_entries_naming_it(
    project: Path,
) -> None:
    before = _digests(project)
    _append(project / "tests" / "check_clamp.py", "\n\ndef test_more() -> None:\n    assert True\n")
    after = _digests(project)
    assert after["clamp"] != before["clamp"]
    assert after["add"] == before["add"]
    full = _digests(project, full=True)
    _append(project / "tests" / "check_clamp.py", "\n\ndef test_yet_more() -> None:\n    assert True\n")
    assert _digests(project, full=True)["add"] != full["add"]  # --full runs every named file


def test_a_helper_beside_the_tests_changes_every_digest(project: Path) -> None:
    before = _digests(project)
    (project / "tests" / "conftest.py").write_text("VALUE = 1\n", encoding="utf-8")
    after = _digests(project)
    assert all(after[i] != before[i] for i in before)


def test_an_unnamed_test_file_is_no_helper(project: Path) -> None:
    before = _digests(project)
    (project / "tests" / "test_other.py").write_text("def test_x() -> None:\n    pass\n", encoding="utf-8")
    assert _digests(project) == before


def test_the_entry_the_interpreter_the_runtime_and_the_mode_each_count(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _digests(project)
    assert _digests(project, runtime="cuda")["add"] != before["add"]
    assert _digests(project, full=True)["add"] != before["add"]
    config = (project / "mutation_config.toml").read_text(encoding="utf-8")
    (project / "mutation_config.toml").write_text(config.replace('by = "a - b"', 'by = "a * b"'))
    edited = _digests(project)
    assert edited["add"] != before["add"]
    assert edited["clamp"] == before["clamp"]
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    assert _digests(project)["clamp"] != before["clamp"]
    monkeypatch.undo()
    both = '"tests/check_clamp.py::test_clamp_below", "tests/check_core.py::test_add"'
    config = (project / "mutation_config.toml").read_text(encoding="utf-8")
    (project / "mutation_config.toml").write_text(
        config.replace('"tests/check_clamp.py::test_clamp_below"', both)
    )
    # an entry naming every test file runs the same files either way, and still counts as another run
    assert _digests(project, full=True)["clamp"] != _digests(project)["clamp"]


def _held(mutant: Mutant, verdict: str, depends: str) -> dict[str, object]:
    return {
        "id": mutant.spec.id,
        "verdict": verdict,
        "depends": depends,
        "seconds": 0.25,
        "failed_tests": ["tests/check_core.py::test_add"],
        "first_failure_test": "tests/check_core.py::test_add",
        "first_failure": "assert -1 == 5",
        "engine": "warm",
    }


def test_only_a_kill_whose_inputs_are_the_same_is_kept(project: Path) -> None:
    config = _config(project)
    add, clamp = config.mutants
    depends = reuse.digests(config, [add, clamp], "simulated", False)
    kept, again = reuse.split([add, clamp], depends, {"add": _held(add, "killed", depends["add"])})
    assert [r.mutant for r in kept] == [add]
    assert again == [clamp]
    (result,) = kept
    assert (result.verdict, result.reused, result.seconds, result.engine) == ("killed", True, 0.25, "warm")
    assert result.failed_tests == ["tests/check_core.py::test_add"]
    assert result.first_failure == ("tests/check_core.py::test_add", "assert -1 == 5")
    for earlier in (
        {"add": _held(add, "survived", depends["add"])},  # a finding is judged again
        {"add": _held(add, "killed", depends["clamp"])},  # an input changed
        {"add": {k: v for k, v in _held(add, "killed", depends["add"]).items() if k != "depends"}},
        {"clamp": _held(clamp, "killed", depends["add"])},
    ):
        kept, again = reuse.split([add], depends, earlier)
        assert (kept, again) == ([], [add])


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (None, "no such file"),
        ("{not json", "not readable JSON"),
        ('{"mutants": [{"verdict": "killed"}]}', "not the catalogue's results"),
        ("[]", "not the catalogue's results"),
    ],
)
def test_an_earlier_run_that_cannot_be_read_is_named(tmp_path: Path, text: str | None, words: str) -> None:
    path = tmp_path / "earlier.json"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=f"--reuse {path}: {words}"):
        reuse.read_earlier(path)


def test_a_run_that_can_reuse_everything_runs_nothing(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(project)
    depends = reuse.digests(config, list(config.mutants), "simulated", False)
    earlier = tmp_path / "earlier.json"
    held = [_held(m, "killed", depends[m.spec.id]) for m in config.mutants]
    earlier.write_text(json.dumps({"mutants": held}), encoding="utf-8")

    def no_run(*args: object) -> None:
        raise AssertionError("nothing should run")

    monkeypatch.setattr(harness_cli, "execute", no_run)
    out = tmp_path / "now.json"
    argv = ["--config", str(project / "mutation_config.toml"), "--root", str(project), "run"]
    assert harness_cli.main([*argv, "--reuse", str(earlier), "--json", str(out)]) == 0
    assert "2 verdict(s) reused" in capsys.readouterr().out
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["totals"]["reused"] == 2
    assert [(m["id"], m["reused"], m["depends"]) for m in written["mutants"]] == [
        ("add", True, depends["add"]),
        ("clamp", True, depends["clamp"]),
    ]
    assert harness_cli.main([*argv, "--reuse", str(tmp_path / "gone.json")]) == 2
    assert f"--reuse {tmp_path / 'gone.json'}: no such file" in capsys.readouterr().err


@pytest.mark.e2e
def test_a_second_run_reuses_the_first_until_a_named_test_changes(project: Path, tmp_path: Path) -> None:
    def run(*args: str) -> dict[str, dict[str, object]]:
        out = tmp_path / "out.json"
        subprocess.run(
            [
                sys.executable,
                str(SCRIPT),
                "--config",
                str(project / "mutation_config.toml"),
                "run",
                *args,
                "--json",
                str(out),
            ],
            cwd=project,
            check=True,
            capture_output=True,
            text=True,
            timeout=300,
        )
        data = json.loads(out.read_text(encoding="utf-8"))
        assert [m["id"] for m in data["mutants"]] == ["add", "clamp"]
        return {m["id"]: m for m in data["mutants"]}

    first = run()
    (tmp_path / "first.json").write_text(json.dumps({"mutants": list(first.values())}), encoding="utf-8")
    assert {i: (m["verdict"], m["reused"]) for i, m in first.items()} == {
        "add": ("killed", False),
        "clamp": ("killed", False),
    }
    second = run("--reuse", str(tmp_path / "first.json"))
    assert {i: m["reused"] for i, m in second.items()} == {"add": True, "clamp": True}
    _append(project / "tests" / "check_clamp.py", "\n\ndef test_more() -> None:\n    assert True\n")
    third = run("--reuse", str(tmp_path / "first.json"))
    assert {i: (m["verdict"], m["reused"]) for i, m in third.items()} == {
        "add": ("killed", True),
        "clamp": ("killed", False),
    }
    assert third["clamp"]["depends"] != first["clamp"]["depends"]
    # The canary runs whenever anything does, and is listed once, as judged now.
    _append(project / "tests" / "check_core.py", "\n\ndef test_more() -> None:\n    assert True\n")
    (tmp_path / "third.json").write_text(json.dumps({"mutants": list(third.values())}), encoding="utf-8")
    fourth = run("--reuse", str(tmp_path / "third.json"))
    assert {i: (m["verdict"], m["reused"]) for i, m in fourth.items()} == {
        "add": ("killed", False),
        "clamp": ("killed", False),
    }

"""The warm engine gives every mutant the verdict the cold one gives it.

Warm: a mutant inside one function's body runs in a child forked from a server that imported the
package and collected the tests once, with the function's code swapped in. Cold: a fresh interpreter
per run. The fixture project covers every verdict; the project's own catalogue is run whole both ways.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_critical_mutants import (
    ADD_MINUS,
    BUMP,
    CLAMP_LOW,
    HANG,
    INVALID_IMPORT,
    INVALID_SYNTAX,
    NOT_EXERCISED,
    PARTLY_SKIPPED,
    REPO,
    SCRIPT,
    SURVIVOR,
    WRONG_OTHER,
    WRONG_PARTIAL,
    Cli,
    copy_fixture,
    fake_cuda,
    load_json,
    write_config,
)

if sys.version_info < (3, 11):
    pytest.skip("the warm engine finds code objects by co_qualname (Python 3.11+)", allow_module_level=True)


@pytest.fixture
def fixture_project(tmp_path: Path) -> Path:
    return copy_fixture(tmp_path / "project")


@pytest.fixture
def fixture_cli(tmp_path: Path, fixture_project: Path) -> Cli:
    return Cli.under(tmp_path, fixture_project)


def _verdicts(report: dict[str, object]) -> dict[str, tuple[str, str]]:
    mutants = report["mutants"]
    assert isinstance(mutants, list)
    return {m["id"]: (m["verdict"], m["engine"]) for m in mutants}


@pytest.mark.e2e
def test_every_verdict_is_the_same_warm_and_cold(
    fixture_cli: Cli, fixture_project: Path, tmp_path: Path
) -> None:
    cli, project = fixture_cli, fixture_project
    mutants = [ADD_MINUS, CLAMP_LOW, BUMP, SURVIVOR, WRONG_OTHER, WRONG_PARTIAL, INVALID_SYNTAX]
    mutants += [INVALID_IMPORT, NOT_EXERCISED, PARTLY_SKIPPED, HANG]
    write_config(project, mutants, timeout_s=3)
    runs = {}
    for engine in ("warm", "cold"):
        done = cli.run("--engine", engine, "--json", str(tmp_path / f"{engine}.json"), timeout=180)
        assert done.returncode == 1, done.stderr  # the survivor, the wrong reasons, ...
        runs[engine] = _verdicts(load_json(tmp_path / f"{engine}.json"))
    warm, cold = runs["warm"], runs["cold"]
    assert {k: v for k, (v, _) in warm.items()} == {k: v for k, (v, _) in cold.items()}
    assert {v for v, _ in cold.values()} == {
        "killed",
        "survived",
        "wrong-reason",
        "invalid",
        "not-exercised",
        "timeout",
    }
    assert all(engine == "cold" for _, engine in cold.values())
    # a mutant in a function's body goes warm; a class attribute, a signature or a broken file goes cold
    assert warm["add-minus"][1] == "warm"
    assert warm["add-hangs"] == ("timeout", "warm")
    assert warm["label-name-error"][1] == "cold"  # class body: runs at import
    assert warm["bump-default"][1] == "cold"  # a default value: evaluated when the def runs
    assert warm["add-syntax"][1] == "cold"


@pytest.mark.e2e
def test_warm_children_run_in_the_session_the_server_collected(
    fixture_cli: Cli, fixture_project: Path, tmp_path: Path
) -> None:
    # A conftest that logs every collection: one per warm server, however many runs it serves.
    log = tmp_path / "collections.log"
    conftest = fixture_project / "tests" / "conftest.py"
    conftest.write_text(
        "import os\n\n\ndef pytest_collection_finish(session):\n"
        "    with open(os.environ['COLLECTIONS_LOG'], 'a') as log:\n"
        "        log.write(f'{os.getpid()}\\n')\n",
        encoding="utf-8",
    )
    fixture_cli.extra_env = {"COLLECTIONS_LOG": str(log)}
    write_config(fixture_project, [ADD_MINUS, CLAMP_LOW, BUMP], jobs=1, preload=["json", "email.parser"])
    done = fixture_cli.run("--json", str(tmp_path / "report.json"))
    assert done.returncode == 0, done.stderr
    verdicts = _verdicts(load_json(tmp_path / "report.json"))
    assert set(verdicts.values()) == {("killed", "warm")}
    # the baseline and three mutants were served by one server, from the one collection it made
    assert len(log.read_text().splitlines()) == 1


def test_a_job_names_its_tests_as_pytest_takes_them_on_its_command_line() -> None:
    from _warm_server import wanted

    assert wanted("tests/t.py::f", "tests/t.py::f")
    assert wanted("tests/t.py::f[1-a]", "tests/t.py::f")  # every case of a parametrized test
    assert wanted("tests/t.py::C::m", "tests/t.py::C")
    assert wanted("tests/t.py::f", "tests/t.py")
    assert wanted("tests/sub/t.py::f", "tests")
    assert wanted("tests/sub/t.py::f", "tests/")
    assert not wanted("tests/t.py::fa", "tests/t.py::f")
    assert not wanted("tests/t.py::f", "tests/t")
    assert not wanted("tests2/t.py::f", "tests")
    assert not wanted("tests/t.py::f[1]", "tests/t.py::f[2]")


@pytest.mark.e2e
def test_a_preload_that_cannot_be_imported_sends_the_mutants_cold(
    fixture_cli: Cli, fixture_project: Path, tmp_path: Path
) -> None:
    write_config(fixture_project, [ADD_MINUS, CLAMP_LOW], preload=["json", "no_such_module_anywhere"])
    done = fixture_cli.run("--json", str(tmp_path / "report.json"))
    assert done.returncode == 0, done.stderr
    # said in full, wrapped to the terminal
    assert "could not import [harness] preload: no_such_module_anywhere" in " ".join(done.stderr.split())
    assert set(_verdicts(load_json(tmp_path / "report.json")).values()) == {("killed", "cold")}


@pytest.mark.e2e
def test_the_cuda_runtime_always_goes_cold(fixture_cli: Cli, fixture_project: Path, tmp_path: Path) -> None:
    cli, project = fixture_cli, fixture_project
    write_config(project, [ADD_MINUS, CLAMP_LOW])
    cli.extra_env = fake_cuda(tmp_path, error=0, count=1)
    done = cli.run("--runtime", "cuda", "--json", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stderr
    report = load_json(tmp_path / "r.json")
    assert report["engine"] == "cold"
    assert {engine for _, engine in _verdicts(report).values()} == {"cold"}


@pytest.mark.e2e
@pytest.mark.whole_catalogue
def test_the_whole_catalogue_gives_the_same_verdicts_warm_and_cold(tmp_path: Path) -> None:
    verdicts, reports = {}, {}
    for engine in ("warm", "cold"):
        out = tmp_path / f"{engine}.json"
        done = subprocess.run(
            [sys.executable, str(SCRIPT), "run", "--engine", engine, "--json", str(out)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert done.returncode in (0, 1), done.stderr[-2000:]
        reports[engine] = json.loads(out.read_text(encoding="utf-8"))
        verdicts[engine] = _verdicts(reports[engine])
    warm, cold = verdicts["warm"], verdicts["cold"]
    assert {k: v for k, (v, _) in warm.items()} == {k: v for k, (v, _) in cold.items()}
    assert sum(engine == "warm" for _, engine in warm.values()) >= len(warm) // 2
    # The compiled mutants, woven into one build, fail the very tests their own builds fail; only the
    # ones outside every function (a class body, a C block) are rebuilt on their own.
    compiled = {m["id"]: m for m in reports["warm"]["mutants"] if m["file"].endswith(".pyx")}
    rebuilt = {i for i, m in compiled.items() if m["engine"] == "cold"}
    assert rebuilt == {"core-c-int-overflow", "core-thread-id-as-owner"}
    cold_failed = {m["id"]: m["failed_tests"] for m in reports["cold"]["mutants"] if m["id"] in compiled}
    assert {i: m["failed_tests"] for i, m in compiled.items()} == cold_failed


@pytest.mark.e2e
def test_a_woven_build_that_does_not_build_sends_every_compiled_mutant_to_its_own(tmp_path: Path) -> None:
    config = tmp_path / "mutation_config.toml"
    broken = (
        '\n[[mutant]]\nid = "core-does-not-build"\nfile = "guard_lib/_core.pyx"\nscope = "_Borrow._enter"\n'
        'replace = "if type(index) is not int:"\nby = "if type(index) is not int:::"\nwhy = "Not Cython."\n'
        'killed_by = ["tests/behaviour/test_device_guard.py::test_device_is_not_reentrant[plain]"]\n'
    )
    config.write_text((REPO / "mutation_config.toml").read_text(encoding="utf-8") + broken, encoding="utf-8")
    ids = ["core-reentered", "core-close-restores-twice", "core-does-not-build"]
    out = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "run", "--config", str(config), "--root", str(REPO), "--json", str(out)]
        + [arg for i in ids for arg in ("--only", i)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert "[woven] the woven build failed" in done.stderr
    verdicts = _verdicts(json.loads(out.read_text(encoding="utf-8")))
    assert verdicts["core-does-not-build"] == ("invalid", "cold")
    assert verdicts["core-reentered"] == verdicts["core-close-restores-twice"] == ("killed", "cold")

"""Tests of scripts/critical_mutants.py against the tiny project in tests/harness/fixture_project.

Every behaviour test copies the fixture project into tmp_path, writes the config it needs, runs the
CLI as a subprocess (with TMPDIR pointed at a private directory, so temp-dir cleanup is observable)
and checks exit status, output and that the project tree is byte-identical afterwards.  The anchor
rules are also tested in-process through build_mutant, because their edge cases are cheaper there.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "critical_mutants.py"
FIXTURE = Path(__file__).resolve().parent / "fixture_project"
CORE = "counterpkg/core.py"
T = "tests/check_core.py::"

import critical_mutants as cm  # noqa: E402
from mutation_model import mutant_key  # noqa: E402

Mutant = dict[str, object]


def mutant(mid: str, scope: str, killed_by: list[str], *, file: str = CORE, **edit: str) -> Mutant:
    return {"id": mid, "file": file, "scope": scope, **edit, "why": f"why {mid}", "killed_by": killed_by}


ADD_MINUS = mutant("add-minus", "add", [T + "test_add"], replace="a + b", by="a - b")
CLAMP_LOW = mutant(
    "clamp-low-deleted", "clamp", [T + "test_clamp_below"], delete="if value < low:\n    return low\n"
)
BUMP = mutant("bump-forgets-count", "Counter.bump", [T + "test_bump"], delete="self.count += step")
SURVIVOR = mutant(
    "bump-default", "Counter.bump", [T + "test_bump"], replace="step: int = 1", by="step: int = 2"
)
WRONG_OTHER = mutant(
    "clamp-wrong-test", "clamp", [T + "test_clamp_inside"], replace="return low", by="return high"
)
WRONG_PARTIAL = mutant(
    "clamp-half-right",
    "clamp",
    [T + "test_clamp_below", T + "test_clamp_inside"],
    replace="return low",
    by="return high",
)
INVALID_SYNTAX = mutant("add-syntax", "add", [T + "test_add"], replace="return a + b", by="return a +")
INVALID_IMPORT = mutant(
    "label-name-error", "Counter", [T + "test_bump"], replace='label = "counter"', by="label = undefined_name"
)
HANG = mutant("add-hangs", "add", [T + "test_add"], replace="return a + b", by="while True:\n    pass")
PARTLY_SKIPPED = mutant(
    "add-off-by-one", "add", [T + "test_add", T + "test_reset_on_cuda"], replace="a + b", by="a + b + 1"
)
NOT_EXERCISED = mutant("reset-noop", "Counter.reset", [T + "test_reset_on_cuda"], delete="self.count = 0")
SLOW = mutant(
    "clamp-sleeps",
    "clamp",
    [T + "test_clamp_inside"],
    replace="return value",
    by='__import__("time").sleep(60)\nreturn value',
)


def toml_value(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    # JSON string escapes are all valid TOML basic-string escapes.
    return json.dumps(value)


def config_text(mutants: list[Mutant], **harness: object) -> str:
    settings: dict[str, object] = {"package": "counterpkg", "tests": ["tests"], "timeout_s": 10, "jobs": 2}
    settings.update(harness)
    lines = ["[harness]", *(f"{key} = {toml_value(value)}" for key, value in settings.items())]
    for entry in mutants:
        lines += ["", "[[mutant]]", *(f"{key} = {toml_value(value)}" for key, value in entry.items())]
    return "\n".join(lines) + "\n"


def write_config(project: Path, mutants: list[Mutant], **harness: object) -> None:
    (project / "mutation_config.toml").write_text(config_text(mutants, **harness), encoding="utf-8")


def snapshot(root: Path) -> dict[str, str]:
    """Every path under root with its content hash: any edit, addition or removal changes it."""
    state: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            state[rel] = f"link:{os.readlink(path)}"
        elif path.is_dir():
            state[rel] = "dir"
        else:
            state[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


def copy_fixture(dest: Path) -> Path:
    shutil.copytree(FIXTURE, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return dest


@dataclass
class Cli:
    project: Path
    tmpdir: Path  # the harness's TMPDIR: its temp copies live here
    cwd: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def under(cls, base: Path, project: Path) -> Cli:
        (base / "tmp").mkdir()
        (base / "cwd").mkdir()
        return cls(project, base / "tmp", base / "cwd")

    def command(self, *args: str) -> list[str]:
        return [sys.executable, str(SCRIPT), "--config", str(self.project / "mutation_config.toml"), *args]

    def env(self) -> dict[str, str]:
        # Options meant for the outer pytest run must not leak into the fixture's runs.
        env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
        return {**env, "TMPDIR": str(self.tmpdir), **self.extra_env}

    def run(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        before = snapshot(self.project)
        done = subprocess.run(
            self.command(*args),
            cwd=self.cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert snapshot(self.project) == before, "the harness changed the project tree"
        return done


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_fixture(tmp_path / "project")


@pytest.fixture
def cli(tmp_path: Path, project: Path) -> Cli:
    return Cli.under(tmp_path, project)


def load_json(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def by_id(report: dict[str, object]) -> dict[str, dict[str, object]]:
    mutants = report["mutants"]
    assert isinstance(mutants, list)
    return {str(m["id"]): m for m in mutants}


# --------------------------------------------------------------------------- whole runs


@pytest.mark.e2e
def test_all_killed_exits_0_and_writes_reports(cli: Cli, tmp_path: Path) -> None:
    json_path, junit_path = tmp_path / "report.json", tmp_path / "report.xml"
    done = cli.run("--json", str(json_path), "--junit", str(junit_path), "--verbose")
    assert done.returncode == 0, done.stdout + done.stderr
    report = load_json(json_path)
    assert report["exit_code"] == 0
    assert report["runtime"] == "simulated"
    assert {i: m["verdict"] for i, m in by_id(report).items()} == {
        "add-minus": "killed",
        "clamp-low-deleted": "killed",
        "bump-forgets-count": "killed",
    }
    add = by_id(report)["add-minus"]
    assert add["canary"] is True
    assert add["failed_tests"] == [T + "test_add"]
    assert add["first_failure"] == "AssertionError: add(2, 3) must be 5"
    assert add["first_failure_test"] == T + "test_add"
    # Keyed as every engine keys a mutant: by what the edit does.
    assert add["key"] == mutant_key(CORE, "add", "CriticalMutant", "a + b", "a - b")
    # Its one killed_by entry failed on the first case: the kill is decided, the second case never runs.
    assert by_id(report)["bump-forgets-count"]["failed_tests"] == [T + "test_bump[1]"]
    assert "AssertionError: add(2, 3) must be 5" in done.stdout
    suite = ET.parse(junit_path).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "3"
    assert suite.get("failures") == "0"
    assert list(cli.tmpdir.iterdir()) == [], "temporary copies were left behind"


@dataclass
class MixedRun:
    done: subprocess.CompletedProcess[str]
    report: dict[str, object]
    junit: ET.Element


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> MixedRun:
    base = tmp_path_factory.mktemp("mixed")
    project = copy_fixture(base / "project")
    mutants = [ADD_MINUS, SURVIVOR, WRONG_OTHER, WRONG_PARTIAL, INVALID_SYNTAX, INVALID_IMPORT, NOT_EXERCISED]
    mutants.append(PARTLY_SKIPPED)
    write_config(project, mutants, jobs=2)
    cli = Cli.under(base, project)
    done = cli.run("--json", str(base / "r.json"), "--junit", str(base / "r.xml"), "--verbose")
    return MixedRun(done, load_json(base / "r.json"), ET.parse(base / "r.xml").getroot())


@pytest.mark.e2e
def test_survivor_exits_1_and_is_named(mixed: MixedRun) -> None:
    assert mixed.done.returncode == 1
    assert by_id(mixed.report)["bump-default"]["verdict"] == "survived"
    table_row = next(line for line in mixed.done.stdout.splitlines() if line.startswith("bump-default"))
    assert "survived" in table_row
    assert "should have failed and did not: tests/check_core.py::test_bump" in table_row
    assert "+    def bump(self, step: int = 2) -> int:" in mixed.done.stdout  # the survivor's diff


@pytest.mark.e2e
def test_killed_by_passing_while_other_test_fails_is_wrong_reason(mixed: MixedRun) -> None:
    entry = by_id(mixed.report)["clamp-wrong-test"]
    assert entry["verdict"] == "wrong-reason"
    assert entry["finding"] is True
    assert entry["missing_killed_by"] == [T + "test_clamp_inside"]
    assert entry["failed_tests"] == [T + "test_clamp_below"]
    assert "=== clamp-wrong-test: wrong-reason ===" in mixed.done.stdout


@pytest.mark.e2e
def test_kill_by_only_some_killed_by_tests_is_wrong_reason(mixed: MixedRun) -> None:
    entry = by_id(mixed.report)["clamp-half-right"]
    assert entry["verdict"] == "wrong-reason"
    assert entry["missing_killed_by"] == [T + "test_clamp_inside"]
    row = next(line for line in mixed.done.stdout.splitlines() if line.startswith("clamp-half-right"))
    assert "should have failed and did not: tests/check_core.py::test_clamp_inside" in row


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("mid", "detail"),
    [("add-syntax", "does not compile"), ("label-name-error", "NameError")],
)
def test_broken_mutants_are_invalid_never_killed(mixed: MixedRun, mid: str, detail: str) -> None:
    entry = by_id(mixed.report)[mid]
    assert entry["verdict"] == "invalid"
    assert detail in str(entry["detail"])
    assert entry["failed_tests"] == []


@pytest.mark.e2e
def test_all_killed_by_skipped_is_not_exercised(mixed: MixedRun) -> None:
    entry = by_id(mixed.report)["reset-noop"]
    assert entry["verdict"] == "not-exercised"
    assert entry["skipped_killed_by"] == [T + "test_reset_on_cuda"]


@pytest.mark.e2e
def test_killed_by_skipped_on_this_runtime_need_not_fail(mixed: MixedRun) -> None:
    entry = by_id(mixed.report)["add-off-by-one"]
    assert entry["verdict"] == "killed"
    assert entry["skipped_killed_by"] == [T + "test_reset_on_cuda"]
    assert entry["missing_killed_by"] == []


@pytest.mark.e2e
def test_mixed_reports_totals_and_junit(mixed: MixedRun) -> None:
    totals = mixed.report["totals"]
    assert totals == {
        "killed": 2,
        "survived": 1,
        "wrong-reason": 2,
        "timeout": 0,
        "invalid": 2,
        "not-exercised": 1,
        "mutants": 8,
        "findings": 6,
        "reused": 0,
    }
    assert mixed.report["exit_code"] == 1
    suite = mixed.junit.find("testsuite")
    assert suite is not None
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert len(cases) == 8
    assert suite.get("failures") == "6"
    assert cases["add-minus"].find("failure") is None
    failure = cases["bump-default"].find("failure")
    assert failure is not None
    assert failure.get("type") == "survived"
    assert "step: int = 2" in (failure.text or "")


@pytest.mark.e2e
def test_hanging_mutant_times_out_within_its_limit(cli: Cli, project: Path, tmp_path: Path) -> None:
    write_config(project, [ADD_MINUS, HANG], timeout_s=2)
    done = cli.run("--json", str(tmp_path / "r.json"), timeout=60)  # the mutant never ends by itself
    assert done.returncode == 1
    entry = by_id(load_json(tmp_path / "r.json"))["add-hangs"]
    assert entry["verdict"] == "timeout"
    assert isinstance(entry["seconds"], float)


def fake_cuda(base: Path, error: int, count: int) -> dict[str, str]:
    """A ``cuda.bindings.runtime`` that answers the harness's device probe as told, first on PYTHONPATH."""
    package = base / "fake-cuda" / "cuda" / "bindings"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("", encoding="utf-8")
    (package / "__init__.py").write_text("", encoding="utf-8")
    name = "cudaSuccess" if error == 0 else "cudaErrorInsufficientDriver"
    (package / "runtime.py").write_text(
        f"def cudaGetDeviceCount():\n    return {error}, {count}\n"
        f"def cudaGetErrorName(err):\n    return 0, b'{name}'\n",
        encoding="utf-8",
    )
    return {"PYTHONPATH": str(base / "fake-cuda")}


@pytest.mark.e2e
def test_runtime_option_is_exported_to_the_tests(cli: Cli, project: Path, tmp_path: Path) -> None:
    write_config(project, [ADD_MINUS, NOT_EXERCISED])
    cli.extra_env = fake_cuda(tmp_path, error=0, count=1)
    done = cli.run("--runtime", "cuda")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cuda runtime" in done.stdout


@pytest.mark.e2e
def test_runtime_cuda_with_no_device_stops_before_the_baseline(
    cli: Cli, project: Path, tmp_path: Path
) -> None:
    cli.extra_env = fake_cuda(tmp_path, error=35, count=0)
    done = cli.run("--runtime", "cuda", "--json", str(tmp_path / "r.json"))
    assert done.returncode == 2
    assert "--runtime cuda: no CUDA device answers here (cudaErrorInsufficientDriver" in done.stderr
    assert "[baseline]" not in done.stderr
    assert not (tmp_path / "r.json").exists()


@pytest.mark.e2e
def test_report_folders_are_made_and_bad_report_paths_refused_before_running(
    cli: Cli, project: Path, tmp_path: Path
) -> None:
    write_config(project, [ADD_MINUS])
    nested = tmp_path / "not" / "yet" / "there" / "r.json"
    done = cli.run("--json", str(nested), "--junit", str(tmp_path / "also" / "new" / "r.xml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert load_json(nested)["exit_code"] == 0
    ET.parse(tmp_path / "also" / "new" / "r.xml")
    (tmp_path / "file").write_text("", encoding="utf-8")
    for option, path in (("--json", tmp_path), ("--junit", tmp_path / "file" / "under-a-file.xml")):
        refused = cli.run(option, str(path))
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.startswith(f"critical_mutants: config error: {option} ")
        assert "[baseline]" not in refused.stderr


@pytest.mark.e2e
def test_tables_fit_the_terminal_unless_verbose(cli: Cli, project: Path) -> None:
    long_why = "a reason long enough to run far past any terminal's right edge " * 4
    write_config(project, [{**ADD_MINUS, "why": long_why}])
    cli.extra_env = {"COLUMNS": "80"}
    clipped = cli.run("list")
    assert clipped.returncode == 0
    assert max(len(line) for line in clipped.stdout.splitlines()) == 80
    assert clipped.stdout.splitlines()[2].endswith("…")
    full = cli.run("list", "--verbose")
    assert long_why.strip() in full.stdout


@pytest.mark.e2e
def test_full_prints_kill_matrix(cli: Cli, project: Path, tmp_path: Path) -> None:
    write_config(project, [ADD_MINUS, CLAMP_LOW])
    done = cli.run("--full", "--json", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Kill matrix" in done.stdout
    # one character per mutant, in legend order, then the test
    grid = [line.split() for line in done.stdout.splitlines() if f"  {T}" in line]
    rows = {cells[1]: cells[0] for cells in grid if set(cells[0]) <= set("Kx.-")}
    assert rows == {T + "test_add": "K.", T + "test_clamp_below": ".K"}
    assert "    1: add-minus" in done.stdout
    assert "    2: clamp-low-deleted" in done.stdout
    matrix = load_json(tmp_path / "r.json")["kill_matrix"]
    assert matrix == {"add-minus": [T + "test_add"], "clamp-low-deleted": [T + "test_clamp_below"]}


@pytest.mark.e2e
def test_only_runs_the_selected_mutants_after_the_canary(cli: Cli, project: Path, tmp_path: Path) -> None:
    write_config(project, [ADD_MINUS, CLAMP_LOW, SURVIVOR])
    done = cli.run("--only", "clamp-low-deleted", "--json", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(by_id(load_json(tmp_path / "r.json"))) == {"add-minus", "clamp-low-deleted"}


@pytest.mark.e2e
@pytest.mark.parametrize("engine", ["warm", "cold"])
def test_cases_that_reach_the_mutant_run_first_and_decide_the_kill(
    cli: Cli, project: Path, tmp_path: Path, engine: str
) -> None:
    # test_each_op[add] never reaches clamp: under a clamp mutant it runs after [clamp], which fails and
    # decides the kill, so it never runs at all. Only the baseline runs it.
    high = mutant(
        "clamp-high-deleted", "clamp", [T + "test_each_op"], delete="if value > high:\n    return high\n"
    )
    write_config(project, [ADD_MINUS, high])
    ran = tmp_path / "ran.log"
    cli.extra_env["CHECK_CORE_RAN_LOG"] = str(ran)
    done = cli.run("--engine", engine, "--json", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert ran.read_text().split() == ["add", "clamp", "clamp"]
    assert by_id(load_json(tmp_path / "r.json"))["clamp-high-deleted"]["failed_tests"] == [
        T + "test_each_op[clamp]"
    ]


# --------------------------------------------------------------------------- refusing to run


def _add_red_test(project: Path) -> None:
    checks = project / "tests" / "check_core.py"
    checks.write_text(
        checks.read_text() + "\n\ndef test_deliberately_red() -> None:\n    assert False, 'red'\n"
    )


@pytest.mark.e2e
def test_red_killed_by_test_is_refused_naming_the_test(cli: Cli, project: Path) -> None:
    checks = project / "tests" / "check_core.py"
    checks.write_text(checks.read_text().replace("add(2, 3) == 5,", "add(2, 3) == 6,"))
    done = cli.run()
    assert done.returncode == 2
    assert "the unmutated killed_by tests are not green" in done.stderr
    assert "tests/check_core.py::test_add" in done.stderr
    assert "[start]" not in done.stderr


@pytest.mark.e2e
def test_red_suite_is_refused_up_front_under_full(cli: Cli, project: Path) -> None:
    _add_red_test(project)
    done = cli.run("--full")
    assert done.returncode == 2
    assert "the unmutated suite is not green" in done.stderr
    assert "tests/check_core.py::test_deliberately_red" in done.stderr
    assert "[start]" not in done.stderr


@pytest.mark.e2e
def test_red_test_outside_killed_by_is_refused_once_a_verdict_rests_on_it(cli: Cli, project: Path) -> None:
    _add_red_test(project)
    write_config(project, [ADD_MINUS, SURVIVOR])
    done = cli.run()
    assert done.returncode == 2
    assert "[baseline] a verdict rests on the rest of the suite" in done.stderr
    assert "the unmutated suite is not green" in done.stderr
    assert "tests/check_core.py::test_deliberately_red" in done.stderr


@pytest.mark.e2e
def test_red_test_outside_killed_by_holds_up_no_kill(cli: Cli, project: Path) -> None:
    # A kill rests on its killed_by tests alone, green unmutated: the rest of the suite never runs.
    _add_red_test(project)
    done = cli.run()
    assert done.returncode == 0, done.stderr
    assert "[baseline] running the unmutated killed_by tests of tests" in done.stderr
    assert "test_deliberately_red" not in done.stderr + done.stdout


@pytest.mark.e2e
def test_surviving_canary_voids_the_run(cli: Cli, project: Path) -> None:
    write_config(project, [ADD_MINUS, SURVIVOR], canary="bump-default")
    done = cli.run()
    assert done.returncode == 2
    assert "void" in done.stderr
    assert "not taking effect" in done.stderr
    assert "[start] add-minus" not in done.stderr


@pytest.mark.e2e
def test_package_resolving_outside_the_copy_is_refused(cli: Cli, project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(project / "counterpkg", elsewhere / "counterpkg")
    # Stands in for an installed or editable copy that wins over PYTHONPATH inside pytest.
    (project / "conftest.py").write_text(f"import sys\n\nsys.path.insert(0, {str(elsewhere)!r})\n")
    done = cli.run()
    assert done.returncode == 2
    assert "resolves to" in done.stderr
    assert str(elsewhere) in done.stderr


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("edit", "anchor", "count"),
    [("replace", "return low + 0", "not found"), ("replace", "if value", "found 2 times")],
)
def test_stale_anchor_is_a_config_error(cli: Cli, project: Path, edit: str, anchor: str, count: str) -> None:
    write_config(
        project, [ADD_MINUS, mutant("stale", "clamp", [T + "test_clamp_below"], **{edit: anchor, "by": "x"})]
    )
    done = cli.run()
    assert done.returncode == 2
    assert "'stale'" in done.stderr
    assert CORE in done.stderr
    assert "scope 'clamp'" in done.stderr
    assert count in done.stderr
    assert "[baseline]" not in done.stderr


def test_anchor_outside_its_scope_is_not_found(cli: Cli, project: Path) -> None:
    write_config(project, [mutant("wrong-scope", "add", [T + "test_add"], delete="return value")])
    done = cli.run()
    assert done.returncode == 2
    assert "'wrong-scope'" in done.stderr
    assert "not found in scope 'add'" in done.stderr


BAD_CONFIGS: dict[str, tuple[str, str]] = {
    "malformed-toml": ('[harness]\npackage = "counterpkg"\ntimeout_s = = 3\n', "line 3, column"),
    "unknown-top-level": ('colour = "red"\n' + config_text([ADD_MINUS]), "'colour'"),
    "unknown-harness-key": (config_text([ADD_MINUS], retries=2), "'retries'"),
    "unknown-mutant-key": (config_text([{**ADD_MINUS, "reason": "x"}]), "'reason'"),
    "duplicate-id": (config_text([ADD_MINUS, {**CLAMP_LOW, "id": "add-minus"}]), "duplicate mutant id"),
    "parent-path": (config_text([{**ADD_MINUS, "file": "../outside.py"}]), "outside the project root"),
    "absolute-path": (config_text([{**ADD_MINUS, "file": "/etc/hostname"}]), "must be a path relative"),
    "missing-file": (config_text([{**ADD_MINUS, "file": "counterpkg/nope.py"}]), "does not exist"),
    "delete-and-replace": (config_text([{**ADD_MINUS, "delete": "return a + b"}]), "exactly one of"),
    "replace-without-by": (config_text([{k: v for k, v in ADD_MINUS.items() if k != "by"}]), "needs 'by'"),
    "missing-killed-by": (
        config_text([{k: v for k, v in ADD_MINUS.items() if k != "killed_by"}]),
        "[[mutant]] #1: missing key(s) 'killed_by'",
    ),
    "wrong-type": (config_text([ADD_MINUS], timeout_s="ten"), "'timeout_s' must be"),
    "unknown-scope": (
        config_text([{**ADD_MINUS, "scope": "Counter.nope"}]),
        "scope 'Counter.nope' not found",
    ),
    "unknown-canary": (config_text([ADD_MINUS], canary="nope"), "canary 'nope'"),
    "preload-not-a-module": (config_text([ADD_MINUS], preload=["json", "not a module"]), "'not a module'"),
    "preload-not-a-list": (config_text([ADD_MINUS], preload="json"), "'preload' must be a non-empty list"),
    "no-mutants": (config_text([]), "no [[mutant]] entries"),
    "infinite-timeout": (config_text([ADD_MINUS]).replace("timeout_s = 10", "timeout_s = inf"), "finite"),
    "nan-timeout": (config_text([ADD_MINUS]).replace("timeout_s = 10", "timeout_s = nan"), "finite"),
    "newline-in-id": (config_text([{**ADD_MINUS, "id": "add\nminus"}]), "must be 1-80 characters"),
    "bidi-in-id": (config_text([{**ADD_MINUS, "id": "add\u202eminus"}]), "must be 1-80 characters"),
    "nul-in-id": (config_text([{**ADD_MINUS, "id": "add\u0000"}]), "must be 1-80 characters"),
}


@pytest.mark.e2e
@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_exits_2_before_running(cli: Cli, project: Path, tmp_path: Path, case: str) -> None:
    text, message = BAD_CONFIGS[case]
    (tmp_path / "outside.py").write_text((project / CORE).read_text())  # exists, yet outside the root
    (project / "mutation_config.toml").write_text(text, encoding="utf-8")
    done = cli.run()
    assert done.returncode == 2
    assert "config error" in done.stderr
    assert message in done.stderr
    assert "[baseline]" not in done.stderr


@pytest.mark.e2e
def test_nonexistent_killed_by_test_is_a_config_error(cli: Cli, project: Path) -> None:
    write_config(project, [ADD_MINUS, {**CLAMP_LOW, "killed_by": [T + "test_clamp_belo"]}])
    done = cli.run()
    assert done.returncode == 2
    assert "not collected" in done.stderr
    assert "test_clamp_belo'" in done.stderr
    assert "[start]" not in done.stderr


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--only", "nope"], "unknown mutant id"),
        (["explode"], "invalid choice"),
        (["show", "nope"], "unknown"),
    ],
)
def test_bad_command_line_exits_2(cli: Cli, args: list[str], message: str) -> None:
    done = cli.run(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "[baseline]" not in done.stderr


# --------------------------------------------------------------------------- list / show


def test_list_shows_id_file_scope_why(cli: Cli) -> None:
    done = cli.run("list")
    assert done.returncode == 0
    rows = [line.split(None, 3) for line in done.stdout.splitlines()[2:]]
    assert rows[0] == ["add-minus", CORE, "add", "addition must add"]
    assert [row[0] for row in rows] == ["add-minus", "clamp-low-deleted", "bump-forgets-count"]


def test_show_prints_the_unified_diff(cli: Cli) -> None:
    done = cli.run("show", "clamp-low-deleted")
    assert done.returncode == 0
    assert done.stdout.startswith(f"--- a/{CORE}\n+++ b/{CORE}\n@@")
    removed = [
        line for line in done.stdout.splitlines() if line.startswith("-") and not line.startswith("---")
    ]
    assert removed == ["-    if value < low:", "-        return low"]


# --------------------------------------------------------------------------- interruption


def read_lines(stream: object, sink: queue.Queue[str]) -> None:
    assert hasattr(stream, "readline")
    # The pipe is closed under us when the test fails early; that just ends the reading.
    with contextlib.suppress(ValueError, OSError):
        for line in iter(stream.readline, ""):
            sink.put(line)


def wait_for(sink: queue.Queue[str], needle: str, seen: list[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not any(needle in line for line in seen):
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"never saw {needle!r}; got {''.join(seen)}"
        try:
            seen.append(sink.get(timeout=remaining))
        except queue.Empty:
            continue


def processes_in(directory: Path) -> list[int]:
    """Pids whose working directory lies under directory (Linux /proc)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if cwd.is_relative_to(directory):
            found.append(int(entry.name))
    return found


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("signum", "delay"),
    [(signal.SIGINT, 1.0), (signal.SIGTERM, 1.0), (signal.SIGKILL, 1.0), (signal.SIGKILL, 0.0)],
    ids=["SIGINT", "SIGTERM", "SIGKILL", "SIGKILL-while-children-start"],
)
def test_signal_mid_run_leaves_tree_identical(
    cli: Cli, project: Path, signum: signal.Signals, delay: float
) -> None:
    write_config(project, [ADD_MINUS, SLOW], timeout_s=60)
    before = snapshot(project)
    seen: list[str] = []
    with subprocess.Popen(
        cli.command(), cwd=cli.cwd, env=cli.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        sink: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=read_lines, args=(proc.stderr, sink), daemon=True)
        reader.start()
        wait_for(sink, "[start] clamp-sleeps", seen)
        time.sleep(delay)  # after 1 s the mutant's pytest is running; at 0 s it may still be starting
        assert any(cli.tmpdir.iterdir())
        proc.send_signal(signum)
        try:
            code = proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        reader.join(timeout=5)
    assert snapshot(project) == before
    if signum == signal.SIGKILL:
        assert code == -signal.SIGKILL
        # The orphaned pytest child notices its parent is gone and ends itself.
        deadline = time.monotonic() + 10
        while processes_in(cli.tmpdir) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_in(cli.tmpdir) == []
    else:
        assert code == (130 if signum == signal.SIGINT else 143)
        assert list(cli.tmpdir.iterdir()) == [], "temporary copies were left behind"
        assert processes_in(cli.tmpdir) == []


# --------------------------------------------------------------------------- anchor rules, in-process


def build(tmp_path: Path, source: str, scope: str, **edit: str) -> cm.Mutant:
    (tmp_path / "mod.py").write_bytes(source.encode())
    spec = cm.MutantSpec(
        id="m",
        file="mod.py",
        scope=scope,
        why="w",
        killed_by=("t",),
        delete=edit.get("delete"),
        replace=edit.get("replace"),
        by=edit.get("by"),
    )
    return cm.build_mutant(spec, tmp_path)


NESTED = """\
import functools


class Outer:
    class Inner:
        @functools.cache
        def method(self) -> int:
            x = 1
            if x:
                x += 1
                x += 2
            return x

    def method(self) -> int:
        x = 1
        return x


def top() -> int:
    def helper() -> int:
        x = 1
        return x

    return helper()
"""


def test_dedented_block_matches_indented_lines(tmp_path: Path) -> None:
    result = build(tmp_path, NESTED, "Outer.Inner.method", delete="x += 1\nx += 2\n")
    assert "            if x:\n                pass\n            return x\n" in result.mutated
    assert result.mutated.count("x += ") == 0


def test_block_must_match_at_one_common_indentation(tmp_path: Path) -> None:
    with pytest.raises(cm.ConfigError, match="not found"):
        build(tmp_path, NESTED, "Outer.Inner.method", delete="if x:\nx += 1\n")


def test_scopes_resolve_classes_methods_and_nested_functions(tmp_path: Path) -> None:
    inner = build(tmp_path, NESTED, "Outer.Inner.method", replace="x = 1", by="x = 5")
    assert inner.mutated.count("x = 5") == 1
    assert inner.mutated.index("x = 5") < inner.mutated.index("def method(self) -> int:\n        x = 1")
    helper = build(tmp_path, NESTED, "top.helper", replace="x = 1", by="x = 7")
    assert "        x = 7\n        return x\n\n    return helper()" in helper.mutated


def test_decorators_are_part_of_the_scope(tmp_path: Path) -> None:
    result = build(tmp_path, NESTED, "Outer.Inner.method", delete="@functools.cache")
    assert "functools.cache" not in result.mutated.split("import functools", 1)[1]


def test_text_in_nested_definitions_counts_towards_the_enclosing_scope(tmp_path: Path) -> None:
    with pytest.raises(cm.ConfigError, match="found 2 times in scope 'Outer'"):
        build(tmp_path, NESTED, "Outer", replace="x = 1", by="x = 2")
    nested = build(tmp_path, NESTED, "top", replace="x = 1", by="x = 2")
    assert "def helper() -> int:\n        x = 2" in nested.mutated


def test_multiline_by_is_reindented_and_crlf_kept(tmp_path: Path) -> None:
    source = "def f(a):\r\n    if a:\r\n        return a + 1\r\n    return 0\r\n"
    result = build(tmp_path, source, "f", replace="return a + 1", by="while True:\n    pass")
    assert (
        result.mutated
        == "def f(a):\r\n    if a:\r\n        while True:\r\n            pass\r\n    return 0\r\n"
    )


def test_deleting_only_statement_inserts_pass(tmp_path: Path) -> None:
    source = "class C:\n    def reset(self) -> None:\n        self.count = 0\n"
    result = build(tmp_path, source, "C.reset", delete="self.count = 0")
    assert result.mutated == "class C:\n    def reset(self) -> None:\n        pass\n"
    assert "-        self.count = 0\n+        pass" in result.diff


def test_property_getter_and_setter_share_a_scope(tmp_path: Path) -> None:
    source = (
        "class C:\n    @property\n    def v(self) -> int:\n        return self._v\n\n"
        "    @v.setter\n    def v(self, value: int) -> None:\n        self._v = value\n"
    )
    result = build(tmp_path, source, "C.v", replace="self._v = value", by="self._v = -value")
    assert "self._v = -value" in result.mutated


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (T + "test_bump", "failed"),
        (T + "test_bum", "absent"),
        (T + "test_bump[1]", "passed"),
        (T + "test_skip", "skipped"),
    ],
)
def test_killed_by_entries_match_exactly_or_as_parametrized_prefix(entry: str, expected: str) -> None:
    outcomes = {T + "test_bump[1]": "passed", T + "test_bump[2]": "failed", T + "test_skip": "skipped"}
    assert cm.entry_status(entry, outcomes) == expected


@pytest.mark.e2e
def test_junit_is_well_formed_whatever_the_text_holds(cli: Cli, project: Path, tmp_path: Path) -> None:
    write_config(project, [ADD_MINUS, {**SURVIVOR, "why": "bell \u0007, nul \u0000, escape \u001b[31m"}])
    done = cli.run("--junit", str(tmp_path / "r.xml"))
    assert done.returncode == 1
    failure = ET.parse(tmp_path / "r.xml").getroot().find("testsuite/testcase/failure")
    assert failure is not None
    assert "bell \\x07, nul \\x00, escape \\x1b[31m" in (failure.text or "")


@pytest.mark.e2e
def test_a_catalogue_kept_elsewhere_runs_against_root(cli: Cli, project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "catalogues" / "critical.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text(config_text([ADD_MINUS]), encoding="utf-8")
    command = [sys.executable, str(SCRIPT), "--config", str(elsewhere), "list"]
    run = functools.partial(subprocess.run, cwd=cli.cwd, env=cli.env(), capture_output=True, text=True)
    without = run(command, check=False)
    assert without.returncode == 2
    assert "not found under the project root" in without.stderr
    listed = run([*command, "--root", str(project)], check=False)
    assert listed.returncode == 0, listed.stderr
    assert "add-minus" in listed.stdout
    missing = run([*command, "--root", str(tmp_path / "nope")], check=False)
    assert missing.returncode == 2
    assert "--root" in missing.stderr
    assert "not a directory" in missing.stderr


@pytest.mark.e2e
def test_editing_the_tree_during_a_run_changes_no_verdict(cli: Cli, project: Path, tmp_path: Path) -> None:
    # jobs=2: the second copy is made after the canary, long after the edit below
    write_config(project, [ADD_MINUS, CLAMP_LOW, BUMP], jobs=2)
    # not the mutated file: each mutant rewrites that one whole
    core = project / "counterpkg" / "__init__.py"
    pristine = core.read_text(encoding="utf-8")
    harness = subprocess.Popen(
        [*cli.command("--json", str(tmp_path / "r.json"))],
        cwd=cli.cwd,
        env=cli.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert harness.stderr is not None
        for line in harness.stderr:
            if line.startswith("[baseline]"):
                core.write_text(pristine + "\nraise ImportError('edited mid-run')\n", encoding="utf-8")
                break
        harness.communicate(timeout=90)
    finally:
        core.write_text(pristine, encoding="utf-8")
    assert harness.returncode == 0
    verdicts = {i: m["verdict"] for i, m in by_id(load_json(tmp_path / "r.json")).items()}
    assert verdicts == {"add-minus": "killed", "clamp-low-deleted": "killed", "bump-forgets-count": "killed"}


# Backtracking in C with the GIL held: no thread of the child can run until it ends, in minutes.
GIL_LOOP = mutant(
    "add-spins-in-c",
    "add",
    [T + "test_add"],
    replace="return a + b",
    by='__import__("re").match(r"(a+)+$", "a" * 64 + "b")\nreturn a + b',
)


@pytest.mark.e2e
def test_a_sigkilled_harness_takes_its_children_along_and_the_next_run_clears_its_copies(
    cli: Cli, project: Path
) -> None:
    write_config(project, [ADD_MINUS, GIL_LOOP], timeout_s=120)
    seen: list[str] = []
    with subprocess.Popen(
        cli.command(), cwd=cli.cwd, env=cli.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        sink: queue.Queue[str] = queue.Queue()
        threading.Thread(target=read_lines, args=(proc.stderr, sink), daemon=True).start()
        wait_for(sink, "[start] add-spins-in-c", seen)
        time.sleep(2)  # the mutant's pytest is inside the loop by now
        assert processes_in(cli.tmpdir)
        proc.kill()
        proc.wait(timeout=15)
    # the kernel ends them (parent-death signal), however busy they are
    deadline = time.monotonic() + 30
    while processes_in(cli.tmpdir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_in(cli.tmpdir) == []
    left = [p.name for p in cli.tmpdir.iterdir()]
    assert len(left) == 1  # the killed run could not clean up after itself
    write_config(project, [ADD_MINUS])
    again = cli.run()
    assert again.returncode == 0, again.stderr
    assert f"removed {cli.tmpdir / left[0]}, left by a run that is gone" in again.stderr
    assert list(cli.tmpdir.iterdir()) == []


@pytest.mark.e2e
def test_a_daemon_holding_the_output_neither_stalls_the_run_nor_outlives_it(
    cli: Cli, project: Path, tmp_path: Path
) -> None:
    marker = "31415926.5"  # `sleep` for a year, a duration no other process uses
    daemon = mutant(
        "label-starts-a-daemon",
        "Counter",
        [T + "test_bump"],
        replace='label = "counter"',
        by=f'label = __import__("subprocess").Popen(["sleep", "{marker}"], start_new_session=True) '
        'and "counter"',
    )
    write_config(project, [ADD_MINUS, daemon], timeout_s=20)
    done = cli.run("--json", str(tmp_path / "r.json"))  # a run that waited for the daemon would not end
    entry = by_id(load_json(tmp_path / "r.json"))["label-starts-a-daemon"]
    assert entry["verdict"] == "survived", entry  # it changes nothing the tests see, and takes no time
    assert done.returncode == 1

    def sleepers() -> list[str]:
        found = []
        for entry in Path("/proc").glob("[0-9]*"):
            with contextlib.suppress(OSError):
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(entry.name)
        return found

    assert sleepers() == []


@pytest.mark.e2e
def test_a_run_fits_the_terminal_says_each_line_once_and_names_the_killing_test_in_full(
    cli: Cli, project: Path
) -> None:
    write_config(project, [ADD_MINUS, CLAMP_LOW, {**SURVIVOR, "why": "far past the edge " * 10}], jobs=2)
    cli.extra_env = {"COLUMNS": "80"}
    done = cli.run()
    assert done.returncode == 1, done.stdout + done.stderr
    assert max(len(line) for line in (done.stdout + done.stderr).splitlines()) <= 80
    said = done.stderr.splitlines()
    assert len(said) == len(set(said)), done.stderr  # two copies share the baseline: it is said once
    [row] = [line for line in done.stdout.splitlines() if line.startswith("clamp-low-deleted ")]
    assert row.endswith(f"  {T}test_clamp_below") or f"  {T}test_clamp_below -- " in row

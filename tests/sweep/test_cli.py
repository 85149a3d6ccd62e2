"""The sweep's command line: bad input is exit 2 with one line naming what was wrong, and nothing written."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from mutation_model import KILLED
from mutation_sweep import select_tests
from mutation_sweep.executable import executable_lines
from mutation_sweep.runners import forked
from mutation_sweep.work_item import Mutant, Result

ROOT = Path(__file__).resolve().parents[2]


def _sweep(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "mutation_sweep.py"), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--out", "{tmp}/r.json", "--shard", "x"], "--shard must be I/N with 1 <= I <= N, got 'x'"),
        (
            ["run", "--out", "{tmp}/r.json", "--shard", "3/2"],
            "--shard must be I/N with 1 <= I <= N, got '3/2'",
        ),
        (["run", "--out", "{tmp}/r.json", "--jobs", "0"], "--jobs must be >= 1, got 0"),
        (["run", "--out", "{tmp}"], "is a directory"),
        (["show", "sweep-000000000000"], "no mutant 'sweep-000000000000'"),
        (["list", "--operator", "nope"], "--operator 'nope' names no operator; one of: delete-statement,"),
        (
            ["run", "--out", "{tmp}/r.json", "--operator", "swap-statements", "--operator", "nope"],
            "--operator 'nope' names no operator",
        ),
        (["--config", "{tmp}/none.toml", "list"], "no such config file"),
        (["merge", "--out", "{tmp}/m.json", "{tmp}/none.json"], "no such sweep results file"),
    ],
)
def test_bad_input_is_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    done = _sweep(*(a.format(tmp=tmp_path) for a in args))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# It makes every mutant of this package through the sweep's own command: end to end, seconds each.
@pytest.mark.e2e
def test_list_and_show_name_the_same_mutants() -> None:
    listed = _sweep("list", "--shard", "1/50")
    assert listed.returncode == 0, listed.stderr
    first = listed.stdout.splitlines()[0].split()[0]
    shown = _sweep("show", first)
    assert shown.returncode == 0
    assert shown.stdout.startswith("--- a/guard_lib/")


# It makes every mutant of this package through the sweep's own command: end to end, seconds each.
@pytest.mark.e2e
def test_list_selects_operators_from_the_same_mutants(tmp_path: Path) -> None:
    # A whole run applies [sweep] operators; --operator adds one it leaves out, from the same mutants.
    text = (ROOT / "mutation_config.toml").read_text(encoding="utf-8")
    start = text.index("operators = [", text.index("[sweep]"))
    end = text.index("]", start) + 1
    config = tmp_path / "mutation_config.toml"
    config.write_text(
        text[:start] + 'operators = ["comparison", "replace-value"]' + text[end:], encoding="utf-8"
    )
    everything = _sweep("--config", str(config), "list").stdout.splitlines()
    whole = {line.split()[3] for line in everything}
    assert whole == {"comparison:", "replace-value:"}
    chosen = _sweep("--config", str(config), "list", "--operator", "comparison", "--operator", "keep-cache")
    assert chosen.returncode == 0, chosen.stderr
    lines = chosen.stdout.splitlines()
    assert {line.split()[3] for line in lines} == {"comparison:", "keep-cache:"}
    assert [line for line in lines if line.split()[3] == "comparison:"] == [
        line for line in everything if line.split()[3] == "comparison:"
    ]
    # this project's own whole run applies every operator the sweep has
    assert "keep-cache:" in {line.split()[3] for line in _sweep("list").stdout.splitlines()}


def _judged_killed_unrun(monkeypatch: pytest.MonkeyPatch) -> list[Mutant]:
    """The mutants ``run`` hands the engine, which judges each killed without running anything."""
    from mutation_sweep import jobs as sweep_jobs

    ran: list[Mutant] = []
    monkeypatch.setenv("GUARD_LIB_IMPL", "python")  # main() sets it; the setting is undone after the test

    def run(jobs: list[forked.Job], *args: object, **kwargs: object) -> list[Result]:
        ran.extend(j.mutant for j in jobs)
        return [Result(j.mutant, KILLED) for j in jobs]

    monkeypatch.setattr(sweep_jobs, "test_maps", lambda *a, **k: select_tests.TestMap({}, ("tests",)))
    monkeypatch.setattr(forked, "warm_up", lambda: None)
    monkeypatch.setattr(forked, "run", run)
    return ran


# It makes every mutant of this package through the sweep's own command: end to end, seconds each.
@pytest.mark.e2e
def test_an_operator_selection_runs_only_its_mutants_and_never_passes_for_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mutation_sweep import cli
    from mutation_sweep.results import ResultsError, load

    ran = _judged_killed_unrun(monkeypatch)
    out = tmp_path / "r.json"
    assert cli.main(["run", "--out", str(out), "--jobs", "1", "--operator", "remove-normaliser"]) == 0
    assert ran
    assert {m.operator for m in ran} == {"remove-normaliser"}
    with pytest.raises(ResultsError, match="a partial run cannot pass the gate"):
        load(out)


def test_help() -> None:
    done = _sweep("--help")
    assert done.returncode == 0
    assert "run    --out FILE" in done.stdout


def test_a_decorated_definition_is_one_executable_line_from_its_first_decorator(tmp_path: Path) -> None:

    (tmp_path / "m.py").write_text(
        "import functools\n"
        "\n"
        "@functools.lru_cache\n"
        "@staticmethod\n"
        "def f(x):\n"
        "    return x\n"
        "class C:\n"
        "    @property\n"
        "    def p(self):\n"
        "        return 1\n",
        encoding="utf-8",
    )
    lines = executable_lines(tmp_path, ["m.py"])
    # coverage.py counts 3, 4 and 5 (and 8 and 9); the header of each definition is one statement
    assert lines == {"m.py": [1, 3, 6, 7, 8, 10]}


def test_a_whole_run_applies_only_the_configured_operators_and_unknown_names_are_refused(
    tmp_path: Path,
) -> None:
    from mutation_sweep import config as sweep_config

    path = tmp_path / "mutation_config.toml"
    path.write_text('[sweep]\npackage = "pkg"\noperators = ["comparison"]\n', encoding="utf-8")
    assert sweep_config.load(path).operators == ("comparison",)
    path.write_text('[sweep]\npackage = "pkg"\n', encoding="utf-8")
    assert sweep_config.load(path).operators is None
    path.write_text('[sweep]\npackage = "pkg"\noperators = ["comparison", "nope"]\n', encoding="utf-8")
    with pytest.raises(sweep_config.ConfigError, match="'nope' names no operator; one of: "):
        sweep_config.load(path)


# It makes every mutant of this package through the sweep's own command: end to end, seconds each.
@pytest.mark.e2e
def test_a_whole_run_takes_in_the_core_and_an_excluded_file_runs_only_by_name(tmp_path: Path) -> None:
    """The core is mutated with the Python; `[sweep] exclude` leaves a file out, and `--file` names it."""
    whole = _sweep("list", "--operator", "drop-element")
    assert whole.returncode == 0, whole.stderr
    assert "  guard_lib/_core.pyx:" in whole.stdout
    config = tmp_path / "mutation_config.toml"
    config.write_text(
        (ROOT / "mutation_config.toml")
        .read_text(encoding="utf-8")
        .replace("\nexclude = []\n", '\nexclude = ["guard_lib/_core.pyx"]\n'),
        encoding="utf-8",
    )
    assert 'exclude = ["guard_lib/_core.pyx"]' in config.read_text(encoding="utf-8")
    left_out = _sweep("--config", str(config), "list", "--operator", "drop-element")
    assert left_out.returncode == 0, left_out.stderr
    assert left_out.stdout
    assert "_core.pyx" not in left_out.stdout
    named = ("--file", "guard_lib/_core.pyx", "--operator", "drop-element")
    core = _sweep("--config", str(config), "list", *named)
    assert core.returncode == 0, core.stderr
    lines = core.stdout.splitlines()
    assert lines
    assert all("  guard_lib/_core.pyx:" in line and " drop-element: " in line for line in lines)


# It makes every mutant of this package through the sweep's own command: end to end, seconds each.
@pytest.mark.e2e
def test_id_runs_only_the_named_mutants_and_refuses_one_outside_the_selection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mutation_sweep import cli

    listed = _sweep("list", "--operator", "drop-element", "--file", "guard_lib/errors.py").stdout.split()
    chosen = listed[0]
    ran = _judged_killed_unrun(monkeypatch)
    ids = tmp_path / "ids.txt"
    ids.write_text(f"--id={chosen}\n", encoding="utf-8")
    assert cli.main(["run", "--out", str(tmp_path / "r.json"), "--jobs", "1", f"@{ids}"]) == 0
    assert [m.id for m in ran] == [chosen]
    # named, but not among the operator's mutants: nothing would run, so it is refused
    out = tmp_path / "s.json"
    assert cli.main(["run", "--out", str(out), "--operator", "comparison", "--id", chosen]) == 2
    assert not out.exists()


# It makes every mutant of this package through the sweep's own command: end to end, seconds each.
@pytest.mark.e2e
def test_a_run_reuses_the_verdicts_whose_inputs_are_unchanged_and_judges_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from dataclasses import replace

    from mutation_sweep import cli
    from mutation_sweep.results import load

    ran = _judged_killed_unrun(monkeypatch)
    first = tmp_path / "first.json"
    argv = ["run", "--jobs", "1", "--operator", "remove-normaliser"]
    assert cli.main([*argv, "--out", str(first)]) == 0
    every = {m.id for m in ran}
    assert all(r.depends for r in load(first, whole=False).results)
    # one verdict recorded against other inputs (another Python, a changed test): judged again
    earlier = load(first, whole=False)
    stale = sorted(every)[0]
    earlier.results[:] = [
        replace(r, depends="0" * 64) if r.mutant.id == stale else r for r in earlier.results
    ]
    earlier.write(first)
    ran.clear()
    caplog.set_level(logging.INFO)
    second = tmp_path / "second.json"
    assert cli.main([*argv, "--out", str(second), "--reuse", str(first)]) == 0
    assert [m.id for m in ran] == [stale]
    assert f"reused {len(every) - 1} verdicts" in caplog.text
    assert {r.mutant.id for r in load(second, whole=False).results} == every


CARRIED_TEST = "tests/behaviour/test_result.py::test_ok_answers_and_unwraps"
CARRY_ARGV = ["run", "--jobs", "1", "--operator", "remove-normaliser"]


def _every_job_survives(monkeypatch: pytest.MonkeyPatch) -> list[forked.Job]:
    """The sweep's command with one test in its map, and no child run: every job it is given (the list
    returned, in order) survives."""
    from mutation_model import SURVIVED
    from mutation_sweep import jobs as sweep_jobs

    ran: list[forked.Job] = []

    def run(jobs: list[forked.Job], *args: object, **kwargs: object) -> list[Result]:
        ran.extend(jobs)
        return [Result(j.mutant, SURVIVED, j.tests) for j in jobs]

    monkeypatch.setenv("GUARD_LIB_IMPL", "python")
    mapping = select_tests.TestMap({}, ("tests",), seconds={CARRIED_TEST: 0.1})
    monkeypatch.setattr(sweep_jobs, "test_maps", lambda *a, **k: mapping)
    monkeypatch.setattr(forked, "warm_up", lambda: None)
    monkeypatch.setattr(forked, "run", run)
    return ran


@pytest.mark.e2e
def test_a_run_reuses_and_carries_nothing_once_a_distribution_the_tests_use_is_another_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Hypothesis draws other programs in another release: every verdict it took part in may differ
    from importlib.metadata import version

    import mutation_environment
    from mutation_sweep import cli

    ran = _every_job_survives(monkeypatch)
    first = tmp_path / "first.json"
    assert cli.main([*CARRY_ARGV, "--out", str(first)]) == 0
    every = sorted(j.mutant.id for j in ran)
    ran.clear()
    monkeypatch.setattr(
        mutation_environment, "version", lambda n: "0.0.0" if n == "hypothesis" else version(n)
    )
    caplog.set_level(logging.INFO)
    assert cli.main([*CARRY_ARGV, "--out", str(tmp_path / "second.json"), "--reuse", str(first)]) == 0
    assert sorted(j.mutant.id for j in ran) == every  # each judged whole, none reused or carried
    assert "reused 0 verdicts" in caplog.text
    assert "0 survivors no new or changed test reaches; 0 survivors judged" in caplog.text


@pytest.mark.e2e
def test_a_run_carries_survivors_test_by_test_and_judges_them_against_the_changed_tests_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from dataclasses import replace

    from mutation_sweep import cli
    from mutation_sweep.results import load

    ran = _every_job_survives(monkeypatch)
    test, argv = CARRIED_TEST, CARRY_ARGV
    first = tmp_path / "first.json"
    assert cli.main([*argv, "--out", str(first)]) == 0
    earlier = load(first, whole=False)
    assert earlier.suite is not None
    assert test in earlier.suite.tests
    every = {r.mutant.id for r in earlier.results}
    # the test changed since (its digest differs), so every digest sends its survivors to be judged again
    earlier.suite = replace(earlier.suite, tests={test: "0" * 64})
    earlier.results[:] = [replace(r, depends="0" * 64) for r in earlier.results]
    earlier.write(first)
    ran.clear()
    caplog.set_level(logging.INFO)
    second = tmp_path / "second.json"
    assert cli.main([*argv, "--out", str(second), "--reuse", str(first)]) == 0
    assert {j.mutant.id for j in ran} == every
    assert {j.tests for j in ran} == {(test,)}
    assert {j.then_suite for j in ran} == {False}
    assert (
        f"{len(every)} survivors judged against the new and changed tests that reach them alone"
        in caplog.text
    )
    judged = load(second, whole=False).results
    assert all("carried from the earlier run" in r.detail for r in judged)
    assert all(r.depends for r in judged)  # the package is unchanged: the whole proof is this tree's


@pytest.mark.e2e
def test_what_a_scoped_run_carried_past_a_package_change_keeps_no_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from mutation_changes import Changes
    from mutation_sweep import carry, cli
    from mutation_sweep.results import load

    _every_job_survives(monkeypatch)
    test_file, name = CARRIED_TEST.split("::")
    argv = CARRY_ARGV
    first = tmp_path / "first.json"
    assert cli.main([*argv, "--out", str(first)]) == 0
    earlier = load(first, whole=False)
    assert earlier.suite is not None
    # The earlier run judged the package as the ref holds it, and the test has changed since; the change
    # selects no line of these mutants, so only the changed test reaches them (the scoped run's choice).
    at_ref = "a" * 64
    earlier.suite = replace(earlier.suite, package=at_ref, tests={CARRIED_TEST: "0" * 64})
    earlier.results[:] = [replace(r, depends="0" * 64) for r in earlier.results]
    earlier.write(first)
    change = Changes(
        "HEAD", "c" * 40, tests=frozenset({test_file}), test_functions={test_file: frozenset({name})}
    )
    monkeypatch.setattr(cli, "changes_for", lambda *a: change)
    monkeypatch.setattr(
        carry, "package_at", lambda root, files, commit: at_ref if commit == change.commit else ""
    )
    second = tmp_path / "second.json"
    assert cli.main([*argv, "--out", str(second), "--reuse", str(first), "--changed-since", "HEAD"]) == 0
    judged = load(second, whole=False).results
    assert judged
    assert all("carried from the earlier run" in r.detail for r in judged)
    # this tree's package differs from the one the carried part was proven on: no digest may vouch for it
    assert {r.depends for r in judged} == {""}

"""The gate: exit 0/1/2, equivalent-mutant matching, stale/ambiguous/refuted entries, the harness."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import _scripts
import mutation_gate
import pytest

F = "pkg.mod.x_f__mutmut_"


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mutation_config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def gate(tmp_path: Path, mutants: list[dict[str, object]], cfg: str, *extra: str) -> int:
    results = _scripts.results_file(tmp_path / "results.json", mutants)
    return mutation_gate.main(["--results", str(results), "--config", str(config(tmp_path, cfg)), *extra])


EQUIV = """
[gate]
min_score = 100.0
[harness]
anything = "belongs to the harness and is ignored"
[[mutant]]
id = "harness-owned"
[[equivalent]]
function = "pkg.mod:f"
diff = "+    return   a - b"
reason = "reviewed"
"""


def test_all_killed_passes(tmp_path: Path) -> None:
    assert (
        gate(tmp_path, [_scripts.mutant(F + "1", "killed"), _scripts.mutant(F + "2", "timeout")], "[gate]\n")
        == 0
    )


def test_unreviewed_survivor_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        gate(
            tmp_path,
            [_scripts.mutant(F + "1", "killed"), _scripts.mutant(F + "2")],
            "[gate]\nmin_score = 100.0\n",
        )
        == 1
    )
    assert F + "2" in capsys.readouterr().out


def test_min_score_below_100_tolerates_survivors(tmp_path: Path) -> None:
    mutants = [
        _scripts.mutant(F + "1", "killed"),
        _scripts.mutant(F + "2", "killed"),
        _scripts.mutant(F + "3", added="return b"),
    ]
    assert gate(tmp_path, mutants, "[gate]\nmin_score = 60\n") == 0
    assert gate(tmp_path, mutants, "[gate]\nmin_score = 70\n") == 1


def test_reviewed_equivalent_is_excluded_matching_on_function_and_text(tmp_path: Path) -> None:
    # the key is function + changed text (whitespace-insensitive), not the positional name
    mutants = [_scripts.mutant(F + "1", "killed", added="return a"), _scripts.mutant(F + "17")]
    assert gate(tmp_path, mutants, EQUIV) == 0


def test_equivalent_for_another_function_does_not_excuse(tmp_path: Path) -> None:
    other = _scripts.mutant("pkg.mod.x_g__mutmut_1", removed="x", added="return a - b")
    entry = EQUIV + '[[equivalent]]\nfunction = "pkg.mod:g"\ndiff = "nothing like it"\nreason = "r"\n'
    assert gate(tmp_path, [_scripts.mutant(F + "1"), other], entry) == 1


def test_no_tests_mutant_is_not_excused_by_an_equivalent_entry(tmp_path: Path) -> None:
    assert gate(tmp_path, [_scripts.mutant(F + "1", "no tests")], EQUIV) == 1


def test_stale_equivalent_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert gate(tmp_path, [_scripts.mutant(F + "1", "killed", added="return b")], EQUIV) == 1
    assert "stale" in capsys.readouterr().out


def test_equivalent_outside_a_changed_since_scope_is_not_stale(tmp_path: Path) -> None:
    scoped = _scripts.results_file(
        tmp_path / "r.json",
        [_scripts.mutant("pkg.mod.x_g__mutmut_1", "killed")],
        scope={"kind": "changed-since", "ref": "main", "functions": ["pkg.mod:g"]},
    )
    assert mutation_gate.main(["--results", str(scoped), "--config", str(config(tmp_path, EQUIV))]) == 0


def test_ambiguous_equivalent_fails_and_removed_disambiguates(tmp_path: Path) -> None:
    twins = [
        _scripts.mutant(F + "1", removed="return a + b"),
        _scripts.mutant(F + "2", removed="return a * b"),
    ]
    assert gate(tmp_path, twins, EQUIV) == 1
    both = EQUIV.replace('reason = "reviewed"', 'reason = "reviewed"\nremoved = "return a + b"')
    both += '[[equivalent]]\nfunction = "pkg.mod:f"\ndiff = "return a - b"\n'
    both += 'removed = "return a * b"\nreason = "r"\n'
    assert gate(tmp_path, twins, both) == 0


def test_equivalent_whose_mutant_is_killed_is_refuted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gate(tmp_path, [_scripts.mutant(F + "1", "killed")], EQUIV) == 1
    assert "refuted" in capsys.readouterr().out


@pytest.mark.parametrize(
    "bad",
    [
        "[gate]\nmin_scor = 90\n",
        "[gate]\nmin_score = 101\n",
        '[[equivalent]]\nfunction = "pkg.mod:f"\ndiff = "x"\nreason = "r"\nnote = "unknown key"\n',
        '[[equivalent]]\nfunction = "pkg.mod.f"\ndiff = "x"\nreason = "r"\n',
        '[[equivalent]]\nfunction = "pkg.mod:f"\ndiff = "x"\n',
        "not toml = = =",
    ],
)
def test_bad_config_is_exit_2(tmp_path: Path, bad: str) -> None:
    assert gate(tmp_path, [_scripts.mutant(F + "1", "killed")], bad) == 2


def test_missing_results_says_what_to_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = mutation_gate.main(
        ["--results", str(tmp_path / "none.json"), "--config", str(config(tmp_path, ""))]
    )
    assert code == 2
    assert "scripts/mutation_run.py run" in capsys.readouterr().err


def test_unchecked_mutant_means_incomplete_results(tmp_path: Path) -> None:
    assert (
        gate(tmp_path, [_scripts.mutant(F + "1", "killed"), _scripts.mutant(F + "2", "not checked")], "") == 2
    )


def test_suspicious_counts_as_not_killed(tmp_path: Path) -> None:
    assert gate(tmp_path, [_scripts.mutant(F + "1", "suspicious")], "") == 1


def critical(tmp_path: Path, verdicts: list[str]) -> Path:
    path = tmp_path / "critical.json"
    entries = [
        {"id": f"c{i}", "verdict": v, "file": "pkg/mod.py", "diff": ""} for i, v in enumerate(verdicts)
    ]
    path.write_text(json.dumps({"mutants": entries, "totals": {}}), encoding="utf-8")
    return path


@pytest.mark.parametrize("verdict", ["survived", "timeout", "invalid", "not-exercised", "wrong-reason"])
def test_any_critical_verdict_but_killed_fails(tmp_path: Path, verdict: str) -> None:
    crit = critical(tmp_path, ["killed", verdict])
    assert gate(tmp_path, [_scripts.mutant(F + "1", "killed")], "", "--critical", str(crit)) == 1


def test_all_critical_killed_passes(tmp_path: Path) -> None:
    crit = critical(tmp_path, ["killed", "killed"])
    assert gate(tmp_path, [_scripts.mutant(F + "1", "killed")], "", "--critical", str(crit)) == 0


def test_unknown_critical_verdict_or_missing_file_is_exit_2(tmp_path: Path) -> None:
    crit = critical(tmp_path, ["exploded"])
    assert gate(tmp_path, [_scripts.mutant(F + "1", "killed")], "", "--critical", str(crit)) == 2
    assert (
        gate(tmp_path, [_scripts.mutant(F + "1", "killed")], "", "--critical", str(tmp_path / "no.json")) == 2
    )


def test_cli_help_and_exit_status() -> None:
    script = str(_scripts.SCRIPTS / "mutation_gate.py")
    out = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True, check=False)
    assert out.returncode == 0
    assert "--critical" in out.stdout
    missing = subprocess.run(
        [sys.executable, script, "--results", "/nonexistent.json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 2

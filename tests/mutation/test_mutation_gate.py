"""The gate: exit 0/1/2, equivalent-mutant matching, stale/ambiguous/refuted entries, the harness."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

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


MUTMUT = '[[reviewed]]\nengine = "mutmut"\n'
EQUIV = """
[gate]
min_score = 100.0
[harness]
package = "pkg"
[[mutant]]
id = "harness-owned"
file = "pkg/mod.py"
scope = "f"
delete = "return a"
why = "the gate reads its own tables of the file, which holds the harness's too"
killed_by = ["tests/test_mod.py"]
[[reviewed]]
engine = "mutmut"
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
    entry = EQUIV + MUTMUT + 'function = "pkg.mod:g"\ndiff = "nothing like it"\nreason = "r"\n'
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


def test_equivalent_inside_a_changed_since_scope_that_matches_nothing_is_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scoped = _scripts.results_file(
        tmp_path / "r.json",
        [_scripts.mutant(F + "1", "killed", added="return b")],
        scope={"kind": "changed-since", "ref": "main", "functions": ["pkg.mod:f"]},
    )
    assert mutation_gate.main(["--results", str(scoped), "--config", str(config(tmp_path, EQUIV))]) == 1
    assert "stale [[reviewed]]" in capsys.readouterr().out


def test_ambiguous_equivalent_fails_and_removed_disambiguates(tmp_path: Path) -> None:
    twins = [
        _scripts.mutant(F + "1", removed="return a + b"),
        _scripts.mutant(F + "2", removed="return a * b"),
    ]
    assert gate(tmp_path, twins, EQUIV) == 1
    both = EQUIV.replace('reason = "reviewed"', 'reason = "reviewed"\nremoved = "return a + b"')
    both += MUTMUT + 'function = "pkg.mod:f"\ndiff = "return a - b"\n'
    both += 'removed = "return a * b"\nreason = "r"\n'
    assert gate(tmp_path, twins, both) == 0


def _twins(*statuses: str) -> list[dict[str, object]]:
    """The same edit of the same line, made in as many places of one function: no `removed` parts them."""
    return [_scripts.mutant(F + str(n), status) for n, status in enumerate(statuses, start=1)]


def test_one_review_answers_for_the_same_edit_made_twice(tmp_path: Path) -> None:
    assert gate(tmp_path, _twins("survived", "survived"), EQUIV) == 0


def test_the_same_edit_untested_is_not_killed_and_its_review_not_ambiguous(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # what a run whose tests never reach the mutated code reports: the finding is the untested mutants
    assert gate(tmp_path, _twins("no tests", "no tests"), EQUIV) == 1
    out = capsys.readouterr().out
    assert f"no tests: {F}1" in out
    assert f"no tests: {F}2" in out
    assert "ambiguous" not in out
    assert gate(tmp_path, _twins("survived", "no tests"), EQUIV) == 1
    out = capsys.readouterr().out
    assert f"no tests: {F}2" in out
    assert f"{F}1" not in out
    assert "ambiguous" not in out


def test_the_same_edit_killed_in_one_place_leaves_the_review_for_the_other(tmp_path: Path) -> None:
    assert gate(tmp_path, _twins("killed", "survived"), EQUIV) == 0


def test_the_same_edit_killed_everywhere_refutes_the_review(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gate(tmp_path, _twins("killed", "timeout"), EQUIV) == 1
    assert f"{F}1, {F}2 are killed, so not equivalent" in capsys.readouterr().out


def test_equivalent_whose_mutant_is_killed_is_refuted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gate(tmp_path, [_scripts.mutant(F + "1", "killed")], EQUIV) == 1
    assert (
        f"refuted [[reviewed]] #1 (mutmut, pkg.mod:f: 'return a - b'): {F}1 is killed"
        in capsys.readouterr().out
    )


@pytest.mark.parametrize(
    "bad",
    [
        "[gate]\nmin_scor = 90\n",
        "[gate]\nmin_score = 101\n",
        MUTMUT + 'function = "pkg.mod:f"\ndiff = "x"\nreason = "r"\nnote = "unknown key"\n',
        MUTMUT + 'function = "pkg.mod.f"\ndiff = "x"\nreason = "r"\n',
        MUTMUT + 'function = "pkg.mod:f"\ndiff = "x"\n',
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


# a catalogue entry of the schema's keys; the gate reads only the ids
MUTANT = '\nfile = "pkg/mod.py"\nscope = "f"\ndelete = "return a"\nwhy = "w"\nkilled_by = ["t"]\n'
CATALOGUE = '[[mutant]]\nid = "c0"' + MUTANT + '[[mutant]]\nid = "c1"' + MUTANT


@pytest.mark.parametrize("verdict", ["survived", "timeout", "invalid", "not-exercised", "wrong-reason"])
def test_any_critical_verdict_but_killed_fails(tmp_path: Path, verdict: str) -> None:
    crit = critical(tmp_path, ["killed", verdict])
    assert gate(tmp_path, [_scripts.mutant(F + "1", "killed")], CATALOGUE, "--critical", str(crit)) == 1


def test_all_critical_killed_passes(tmp_path: Path) -> None:
    crit = critical(tmp_path, ["killed", "killed"])
    assert gate(tmp_path, [_scripts.mutant(F + "1", "killed")], CATALOGUE, "--critical", str(crit)) == 0


def test_unknown_critical_verdict_or_missing_file_is_exit_2(tmp_path: Path) -> None:
    crit = critical(tmp_path, ["exploded"])
    assert gate(tmp_path, [_scripts.mutant(F + "1", "killed")], CATALOGUE, "--critical", str(crit)) == 2
    missing = str(tmp_path / "no.json")
    assert gate(tmp_path, [_scripts.mutant(F + "1", "killed")], CATALOGUE, "--critical", missing) == 2


@pytest.mark.parametrize(
    ("verdicts", "catalogue", "says"),
    [
        (["killed"], CATALOGUE, "hold 1 of the 2 catalogue mutants; missing: c1"),
        ([], CATALOGUE, "hold 0 of the 2 catalogue mutants; missing: c0, c1"),
        (["killed", "killed", "killed"], CATALOGUE, "does not have: c2"),
        (["killed"], "", "no [[mutant]] catalogue"),
    ],
)
def test_critical_results_must_answer_for_the_whole_catalogue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], verdicts: list[str], catalogue: str, says: str
) -> None:
    crit = critical(tmp_path, verdicts)
    assert gate(tmp_path, [_scripts.mutant(F + "1", "killed")], catalogue, "--critical", str(crit)) == 2
    err = capsys.readouterr().err
    assert says in err
    assert "Traceback" not in err


def _gate_file(tmp_path: Path, mutants: list[dict[str, object]], cfg: str = "", **extra: Any) -> int:
    results = _scripts.results_file(tmp_path / "results.json", mutants, **extra)
    return mutation_gate.main(["--results", str(results), "--config", str(config(tmp_path, cfg))])


def test_results_that_are_part_of_their_run_without_a_shard_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mutation_common import universe_of

    whole = universe_of([F + "1", F + "2", F + "3"])
    assert _gate_file(tmp_path, [_scripts.mutant(F + "1", "killed")], universe=whole) == 2
    assert "hold 1 of the 3 mutants of their run and declare no shard" in capsys.readouterr().err
    assert _gate_file(tmp_path, [_scripts.mutant(F + "1", "killed")], universe={}) == 2
    assert "carry no 'universe'" in capsys.readouterr().err
    assert _gate_file(tmp_path, []) == 2
    assert "no mutants" in capsys.readouterr().err


def test_a_declared_shard_is_judged_alone_and_must_hold_its_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mutation_common import universe_of

    names = [F + str(i) for i in range(1, 6)]
    whole = universe_of(names)
    shard = {"index": 2, "count": 2}  # of 5 mutants: the 2nd and 4th
    mine = [_scripts.mutant(n, "killed", added=f"return a * {n[-1]}") for n in names[1::2]]
    # a reviewed equivalent whose mutant sits in the other shard is not called stale here
    assert _gate_file(tmp_path, mine, EQUIV, universe=whole, shard=shard) == 0
    out = capsys.readouterr().out
    assert "shard 2/2 alone" in out
    assert "1 reviewed equivalent(s) match no mutant of this shard" in out
    assert _gate_file(tmp_path, mine[:1], EQUIV, universe=whole, shard=shard) == 2
    assert "shard 2/2 of 5 mutants must hold 2, holds 1" in capsys.readouterr().err
    assert _gate_file(tmp_path, mine, EQUIV, universe=whole, shard={"index": 3, "count": 2}) == 2


def test_a_scoped_run_that_selected_nothing_has_no_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scope = {"kind": "changed-since", "ref": "HEAD", "functions": []}
    assert _gate_file(tmp_path, [], scope=scope) == 0
    out = capsys.readouterr().out
    assert "no score: no mutant was selected" in out
    assert "100" not in out


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


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"status": ["killed"]}, "'status' must be str, not list"),
        ({"name": 7}, "'name' must be str, not int"),
        ({"line": "2"}, "'line' must be int, not str"),
        ({"exit_code": True}, "'exit_code' must be int or null, not bool"),
    ],
)
def test_a_mistyped_mutant_is_exit_2_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, object], says: str
) -> None:
    entry = {**_scripts.mutant(F + "1", "killed"), **change}
    assert gate(tmp_path, [entry], "") == 2
    err = capsys.readouterr().err
    assert says in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"scope": "full"}, "'scope' must be an object"),
        ({"shard": "x"}, "'shard' must be null or"),
        ({"shard": {"index": 1}}, "'shard' must be null or"),
        ({"universe": "x"}, "'universe' must be an object"),
        ({"sources": {"pkg/mod.py": 3}}, "'sources' must map"),
    ],
)
def test_a_malformed_results_file_is_exit_2_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: dict[str, Any], says: str
) -> None:
    assert _gate_file(tmp_path, [_scripts.mutant(F + "1", "killed")], **extra) == 2
    err = capsys.readouterr().err
    assert says in err
    assert "Traceback" not in err


@pytest.mark.parametrize("file", ["/etc/passwd", "../outside.py", "pkg/../../outside.py", " "])
def test_a_mutant_file_outside_the_repository_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str
) -> None:
    entry = {**_scripts.mutant(F + "1", "killed"), "file": file}
    assert gate(tmp_path, [entry], "") == 2
    assert "must be a path inside the repository" in capsys.readouterr().err


def test_the_report_reads_no_file_from_outside_the_repository(tmp_path: Path) -> None:
    from mutation_io import repo_text

    secret = tmp_path / "secret.txt"
    secret.write_text("not for the report", encoding="utf-8")
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("x = 1\n", encoding="utf-8")
    (root / "pkg" / "link.py").symlink_to(secret)
    assert repo_text("pkg/mod.py", root) == "x = 1\n"
    assert repo_text("pkg/link.py", root) is None  # a link that leads out
    assert repo_text("../secret.txt", root) is None
    assert repo_text(str(secret), root) is None
    assert repo_text("pkg/missing.py", root) is None


DELETION_REVIEW = (
    "[[reviewed]]\nengine = 'core-deletions'\nscope = 'f'\ntext = 'b()'\nreason = 'slower only'\n"
)


@pytest.mark.parametrize(
    ("made", "expected", "says"),
    [
        ([("killed", "a()"), ("survived", "b()"), ("invalid", "c()")], 0, "1 reviewed equivalent"),
        (
            [("killed", "a()"), ("survived", "b()"), ("survived", "c()")],
            1,
            "core deletion deletion-000000000003 survived",
        ),
        ([("killed", "a()"), ("killed", "b()")], 1, "stale [[reviewed]] (core-deletions, f: 'b()')"),
    ],
)
def test_the_core_deletions_are_judged_against_their_reviews(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], made: list[tuple[str, str]], expected: int, says: str
) -> None:
    killed = [_scripts.mutant(F + "1", "killed")]
    extra = ("--core-deletions", str(_scripts.deletions_file(tmp_path / "deletions.json", made)))
    assert gate(tmp_path, killed, "[gate]\nmin_score = 100.0\n" + DELETION_REVIEW, *extra) == expected
    assert says in capsys.readouterr().out

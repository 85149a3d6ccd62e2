"""The sweep's results file and its part of the gate: complete or declared shards only, reviews keyed
by what a mutant does, stale and refuted reviews are findings, bad input is exit 2 with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mutation_common import MutantRecord, Results
from mutation_common import universe_of as mutmut_universe
from mutation_model import KILLED, SURVIVED
from mutation_records import sweep_run
from mutation_sweep.config import ConfigError, Equivalent
from mutation_sweep.config import load as load_config
from mutation_sweep.judge import judge
from mutation_sweep.results import ResultsError, SweepResults, load, merge, select_shard, universe_of
from mutation_sweep.work_item import Mutant, Result

ROOT = Path(__file__).resolve().parents[2]


def _mutant(n: int) -> Mutant:
    return Mutant("pkg/m.py", "f", "comparison", f"a < {n}", f"a <= {n}", line=n, end_line=n)


def _run(verdicts: list[str], shard: tuple[int, int] | None = None) -> SweepResults:
    mutants = [_mutant(n) for n in range(len(verdicts))]
    by_id = {m.id: v for m, v in zip(mutants, verdicts, strict=True)}
    chosen = select_shard(mutants, *shard) if shard else mutants
    return SweepResults(
        [Result(m, by_id[m.id], ("t",)) for m in chosen],
        universe_of(m.id for m in mutants),
        {"index": shard[0], "count": shard[1]} if shard else None,
        executable={"pkg/m.py": [1, 2, 3]},
        set_aside={"pkg/m.py": {3: ["inside an annotation"]}},
    )


def _review(n: int) -> Equivalent:
    return Equivalent("pkg/m.py", "f", "comparison", f"a < {n}", f"a <= {n}", "reviewed", index=1)


def test_a_mutant_is_keyed_by_what_it_does_not_where() -> None:
    moved = Mutant("pkg/m.py", "f", "comparison", "a <  1", "a <= 1", line=40, end_line=41)
    assert moved.key == _mutant(1).key
    assert moved.id == _mutant(1).id
    assert _review(1).matches(moved)
    assert not _review(2).matches(moved)


def test_round_trip_and_completeness(tmp_path: Path) -> None:
    run = _run([KILLED, SURVIVED, KILLED])
    run.write(tmp_path / "r.json")
    loaded = load(tmp_path / "r.json")
    assert sorted((r.mutant.id, r.verdict) for r in loaded.results) == sorted(
        (r.mutant.id, r.verdict) for r in run.results
    )
    assert loaded.set_aside == {"pkg/m.py": {3: ["inside an annotation"]}}
    data = json.loads((tmp_path / "r.json").read_text())
    data["mutants"] = data["mutants"][:1]
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(ResultsError, match="holds 1 of the 3 mutants of its run, and declares no shard"):
        load(tmp_path / "r.json")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "x"}, "not a guard-lib-sweep-results file"),
        ({"mutants": {}}, "'mutants' must be a list"),
        ({"universe": {}}, "no 'universe'"),
        ({"shard": {"index": 3, "count": 2}}, "'shard' must be null or"),
        ({"shard": "1/2"}, "'shard' must be null or"),
        ({"set_aside": "x"}, "'set_aside' must map"),
        ({"set_aside": {"pkg/m.py": {"three": ["x"]}}}, "'set_aside' must map"),
        ({"set_aside": {"pkg/m.py": {"3": "x"}}}, "'set_aside' must map"),
    ],
)
def test_bad_results_files_say_what_is_wrong(tmp_path: Path, change: dict[str, object], message: str) -> None:
    data = _run([KILLED]).to_json()
    data.update(change)
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(ResultsError, match=message):
        load(tmp_path / "r.json")


def test_a_mutant_edited_by_hand_is_refused(tmp_path: Path) -> None:
    data = _run([KILLED]).to_json()
    data["mutants"][0]["mutated"] = "a >= 0"
    data["mutants"][0]["verdict"] = "killed"
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(ResultsError, match="does not match its own key"):
        load(tmp_path / "r.json")


def test_shards_merge_into_the_whole_and_nothing_else() -> None:
    verdicts = [KILLED, SURVIVED, KILLED, KILLED, SURVIVED]
    parts = [_run(verdicts, (i, 2)) for i in (1, 2)]
    merged = merge(parts)
    assert merged.shard is None
    assert sorted(r.mutant.id for r in merged.results) == sorted(r.mutant.id for r in _run(verdicts).results)
    with pytest.raises(ResultsError, match=r"expected shards 1\.\.N once each"):
        merge([parts[0], parts[0]])
    with pytest.raises(ResultsError, match="every part must be a declared shard"):
        merge([_run(verdicts)])
    with pytest.raises(ResultsError, match="different mutant lists"):
        merge([parts[0], _run([KILLED], (2, 2))])


def test_the_judge_counts_reviews_and_finds_stale_and_refuted_ones() -> None:
    run = _run([KILLED, SURVIVED, SURVIVED])
    j = judge(sweep_run(run), (_review(1), _review(0), _review(9)))
    assert [r.mutant.line for r in j.killed] == [0]
    assert [r.mutant.line for r, _ in j.equivalent] == [1]
    assert [r.mutant.line for r in j.survivors] == [2]
    assert [e.original for e in j.stale] == ["a < 9"]
    assert [(e.original, r.mutant.line) for e, r in j.refuted] == [("a < 0", 0)]
    findings = j.findings()
    assert len(findings) == 3
    assert findings[0].startswith("sweep survivor sweep-")
    assert "pkg/m.py:2 (f) comparison: 'a < 2' -> 'a <= 2'" in findings[0]


def test_on_a_declared_shard_reviews_of_other_shards_are_not_stale() -> None:
    run = _run([SURVIVED, SURVIVED, SURVIVED, SURVIVED], (1, 2))
    reviews = tuple(_review(n) for n in range(4))
    j = judge(sweep_run(run), reviews)
    assert j.stale == []
    assert len(j.equivalent) == 2
    assert j.findings() == []


def test_reviews_of_an_operator_the_whole_run_does_not_apply_are_not_stale() -> None:
    # Such an operator runs by name; its reviews wait for that run, and a whole run cannot judge them.
    run = _run([KILLED])
    j = judge(sweep_run(run), (_review(9),), operators=("delete-statement",))
    assert j.stale == []
    assert judge(sweep_run(run), (_review(9),), operators=("comparison",)).stale != []


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no \\[sweep\\] table"),
        ("[sweep]\npackage = 'x'\nextra = 1\n", "unknown key"),
        ("[sweep]\npackage = 'x y'\n", "'package' must be a package name"),
        ("[sweep]\npackage = 'x'\ntimeout_s = inf\n", "'timeout_s' must be a finite number"),
        ("[sweep]\npackage = 'x'\ntimeout_s = nan\n", "'timeout_s' must be a finite number"),
        ("[sweep]\npackage = 'x'\n[[reviewed]]\nengine = 'sweep'\nfile = 'a'\n", "missing key"),
        (
            "[sweep]\npackage = 'x'\n[[reviewed]]\nengine = 'sweep'\n"
            "file='a'\nscope='b'\noperator='c'\noriginal='d'\n"
            "mutated='e'\nreason=' '\n",
            "'reason' must be a non-empty string",
        ),
        ("[sweep\n", "malformed TOML"),
    ],
)
def test_bad_config_says_what_and_where(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(_config(tmp_path, text))


def test_the_projects_own_config_loads() -> None:
    config = load_config(ROOT / "mutation_config.toml")
    assert config.package == "guard_lib"
    assert all(e.reason for e in config.equivalents)


def _gate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "mutation_gate.py"), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )


def test_the_gate_refuses_partial_sweep_results_with_exit_2(tmp_path: Path) -> None:
    data = _run([KILLED, KILLED]).to_json()
    data["mutants"] = data["mutants"][:1]
    (tmp_path / "s.json").write_text(json.dumps(data))
    mutmut = tmp_path / "mutmut.json"
    killed = MutantRecord(
        name="guard_lib.m.x_f__mutmut_1", file="guard_lib/m.py", status="killed", exit_code=1
    )
    Results(mutants=[killed], universe=mutmut_universe([killed.name])).write(mutmut)
    done = _gate("--results", str(mutmut), "--sweep", str(tmp_path / "s.json"))
    assert done.returncode == 2
    assert "a partial run cannot pass the gate" in done.stderr
    assert "Traceback" not in done.stderr


def test_identical_edits_in_one_scope_are_told_apart_by_occurrence() -> None:
    first = _mutant(1)
    second = Mutant(**{**first.__dict__, "line": 9, "end_line": 9, "occurrence": 2})
    assert first.key == second.key
    assert first.id != second.id
    run = SweepResults([Result(first, KILLED), Result(second, SURVIVED)], universe_of([first.id, second.id]))
    loose = _review(1)
    assert any(
        f.startswith("ambiguous [[reviewed]] #1 (sweep,") for f in judge(sweep_run(run), (loose,)).findings()
    )
    pinned = Equivalent(**{**loose.__dict__, "occurrence": 2})
    j = judge(sweep_run(run), (pinned,))
    assert j.findings() == []
    assert [r.mutant.occurrence for r, _ in j.equivalent] == [2]


def test_a_review_gives_occurrence_as_a_positive_integer(tmp_path: Path) -> None:
    text = (
        "[sweep]\npackage = 'x'\n[[reviewed]]\nengine = 'sweep'\n"
        "file='a'\nscope='b'\noperator='c'\noriginal='d'\n"
        "mutated='e'\nreason='r'\noccurrence = 0\n"
    )
    with pytest.raises(ConfigError, match="'occurrence' must be an integer >= 1, got 0"):
        load_config(_config(tmp_path, text))

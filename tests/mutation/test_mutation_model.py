"""One model of a judged mutant: every engine's mutant becomes one ``JudgedMutant``, keyed by what it does,
and the gate's counts and the report's rows are read from those and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import _scripts
import mutation_evaluation
import mutation_records
import mutation_report
from critical_harness.model import MutantSpec
from mutation_common import load_results
from mutation_gate_config import GateConfig
from mutation_model import CRITICAL, KILLED, MUTMUT, SURVIVED, SWEEP, TIMEOUT, Verdict, mutant_key
from mutation_sweep.config import Equivalent
from mutation_sweep.judge import judge
from mutation_sweep.results import SweepResults, universe_of
from mutation_sweep.work_item import Mutant, Result


def test_one_edit_has_one_key_whichever_engine_names_it() -> None:
    key = mutant_key("pkg/m.py", "f", "comparison", "a < 1", "a <= 1")
    # whitespace is not part of what an edit does
    assert mutant_key("pkg/m.py", "f", "comparison", "a  <\n 1", " a <= 1") == key
    assert mutant_key("pkg/m.py", "g", "comparison", "a < 1", "a <= 1") != key
    assert mutant_key("pkg/m.py", "f", "comparison", "a < 1", "a >= 1") != key
    # the sweep's generated mutants and their reviews, wherever the line sits
    assert Mutant("pkg/m.py", "f", "comparison", "a <  1", "a <= 1", line=9, end_line=9).key == key
    assert Equivalent("pkg/m.py", "f", "comparison", "a < 1", "a <= 1", "why", index=1).key == key
    # the harness's catalogue entries: a replacement, or a deletion (replaced by nothing)
    spec = MutantSpec("m", "pkg/m.py", "f", "why", ("t",), None, "a < 1", "a <= 1")
    assert spec.key == mutant_key("pkg/m.py", "f", "CriticalMutant", "a < 1", "a <= 1")
    deletion = MutantSpec("m", "pkg/m.py", "f", "why", ("t",), "a = 1", None, None)
    assert deletion.key == mutant_key("pkg/m.py", "f", "CriticalMutant", "a = 1", "")


def _evaluation(tmp_path: Path) -> mutation_evaluation.Evaluation:
    records = [
        _scripts.mutant("pkg.mod.x_f__mutmut_1", "killed", added="return a"),
        _scripts.mutant("pkg.mod.x_f__mutmut_2", "survived", added="return a - b"),
        _scripts.mutant("pkg.mod.x_f__mutmut_3", "skipped", added="return b"),
        _scripts.mutant("pkg.mod.x_f__mutmut_4", "timeout", added="return 0"),
    ]
    results = load_results(_scripts.results_file(tmp_path / "results.json", records), hint="-")
    critical = tmp_path / "critical.json"
    entry = {"file": "pkg/mod.py", "scope": "f", "why": "w", "diff": "@@ -2 +2 @@\n-x\n+y"}
    critical.write_text(
        json.dumps(
            {
                "mutants": [
                    {**entry, "id": "c-killed", "verdict": "killed", "failed_tests": ["t::a", "t::b"]},
                    {**entry, "id": "c-lives", "verdict": "not-exercised", "key": "own|key"},
                ]
            }
        ),
        encoding="utf-8",
    )
    generated = [Mutant("pkg/mod.py", "f", "comparison", f"a < {n}", f"a <= {n}", n, n) for n in range(4)]
    verdicts = [KILLED, SURVIVED, SURVIVED, TIMEOUT]
    sweep = SweepResults(
        [
            Result(m, v, ("t",), failed="t::a" if v == KILLED else "")
            for m, v in zip(generated, verdicts, strict=True)
        ],
        universe_of(m.id for m in generated),
        None,
    )
    review = Equivalent("pkg/mod.py", "f", "comparison", "a < 2", "a <= 2", "no test can tell", index=1)
    runs = {
        MUTMUT: mutation_records.mutmut_run(results),
        CRITICAL: mutation_records.read_critical(critical),
        SWEEP: mutation_records.sweep_run(sweep),
    }
    return mutation_evaluation.evaluate(runs, GateConfig(0.0, ()), judge(runs[SWEEP], (review,)))


def test_every_engines_mutants_are_judged_once_each(tmp_path: Path) -> None:
    ev = _evaluation(tmp_path)
    judged = mutation_evaluation.judged(ev)
    seen = {(j.engine, j.id): (j.status, j.verdict) for j in judged}
    assert len(seen) == len(judged) == 4 + 4 + 2
    assert [seen[MUTMUT, f"pkg.mod.x_f__mutmut_{n}"] for n in range(1, 5)] == [
        ("killed", Verdict.KILLED),
        ("survived", Verdict.NOT_KILLED),
        ("skipped", Verdict.SKIPPED),
        ("timeout", Verdict.KILLED),
    ]
    sweep = sorted((j.line, j.status, j.verdict) for j in judged if j.engine == SWEEP)
    assert sweep == [
        (0, "killed", Verdict.KILLED),
        (1, "survived", Verdict.NOT_KILLED),
        (2, "survived", Verdict.EQUIVALENT),
        (3, "timeout", Verdict.KILLED),
    ]
    reviewed = next(j for j in judged if j.verdict is Verdict.EQUIVALENT)
    assert reviewed.note == "no test can tell"
    assert reviewed.key == mutant_key("pkg/mod.py", "f", "comparison", "a < 2", "a <= 2")
    killed, lives = (j for j in judged if j.engine == CRITICAL)
    assert (killed.verdict, killed.killed_by, killed.original, killed.replacement) == (
        Verdict.KILLED,
        ("t::a", "t::b"),
        "x",
        "y",
    )
    # the harness's own key is kept; without one, the key is made from the diff
    assert killed.key == mutant_key("pkg/mod.py", "f", "CriticalMutant", "x", "y")
    assert (lives.verdict, lives.status, lives.key, lives.report_id) == (
        Verdict.NOT_KILLED,
        "not-exercised",
        "own|key",
        "critical:c-lives",
    )


def test_the_counts_and_the_report_rows_are_the_judgements(tmp_path: Path) -> None:
    ev = _evaluation(tmp_path)
    judged = mutation_evaluation.judged(ev)
    for t in mutation_evaluation.tally(ev):
        mine = [j.verdict for j in judged if j.engine == t.engine]
        assert (t.total, t.killed, t.equivalent, t.skipped, t.not_killed) == (
            len(mine),
            mine.count(Verdict.KILLED),
            mine.count(Verdict.EQUIVALENT),
            mine.count(Verdict.SKIPPED),
            mine.count(Verdict.NOT_KILLED),
        )
    rows = [m for f in mutation_report.schema_report(ev)["files"].values() for m in f["mutants"]]
    assert sorted(r["id"] for r in rows) == sorted(j.report_id for j in judged)
    by_id = {r["id"]: r for r in rows}
    assert by_id["critical:c-killed"]["killedBy"] == ["t::a", "t::b"]
    assert by_id["critical:c-killed"]["location"]["start"]["line"] == 2
    equivalent = next(j for j in judged if j.verdict is Verdict.EQUIVALENT)
    assert by_id[equivalent.report_id]["status"] == "Ignored"
    assert by_id[equivalent.report_id]["statusReason"] == "equivalent: no test can tell"

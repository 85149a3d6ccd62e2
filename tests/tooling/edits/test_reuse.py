"""The one reuse rule: an outcome is kept while everything it depends on is the same; a changed test, the
package's code or the interpreter re-judges it."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from guard_mutation import config, reuse
from guard_mutation.engines import Request
from guard_mutation.engines.edits import ENGINE, catalogue, depends, operators, orchestrate
from guard_mutation.model import KILLED, SURVIVED, Outcome, Record, Run

FIXTURE = Path(__file__).resolve().parent / "fixture_project"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, tmp_path / "project"))


def _digests(project: Path, runtime: str = "simulated") -> dict[str, str]:
    cfg = config.read(project / "mutation_config.toml")
    named = catalogue.edits(cfg, project)
    return depends.digests(cfg, project, named + operators.generate(cfg, project, named)[0], runtime, False)


def test_the_digest_follows_the_tests_a_verdict_ran(project: Path) -> None:
    before = _digests(project)
    assert before == _digests(project)
    assert before != _digests(project, runtime="cuda")
    tests = project / "tests" / "check_core.py"
    tests.write_text(tests.read_text() + "\n# a comment changes no code\n")
    assert _digests(project) == before
    tests.write_text(tests.read_text().replace("assert add(2, 3) == 5", "assert add(2, 3) > 0"))
    after = _digests(project)
    assert all(after[i] != before[i] for i in before)  # every mutant here ran check_core.py
    (project / "counterpkg" / "core.py").write_text(
        (project / "counterpkg" / "core.py").read_text() + "\nX = 1\n"
    )
    assert not set(_digests(project).values()) & set(after.values())  # the package's code: every verdict


def test_an_outcome_is_kept_only_with_the_same_inputs() -> None:
    mutant = ENGINE.mutants(Request(FIXTURE, config.read(FIXTURE / "mutation_config.toml")))[0]
    earlier = Run("edits", (Record(mutant, Outcome(KILLED, ("t",), depends="d1")),))
    assert reuse.kept(earlier, mutant.id, "d1") == Outcome(KILLED, ("t",), depends="d1", reused=True)
    assert reuse.kept(earlier, mutant.id, "d2") is None
    assert reuse.kept(earlier, "another", "d1") is None
    survivor = Run("edits", (Record(mutant, Outcome(SURVIVED, depends="d1")),))
    assert reuse.kept(survivor, mutant.id, "d2") is None  # a survivor's inputs changed: judged again
    assert reuse.kept(None, mutant.id, "d1") is None


def test_a_run_keeps_the_outcomes_that_hold_and_judges_the_rest(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = config.read(project / "mutation_config.toml")
    request = Request(project, cfg)
    digests = _digests(project)
    mutants = ENGINE.mutants(request)
    changed = mutants[-1].id
    earlier = Run(
        "edits",
        tuple(
            Record(m, Outcome(SURVIVED, depends="stale" if m.id == changed else digests[m.id]))
            for m in mutants
        ),
    )
    judged: list[list[str]] = []

    def execute(
        config: object, root: Path, edits: list[object], canary: object, **_: object
    ) -> dict[str, Outcome]:
        judged.append([e.id for e in edits])  # type: ignore[attr-defined]
        return {e.id: Outcome(KILLED) for e in edits}  # type: ignore[attr-defined]

    monkeypatch.setattr(orchestrate, "execute", execute)
    run = ENGINE.run(replace(request, previous=earlier))
    assert judged == [["add-minus", changed]]  # the canary runs whenever anything else does
    assert [r.outcome.reused for r in run.records] == [r.mutant.id not in judged[0] for r in run.records]
    assert all(r.outcome.depends == digests[r.mutant.id] for r in run.records)
    everything_kept = Run(
        "edits", tuple(Record(r.mutant, replace(r.outcome, reused=False)) for r in run.records)
    )
    judged.clear()
    assert all(r.outcome.reused for r in ENGINE.run(replace(request, previous=everything_kept)).records)
    assert judged == []

"""The engine as the command drives it: which mutants a request selects, and (``e2e``) whole runs on the
fixture project in a copy: every verdict, warm and cold alike; the generated deletions; a red baseline
and a surviving canary refused; the project left as it was."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from guard_mutation import config
from guard_mutation.changes import Change
from guard_mutation.engines import EngineError, Request, SuiteRed
from guard_mutation.engines.edits import ENGINE, equivalence
from guard_mutation.model import EQUIVALENT, INVALID, KILLED, NO_TESTS, SURVIVED, TIMEOUT, WRONG_REASON

FIXTURE = Path(__file__).resolve().parent / "fixture_project"
T = "tests/check_core.py::"
HARNESS = {"package": "counterpkg", "tests": ["tests"], "timeout_s": 10, "jobs": 2, "canary": "add-minus"}
EDITS = {
    "add-minus": ("add", T + "test_add", {"replace": "a + b", "by": "a - b"}, KILLED),
    "clamp-low-deleted": (
        "clamp",
        T + "test_clamp_below",
        {"delete": "if value < low:\n    return low"},
        KILLED,
    ),
    "bump-default": (
        "Counter.bump",
        T + "test_bump",
        {"replace": "step: int = 1", "by": "step: int = 2"},
        SURVIVED,
    ),
    "clamp-wrong-test": (
        "clamp",
        T + "test_clamp_inside",
        {"replace": "return low", "by": "return high"},
        WRONG_REASON,
    ),
    "add-syntax": ("add", T + "test_add", {"replace": "return a + b", "by": "return a +"}, INVALID),
    "label-breaks-import": (
        "Counter",
        T + "test_bump",
        {"replace": 'label = "counter"', "by": "label = nope"},
        INVALID,
    ),
    "reset-noop": ("Counter.reset", T + "test_reset_on_cuda", {"delete": "self.count = 0"}, NO_TESTS),
    "add-hangs": ("add", T + "test_add", {"replace": "return a + b", "by": "while True:\n    pass"}, TIMEOUT),
}


def write_config(project: Path, ids: list[str], operators: tuple[str, ...] = (), **harness: object) -> Path:
    lines = ["[harness]", *(f"{k} = {json.dumps(v)}" for k, v in {**HARNESS, **harness}.items())]
    lines += ["[edits]", f"operators = {json.dumps(list(operators))}"]
    for mutant_id in ids:
        scope, test, edit, _ = EDITS[mutant_id]
        lines += ["[[mutant]]", f"id = {json.dumps(mutant_id)}", 'file = "counterpkg/core.py"']
        lines += [f"scope = {json.dumps(scope)}", 'why = "why"', f"killed_by = [{json.dumps(test)}]"]
        lines += [f"{key} = {json.dumps(text)}" for key, text in edit.items()]
    path = project / "mutation_config.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def state(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, tmp_path / "project", ignore=shutil.ignore_patterns("__pycache__")))


def test_a_request_selects_by_id_and_by_change() -> None:
    request = Request(FIXTURE, config.read(FIXTURE / "mutation_config.toml"))
    every = ENGINE.mutants(request)
    assert [m.id for m in every[:3]] == ["add-minus", "clamp-low-deleted", "bump-forgets-count"]
    assert len(every) == 10  # 3 named, 7 deleted: 2 at module level, 1 of a class, 4 mutmut leaves
    assert request.whole
    only = Request(FIXTURE, request.config, only=("clamp-low-deleted",))
    assert [m.id for m in ENGINE.mutants(only)] == ["clamp-low-deleted"]
    with pytest.raises(EngineError, match="no mutant of the edits engine has the id 'nope'"):
        ENGINE.mutants(Request(FIXTURE, request.config, only=("nope",)))
    on_line = Change("HEAD", "0" * 40, lines={"counterpkg/core.py": frozenset({12})})
    selected = ENGINE.mutants(Request(FIXTURE, request.config, change=on_line))
    assert [(m.id if m.killed_by else m.operator, m.line) for m in selected] == [
        ("clamp-low-deleted", 11),  # its edit reaches line 12
        ("delete-statement", 12),
    ]
    by_test = Change("HEAD", "0" * 40, tests=frozenset({"tests/check_core.py"}))
    assert len(ENGINE.mutants(Request(FIXTURE, request.config, change=by_test))) == 3  # the catalogue's alone


@pytest.mark.e2e
@pytest.mark.parametrize("engine", ["warm", "cold"])
def test_every_verdict_warm_and_cold(project: Path, engine: str) -> None:
    cfg = config.read(write_config(project, list(EDITS), timeout_s=3))
    before = state(project)
    run = ENGINE.run(Request(project, cfg, options={"engine": engine}))
    assert {r.mutant.id: r.outcome.verdict for r in run.records} == {i: e[3] for i, e in EDITS.items()}
    wrong = next(r.outcome for r in run.records if r.mutant.id == "clamp-wrong-test")
    assert wrong.killers == (T + "test_clamp_below",)
    assert all(r.outcome.depends and not r.outcome.reused for r in run.records)
    assert state(project) == before  # mutants land in copies only


@pytest.mark.e2e
def test_the_generated_deletions_run_beside_the_catalogue(project: Path) -> None:
    run = ENGINE.run(Request(project, config.read(project / "mutation_config.toml")))
    generated = {r.mutant.changed_lines()[0]: r.outcome for r in run.records if not r.mutant.killed_by}
    assert generated["from counterpkg.core import Counter, add, clamp"].verdict == KILLED
    assert generated['__all__ = ["Counter", "add", "clamp"]'].verdict == SURVIVED
    assert generated['label = "counter"'].verdict == SURVIVED
    assert generated["return self.count"].verdict == KILLED  # in a function, where mutmut mutates nothing
    assert run.notes[0] == (
        "delete-statement: the 2 .py files 7 of 12 statements mutated "
        "(1 declarations, 4 mutated by mutmut skipped)"
    )
    assert run.notes[1].startswith("compiler equivalence: delete-statement on python 0 of 7 proven")
    assert all(r.outcome.verdict == KILLED for r in run.records if r.mutant.killed_by)


@pytest.mark.e2e
def test_a_mutant_the_compiler_proves_equivalent_is_recorded_so_and_never_run(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = config.read(project / "mutation_config.toml")
    target = next(
        m for m in ENGINE.mutants(Request(project, cfg)) if m.changed_lines()[0] == "return self.count"
    )
    asked: list[list[str]] = []

    def proven(edits: list[object], tmp: Path, jobs: int) -> dict[str, str]:
        asked.append([e.id for e in edits])  # type: ignore[attr-defined]
        return {target.id: "a proof"}

    monkeypatch.setattr(equivalence, "proven", proven)
    run = ENGINE.run(Request(project, cfg, only=(target.id,)))
    assert target.id in asked[0]
    outcome = next(r.outcome for r in run.records if r.mutant.id == target.id)
    assert (outcome.verdict, outcome.detail) == (EQUIVALENT, "a proof")  # run, it would be killed
    assert "delete-statement on python 1 of 1 proven" in run.notes[-1]


@pytest.mark.e2e
def test_a_red_baseline_names_its_tests_and_a_surviving_canary_voids_the_run(project: Path) -> None:
    tests = project / "tests" / "check_core.py"
    tests.write_text(tests.read_text().replace("== 5,", "== 6,"))
    with pytest.raises(SuiteRed) as red:
        ENGINE.run(Request(project, config.read(write_config(project, ["add-minus"]))))
    assert red.value.failing == (T + "test_add",)
    tests.write_text(tests.read_text().replace("== 6,", "== 5,"))
    cfg = config.read(write_config(project, ["bump-default", "add-minus"], canary="bump-default"))
    with pytest.raises(EngineError, match="the run is void: the canary 'bump-default' was survived"):
        ENGINE.run(Request(project, cfg))

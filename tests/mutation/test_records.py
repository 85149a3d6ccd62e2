"""The one record: every engine's results become runs of ``Record``s, which read back as they were written;
anything else is refused with the field named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import _scripts
import pytest
from core_deletions import candidates
from guard_mutation import cli
from guard_mutation.engines import ENGINES
from guard_mutation.store import StoreError, load
from mutation_common import load_results
from mutation_io import InputError
from mutation_model import CORE_DELETIONS, CRITICAL, MUTMUT, SWEEP, Mutant, Outcome, Record, RecordError, Run
from mutation_records import critical_run, mutmut_run, read_core_deletions, sweep_run
from mutation_sweep.results import SweepResults, universe_of
from mutation_sweep.work_item import Mutant as SweepMutant
from mutation_sweep.work_item import Result

F = "pkg.mod.x_f__mutmut_"


def _record(**change: Any) -> dict[str, Any]:
    mutant = Mutant(MUTMUT, F + "1", "pkg/mod.py|f|op|a|b", "pkg/mod.py", "f", "op", "a", "b", 2, 2, 5, 6)
    data = Record(mutant, Outcome("killed", ("t::a",), 0.5, "")).to_json()
    data.update(change)
    return data


def test_a_record_reads_back_as_it_was_written() -> None:
    data = _record()
    assert Record.from_json(json.loads(json.dumps(data)), "here").to_json() == data
    assert Record.from_json(data, "here").mutant.function == "pkg.mod:f"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"line": "2"}, "'line' must be int, not str"),
        ({"line": True}, "'line' must be int, not bool"),
        ({"duration": -1.0}, "'duration' must be seconds >= 0"),
        ({"killed_by": [1]}, "'killed_by' must list test ids"),
        ({"status": None}, "'status' must be str, not NoneType"),
        ({"colour": "red"}, "unknown field 'colour'"),
        ({"id": ""}, "'engine' and 'id' must not be empty"),
    ],
)
def test_a_malformed_record_is_refused_naming_the_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(RecordError, match=f"^here: record .*{message}"):
        Record.from_json(_record(**change), "here")
    missing = _record()
    del missing["scope"]
    with pytest.raises(RecordError, match="'scope' is missing"):
        Record.from_json(missing, "here")


def test_a_run_reads_back_and_refuses_another_engines_record() -> None:
    run = Run(MUTMUT, (Record.from_json(_record(), "-"),), (1, 2), "full", None, {"mutmut_version": "3.8.1"})
    assert Run.from_json(json.loads(json.dumps(run.to_json())), "here") == run
    stray = {**run.to_json(), "engine": SWEEP}
    with pytest.raises(RecordError, match="is not sweep's"):
        Run.from_json(stray, "here")
    with pytest.raises(RecordError, match="'shard' must be null"):
        Run.from_json({**run.to_json(), "shard": {"index": 3, "count": 2}}, "here")


def test_every_engine_writes_the_same_record(tmp_path: Path) -> None:
    exported = _scripts.results_file(tmp_path / "m.json", [_scripts.mutant(F + "1")])
    mutmut = mutmut_run(load_results(exported, hint="-"))
    made = SweepMutant("pkg/mod.py", "f", "comparison", "a < 1", "a <= 1", 2, 2, occurrence=1)
    result = Result(made, "killed", ("t",), failed="t::a", duration=0.2)
    sweep = sweep_run(SweepResults([result], universe_of([made.id])))
    entry = {"id": "c", "verdict": "killed", "file": "pkg/mod.py", "scope": "f", "why": "w", "seconds": 1}
    entry.update(diff="@@ -2 +2 @@\n-a < 1\n+a <= 1", failed_tests=["t::a"])
    critical = critical_run({"mutants": [entry]}, "-")
    (m,), (s,), (c,) = mutmut.records, sweep.records, critical.records
    assert (m.mutant.engine, s.mutant.engine, c.mutant.engine) == (MUTMUT, SWEEP, CRITICAL)
    assert s.outcome == Outcome("killed", ("t::a",), 0.2, "")
    assert c.outcome == Outcome("killed", ("t::a",), 1.0, "w")
    assert (
        (s.mutant.original, s.mutant.mutated) == (c.mutant.original, c.mutant.mutated) == ("a < 1", "a <= 1")
    )
    assert m.outcome.status == "survived"
    assert m.mutant.diff.endswith("+    return a - b")


def test_each_registered_engine_makes_a_run_of_its_own_records(tmp_path: Path) -> None:
    files = {
        "mutmut": _scripts.results_file(tmp_path / "m.json", [_scripts.mutant(F + "1", "killed")]),
        "catalogue": tmp_path / "c.json",
        "sweep": tmp_path / "s.json",
        "core-deletions": _scripts.deletions_file(tmp_path / "d.json", [("killed", "x = 1")]),
    }
    files["catalogue"].write_text(
        json.dumps({"mutants": [{"id": "c", "verdict": "killed"}]}), encoding="utf-8"
    )
    SweepResults([], universe_of([])).write(files["sweep"])
    for name, engine in ENGINES.items():
        run = engine.records(files[name])
        assert all(r.mutant.engine == run.engine for r in run.records)
        assert len(run.records) == (0 if name == "sweep" else 1)


def test_the_core_deletions_are_records_whose_status_is_what_their_run_saw(tmp_path: Path) -> None:
    made = [("killed", "a()"), ("reviewed", "b()"), ("invalid", "c()")]
    run = read_core_deletions(_scripts.deletions_file(tmp_path / "d.json", made))
    assert [(r.outcome.status, r.mutant.original, r.mutant.mutated) for r in run.records] == [
        ("killed", "a()", "pass"),
        ("survived", "b()", "pass"),  # reviewed by its run; the gate reads the reviews itself
        ("invalid", "c()", "pass"),
    ]
    assert run.records[2].outcome.detail == "d"
    assert {r.mutant.engine for r in run.records} == {CORE_DELETIONS}
    part = _scripts.deletions_file(tmp_path / "p.json", made, part=True)
    with pytest.raises(InputError, match="a part of a run"):
        read_core_deletions(part)
    assert len(read_core_deletions(part, whole=False).records) == 3
    short = _scripts.deletions_file(tmp_path / "s.json", made, universe={"count": 4})
    with pytest.raises(InputError, match="3 of the 4 deletions"):
        read_core_deletions(short)
    with pytest.raises(InputError, match="unknown verdict 'lost'"):
        read_core_deletions(_scripts.deletions_file(tmp_path / "u.json", [("lost", "a()")]))


def test_a_deletion_is_named_by_what_it_deletes_and_each_repeat_apart() -> None:
    source = "def f():\n    a()\n    b()\n    a()\n\ndef g():\n    a()\n"
    first, b, again, other = candidates(source)
    assert (first.occurrence, again.occurrence, other.occurrence) == (1, 2, 1)
    assert len({first.id, b.id, again.id, other.id}) == 4
    moved = candidates("def f():\n    x = 1\n" + source.removeprefix("def f():\n"))
    assert first.id in {d.id for d in moved}


def test_a_deletion_is_scoped_to_its_own_definition_whatever_that_returns() -> None:
    # A C function returning a pointer names itself right after the star.
    source = (
        "cdef inline object f():\n    a()\n\n"
        "cdef void *g(object o) except? NULL:\n    b()\n\n"
        "cdef int *h():\n    c()\n\n"
        "cdef class K:\n    cdef int j(self):\n        d()\n"
    )
    assert [(d.scope, d.text) for d in candidates(source)] == [
        ("f", "a()"),
        ("g", "b()"),
        ("h", "c()"),
        ("K.j", "d()"),
    ]


def _store(tmp_path: Path) -> Path:
    store = tmp_path / "store.json"
    results = _scripts.results_file(tmp_path / "m.json", [_scripts.mutant(F + "1", "killed")])
    assert cli.main(["add", "--engine", "mutmut", str(results), "--store", str(store)]) == 0
    return store


def test_a_run_edited_by_hand_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    data = json.loads(store.read_text(encoding="utf-8"))
    data["runs"]["mutmut"]["records"][0]["status"] = "survived"
    store.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(StoreError, match=r"runs\.mutmut differs from mutmut's results"):
        load(store)
    data["runs"]["mutmut"]["records"][0]["line"] = "two"
    store.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(StoreError, match=r"runs\.mutmut: records\[0\]: record .*'line' must be int"):
        load(store)


def test_a_version_1_store_is_read_with_its_runs_made_from_its_results(tmp_path: Path) -> None:
    store = _store(tmp_path)
    data = json.loads(store.read_text(encoding="utf-8"))
    whole = load(store)
    old = {"format": data["format"], "version": 1, "engines": data["engines"]}
    store.write_text(json.dumps(old), encoding="utf-8")
    assert load(store).runs == whole.runs


def test_a_partial_mutmut_run_never_enters_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store.json"
    results = _scripts.results_file(
        tmp_path / "m.json", [_scripts.mutant(F + "1", "killed")], universe={"count": 2, "sha256": "x"}
    )
    assert cli.main(["add", "--engine", "mutmut", str(results), "--store", str(store)]) == 2
    assert "hold 1 of the 2 mutants" in capsys.readouterr().err
    assert not store.exists()


def test_the_core_deletions_are_judged_by_the_behaviour_suite() -> None:
    from core_deletions import default_tests

    behaviour = sorted(
        str(p.relative_to(_scripts.ROOT)) for p in (_scripts.ROOT / "tests/behaviour").glob("test_*.py")
    )
    assert default_tests() == behaviour
    assert "tests/behaviour/test_device_guard.py" in behaviour

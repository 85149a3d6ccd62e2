"""The one record, the store, and the judgement every engine's runs get."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from guard_mutation import reuse, store
from guard_mutation.config import Review
from guard_mutation.judge import Status, judge
from guard_mutation.model import Mutant, Outcome, Record, RecordError, Run

DIFF = "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -3 +3 @@\n-    if a < b:\n+    if a <= b:\n"


def mutant(id_: str = "m1", engine: str = "toy", **kw: object) -> Mutant:
    fields: dict[str, object] = dict(
        engine=engine,
        id=id_,
        file="pkg/m.py",
        line=3,
        end_line=3,
        operator="cmp",
        diff=DIFF,
        function="pkg.m:f",
    )
    fields.update(kw)
    return Mutant(**fields)  # type: ignore[arg-type]


def record(verdict: str, id_: str = "m1", *, engine: str = "toy", **kw: object) -> Record:
    return Record(
        mutant(id_, engine, **kw), Outcome(verdict, killers=("t.py::test_a",) if verdict == "killed" else ())
    )


def review(**kw: str) -> Review:
    fields = {"engine": "toy", "function": "pkg.m:f", "diff": "if a <= b:", "reason": "the same order"} | kw
    return Review(1, **fields)


def test_a_run_goes_to_json_and_back_unchanged() -> None:
    run = Run(
        "toy",
        (record("killed"), record("survived", "m2", killed_by=("t.py::test_b",), why="w")),
        True,
        ("n",),
    )
    assert Run.from_json(json.loads(json.dumps(run.to_json())), "run") == run


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["records"][0]["outcome"].update(verdict="dead"), "verdict 'dead'"),
        (lambda d: d["records"][0]["mutant"].pop("file"), "missing field 'file'"),
        (lambda d: d["records"][0]["mutant"].update(line="3"), r"records\[0\]\.mutant\.line: str, not int"),
        (lambda d: d["records"][0]["mutant"].update(colour=1), "unknown field 'colour'"),
        (lambda d: d["records"].append(d["records"][0]), "mutant ids appear twice: m1"),
        (lambda d: d["records"][0]["mutant"].update(engine="other"), "a mutant of 'other' in 'toy'"),
    ],
)
def test_a_bad_record_is_refused_naming_where(edit: object, message: str) -> None:
    document = Run("toy", (record("killed"),)).to_json()
    edit(document)  # type: ignore[operator]
    with pytest.raises(RecordError, match=message):
        Run.from_json(document, "run")


def test_changed_lines_are_what_a_review_matches() -> None:
    assert mutant().changed_lines() == ("if a < b:", "if a <= b:")


def test_the_store_keeps_each_engines_latest_whole_run(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "store.json"
    first = store.Store().with_run(Run("toy", (record("survived"),)))
    store.save(first.with_run(Run("other", (record("killed", engine="other"),))), path)
    later = store.load(path).with_run(Run("toy", (record("killed"),)))
    store.save(later, path)
    held = store.load(path)
    assert sorted(held.runs) == ["other", "toy"]
    assert held.runs["toy"].records[0].outcome.verdict == "killed"
    assert list(tmp_path.joinpath("deep").iterdir()) == [path]  # no temporary file left


def test_a_part_of_a_run_never_replaces_a_whole_one() -> None:
    part = store.Store().with_run(Run("toy", (), whole=False))
    assert not part.with_run(Run("toy", (record("killed"),), whole=False)).runs["toy"].whole
    whole = part.with_run(Run("toy", ()))
    with pytest.raises(store.StoreError, match="a part of toy's run never replaces the whole run"):
        whole.with_run(Run("toy", (), whole=False))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ('{"format": "x"}', "not a guard-mutation-store"),
        ('{"format": "guard-mutation-store", "version": 2, "runs": {}}', "store version 2"),
        ('{"format": "guard-mutation-store", "version": 3, "runs": []}', "'runs' is not an object"),
    ],
)
def test_a_bad_store_is_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(store.StoreError, match=message):
        store.load(path)
    assert path.read_text() == text


def test_a_missing_store_is_empty(tmp_path: Path) -> None:
    assert store.load(tmp_path / "none.json").runs == {}


def test_a_critical_mutant_passes_only_when_its_own_tests_kill_it() -> None:
    killed_by = ("t.py::test_a",)
    runs = [
        Run(
            "toy",
            (
                record("killed", "c1", killed_by=killed_by, why="the bug"),
                record("wrong-reason", "c2", killed_by=killed_by, why="the bug"),
                record("timeout", "c3", killed_by=killed_by, why="the bug"),
            ),
        )
    ]
    judged = judge(runs, [])
    assert [j.status for j in judged.judged] == [Status.KILLED, Status.FINDING, Status.FINDING]
    assert "critical toy c2" in judged.findings[0]
    assert "the bug" in judged.findings[0]


def test_a_survivor_passes_only_under_a_review_that_holds_here() -> None:
    runs = [Run("toy", (record("survived"), record("no-tests", "m2", diff=DIFF.replace("<=", ">"))))]
    judged = judge(runs, [review()])
    assert [j.status for j in judged.judged] == [Status.REVIEWED, Status.FINDING]
    assert judged.judged[0].review == review()
    elsewhere = judge(runs, [review(python="<3.0")])
    assert elsewhere.judged[0].status is Status.FINDING


@pytest.mark.parametrize(
    "other",
    [
        {"engine": "else"},
        {"function": "pkg.m:g"},
        {"diff": "if a < c:"},
        {"removed": "if a > b:"},
    ],
)
def test_a_review_matches_its_engine_function_and_lines_alone(other: dict[str, str]) -> None:
    assert judge([Run("toy", (record("survived"),))], [review(**other)]).judged[0].status is Status.FINDING


def test_a_review_of_a_killed_mutant_is_refuted_and_one_of_nothing_is_stale() -> None:
    run = Run("toy", (record("killed"),))
    assert "is refuted: m1 was killed by t.py::test_a" in judge([run], [review()]).findings[0]
    stale = judge([run], [review(diff="nothing like it")])
    assert "is stale" in stale.findings[0]
    assert judge([replace(run, whole=False)], [review(diff="nothing like it")]).findings == []


def test_each_engine_has_its_own_figures() -> None:
    runs = [
        Run("toy", (record("killed"), record("survived", "m2"), record("invalid", "m3"))),
        Run("other", (record("timeout", engine="other"), record("equivalent", "m2", engine="other"))),
    ]
    toy, other = judge(runs, []).tallies
    assert (toy.engine, toy.score, other.score) == ("toy", 50.0, 100.0)
    assert toy.describe() == "toy: 50.0 % (1 killed, 1 not counted, 1 finding)"
    assert judge([Run("none", ())], []).tallies[0].score is None


def test_a_timeout_refutes_a_review_and_a_reviewed_unreached_mutant_passes() -> None:
    assert (
        "is refuted: m1 was killed by its tests"
        in judge([Run("toy", (record("timeout"),))], [review()]).findings[0]
    )
    reached_by_none = judge([Run("toy", (record("no-tests"),))], [review()])
    assert reached_by_none.judged[0].status is Status.REVIEWED


def test_a_critical_mutant_that_could_not_be_judged_is_a_finding() -> None:
    broken = record("invalid", killed_by=("t.py::test_a",), why="the bug")
    assert judge([Run("toy", (broken,))], []).judged[0].status is Status.FINDING


def test_two_reviews_of_one_mutant_are_both_in_use() -> None:
    second = Review(2, "toy", "pkg.m:f", "if a < b:", "the same, seen from the line it removes")
    assert judge([Run("toy", (record("survived"),))], [review(), second]).findings == []


def test_a_store_whose_run_is_filed_under_another_engine_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    store.save(store.Store().with_run(Run("toy", ())), path)
    path.write_text(path.read_text().replace('"toy": {', '"other": {'))
    with pytest.raises(store.StoreError, match=r"runs\.other: holds 'toy'"):
        store.load(path)


def test_a_store_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(store.StoreError, match="cannot read it"):
        store.load(path)


def test_an_interrupted_save_leaves_the_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.json"
    store.save(store.Store().with_run(Run("toy", ())), path)
    before = path.read_text()

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(json, "dump", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.save(store.Store().with_run(Run("toy", (record("killed"),))), path)
    assert path.read_text() == before
    assert list(tmp_path.iterdir()) == [path]


def test_an_outcome_is_kept_only_with_the_same_digest_and_never_without_one() -> None:
    def earlier(verdict: str, depends: str) -> Run:
        return Run("toy", (Record(mutant(), Outcome(verdict, depends=depends)),))

    kept = reuse.kept(earlier("killed", "d1"), "m1", "d1")
    assert kept is not None
    assert kept.reused
    assert reuse.kept(earlier("killed", "d1"), "m1", "d2") is None
    assert reuse.kept(earlier("survived", "d1"), "m1", "d1") is not None  # with the same inputs, the same
    assert reuse.kept(earlier("killed", ""), "m1", "") is None
    assert reuse.kept(None, "m1", "d1") is None
    assert reuse.digest(["ab", "c"]) != reuse.digest(["a", "bc"])

"""``guard-mutation``: engines run into one store; the report and the gate read it; bad input is exit 2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import _scripts
import pytest
from guard_mutation import cli, engines
from guard_mutation.store import FORMAT, StoreError, load
from mutation_common import universe_of

F = "pkg.mod.x_f__mutmut_"
GATE_CONFIG = "[gate]\nmin_score = 100.0\n"


def _mutmut(path: Path, *statuses: str, shard: tuple[int, int] | None = None) -> Path:
    names = [F + str(i) for i in range(1, len(statuses) + 1)]
    mutants = [_scripts.mutant(n, s) for n, s in zip(names, statuses, strict=True)]
    if shard is None:
        return _scripts.results_file(path, mutants)
    index, count = shard

    mine = mutants[index - 1 :: count]
    return _scripts.results_file(
        path, mine, shard={"index": index, "count": count}, universe=universe_of(names)
    )


def _add(tmp_path: Path, store: Path, *statuses: str, shard: tuple[int, int] | None = None) -> int:
    name = f"{shard[0]}-of-{shard[1]}.json" if shard else "whole.json"
    results = _mutmut(tmp_path / name, *statuses, shard=shard)
    return cli.main(["add", "--engine", "mutmut", str(results), "--store", str(store)])


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "mutation_config.toml"
    path.write_text(GATE_CONFIG, encoding="utf-8")
    return path


def test_help_names_every_subcommand() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "guard_mutation", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    for word in ("run", "add", "merge", "list", "show", "report", "gate"):
        assert f"\n  {word} " in done.stdout


def test_an_engines_results_go_into_one_versioned_store(tmp_path: Path) -> None:
    store = tmp_path / "store.json"
    assert _add(tmp_path, store, "killed") == 0
    data = json.loads(store.read_text(encoding="utf-8"))
    assert (data["format"], data["version"]) == (FORMAT, 2)
    assert list(data["engines"]) == list(data["runs"]) == ["mutmut"]
    assert load(store).engines["mutmut"]["mutants"][0]["name"] == F + "1"
    # the one model: each mutant a record of what it edits and what its run saw, whichever engine made it
    (record,) = data["runs"]["mutmut"]["records"]
    assert (record["engine"], record["id"], record["file"], record["scope"]) == (
        "mutmut",
        F + "1",
        "pkg/mod.py",
        "f",
    )
    assert (record["status"], record["duration"], record["killed_by"]) == ("killed", 0.01, [])
    assert record["diff"].endswith("+    return a - b")


def test_shards_merge_into_one_whole_run(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert _add(tmp_path, first, "killed", "survived", shard=(1, 2)) == 0
    assert _add(tmp_path, second, "killed", "survived", shard=(2, 2)) == 0
    merged = tmp_path / "merged.json"
    assert cli.main(["merge", "--out", str(merged), str(first), str(second)]) == 0
    document = load(merged).engines["mutmut"]
    assert document["shard"] is None
    assert sorted(m["name"] for m in document["mutants"]) == [F + "1", F + "2"]


def test_shards_wait_in_the_store_until_their_run_is_complete_in_any_order(tmp_path: Path) -> None:
    store = tmp_path / "store.json"
    statuses = ("killed", "survived", "killed", "timeout", "killed")
    for index in (3, 1):
        assert _add(tmp_path, store, *statuses, shard=(index, 3)) == 0
    assert "mutmut" not in load(store).engines
    assert cli.main(["gate", "--store", str(store), "--config", str(_config(tmp_path))]) == 2
    assert _add(tmp_path, store, *statuses, shard=(1, 3)) == 2  # the same shard twice
    assert _add(tmp_path, store, *statuses, shard=(2, 3)) == 0
    held = load(store)
    assert held.shards == {}
    assert sorted(m["name"] for m in held.engines["mutmut"]["mutants"]) == sorted(
        F + str(i) for i in range(1, 6)
    )


def test_a_merge_of_two_whole_runs_of_one_engine_is_refused(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    _add(tmp_path, first, "killed")
    _add(tmp_path, second, "survived")
    merged = tmp_path / "m.json"
    assert cli.main(["merge", "--out", str(merged), str(first), str(second)]) == 2
    assert not merged.exists()


def test_a_shard_run_into_a_store_holding_the_whole_run_is_refused_before_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []

    def fake_run(options: engines.RunOptions, out: Path) -> int:
        ran.append("ran")
        return 0

    mutmut = engines.ENGINES["mutmut"]
    monkeypatch.setitem(engines.ENGINES, "mutmut", mutmut.__class__(**{**mutmut.__dict__, "run": fake_run}))
    store = tmp_path / "store.json"
    _add(tmp_path, store, "killed")
    assert cli.main(["run", "mutmut", "--shard", "1/2", "--store", str(store)]) == 2
    assert ran == []


def test_a_shard_never_joins_a_whole_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store.json"
    assert _add(tmp_path, store, "killed", "killed") == 0
    before = store.read_bytes()
    shard = _mutmut(tmp_path / "s.json", "killed", "survived", shard=(1, 2))
    assert cli.main(["add", "--engine", "mutmut", str(shard), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "cannot join the whole run this store holds" in err
    assert store.read_bytes() == before


@pytest.mark.parametrize(("statuses", "expected"), [(("killed", "timeout"), 0), (("killed", "survived"), 1)])
def test_the_gate_reads_the_store(tmp_path: Path, statuses: tuple[str, ...], expected: int) -> None:
    store = tmp_path / "store.json"
    _add(tmp_path, store, *statuses)
    assert cli.main(["gate", "--store", str(store), "--config", str(_config(tmp_path))]) == expected


def test_the_report_reads_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store.json"
    _add(tmp_path, store, "killed", "survived")
    summary = tmp_path / "summary.md"
    assert (
        cli.main(
            ["report", "--store", str(store), "--config", str(_config(tmp_path)), "--markdown", str(summary)]
        )
        == 0
    )
    assert F + "2" in summary.read_text(encoding="utf-8")


def test_run_puts_each_engines_results_in_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _mutmut(tmp_path / "m.json", "killed")

    def fake_run(options: engines.RunOptions, out: Path) -> int:
        out.write_bytes(source.read_bytes())
        return 0

    monkeypatch.setitem(
        engines.ENGINES,
        "mutmut",
        engines.ENGINES["mutmut"].__class__(**{**engines.ENGINES["mutmut"].__dict__, "run": fake_run}),
    )
    store = tmp_path / "store.json"
    assert cli.main(["run", "mutmut", "--store", str(store)]) == 0
    assert list(load(store).engines) == ["mutmut"]


def test_an_engine_that_fails_leaves_the_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(
        engines.ENGINES,
        "sweep",
        engines.ENGINES["sweep"].__class__(
            **{**engines.ENGINES["sweep"].__dict__, "run": lambda options, out: 2}
        ),
    )
    store = tmp_path / "store.json"
    _add(tmp_path, store, "killed")
    before = store.read_bytes()
    assert cli.main(["run", "sweep", "--store", str(store)]) == 2
    assert "sweep did not run to the end (exit status 2)\n" in capsys.readouterr().err
    assert store.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "nope"], "'nope' names no engine; one of: all, catalogue, core-deletions, mutmut, sweep"),
        (["add", "--engine", "nope", "x.json"], "--engine 'nope' names no engine"),
        (["add", "--engine", "mutmut", "{tmp}/none.json"], "none.json: no such results file"),
        (["add", "--engine", "sweep", "{tmp}/bad.json"], "bad.json: not a guard-lib-sweep-results file"),
        (["gate", "--store", "{tmp}/none.json"], "none.json: no such store"),
        (["gate", "--store", "{tmp}/bad.json"], "bad.json: not a guard-mutation-store file"),
        (["report", "--store", "{tmp}/empty.json", "--markdown", "{tmp}/x.md"], "holds no mutmut results"),
        (["list", "nope"], "'nope' names no engine"),
    ],
)
def test_bad_input_is_exit_2_with_one_line_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    (tmp_path / "bad.json").write_text('{"format": "something else"}', encoding="utf-8")
    (tmp_path / "empty.json").write_text(
        json.dumps({"format": FORMAT, "version": 1, "engines": {}}), encoding="utf-8"
    )
    before = sorted(p.name for p in tmp_path.iterdir())
    assert cli.main([a.format(tmp=tmp_path) for a in args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_store_whose_results_an_engine_refuses_is_refused_naming_both(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    broken = {"format": "guard-lib-mutmut-results", "version": 1, "mutants": "none"}
    path.write_text(
        json.dumps({"format": FORMAT, "version": 1, "engines": {"mutmut": broken}}), encoding="utf-8"
    )
    with pytest.raises(StoreError, match=r"s\.json: its mutmut results"):
        load(path)


def test_a_store_of_another_version_or_engine_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"format": FORMAT, "version": 3, "engines": {}}), encoding="utf-8")
    with pytest.raises(StoreError, match="version 3; this tool reads 1 and 2"):
        load(path)
    path.write_text(json.dumps({"format": FORMAT, "version": 1, "engines": {"cosmic": {}}}), encoding="utf-8")
    with pytest.raises(StoreError, match="unknown engine 'cosmic'"):
        load(path)


@pytest.mark.parametrize(
    ("mutant_id", "engine"),
    [
        ("sweep-1c86ddbb5eb1", "sweep"),
        ("guard_lib.x.x_f__mutmut_3", "mutmut"),
        ("restore-deleted", "catalogue"),
        ("deletion-0123456789ab", "core-deletions"),
    ],
)
def test_show_is_sent_to_the_engine_that_names_its_mutants_so(mutant_id: str, engine: str) -> None:
    assert engines.engine_of(mutant_id).name == engine


# Every engine's own listing of this project: end to end, seconds each.
@pytest.mark.e2e
def test_list_and_show_are_the_engines_own(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["list", "sweep", "--operator", "drop-element", "--file", "guard_lib/errors.py"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed
    assert all(" drop-element: " in line for line in listed)
    assert cli.main(["show", listed[0].split()[0]]) == 0
    assert capsys.readouterr().out.startswith("--- a/guard_lib/errors.py")


def _whole_run(engine: str, out: Path) -> None:
    """An engine's whole run (mutmut's of one mutant: a run of none is refused), as the engine writes it."""
    import mutation_sweep.results as sweep_results

    if engine == "sweep":
        sweep_results.SweepResults([], sweep_results.universe_of([])).write(out)
    elif engine == "mutmut":
        _mutmut(out, "killed")
    else:
        out.write_text(json.dumps({"mutants": [], "totals": {"mutants": 0}}), encoding="utf-8")


@pytest.mark.parametrize("engine", ["sweep", "catalogue", "mutmut"])
def test_run_hands_an_engine_the_stores_verdicts_to_reuse_unless_fresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    handed: list[dict[str, str]] = []

    def fake_run(options: engines.RunOptions, out: Path) -> int:
        handed.append({name: path.read_text(encoding="utf-8") for name, path in options.reuse.items()})
        _whole_run(engine, out)
        return 0

    real = engines.ENGINES[engine]
    monkeypatch.setitem(engines.ENGINES, engine, real.__class__(**{**real.__dict__, "run": fake_run}))
    store = tmp_path / "store.json"
    assert cli.main(["run", engine, "--store", str(store)]) == 0  # nothing to reuse yet
    assert cli.main(["run", engine, "--store", str(store)]) == 0
    assert cli.main(["run", engine, "--store", str(store), "--fresh"]) == 0
    assert handed[0] == {}
    assert list(handed[1]) == [engine]
    assert json.loads(handed[1][engine]) == load(store).engines[engine]
    assert handed[2] == {}


@pytest.mark.parametrize("engine", ["sweep", "catalogue", "mutmut"])
def test_an_engine_is_told_to_reuse_the_earlier_run_it_is_handed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    import critical_harness.cli
    import mutation_run
    import mutation_sweep.cli

    module = {"catalogue": critical_harness.cli, "mutmut": mutation_run, "sweep": mutation_sweep.cli}[engine]
    seen: list[list[str]] = []

    def main(argv: list[str]) -> int:
        seen.append(list(argv))
        return 0

    monkeypatch.setattr(module, "main", main)
    earlier = tmp_path / "earlier.json"
    engines.ENGINES[engine].run(engines.RunOptions(reuse={engine: earlier}), tmp_path / "out.json")
    engines.ENGINES[engine].run(engines.RunOptions(), tmp_path / "out.json")
    assert seen[0][seen[0].index("--reuse") + 1] == str(earlier)
    assert "--reuse" not in seen[1]


# --- engines, registered by entry point -------------------------------------------------------------


def _points(*values: tuple[str, str]) -> list[EntryPoint]:
    return [EntryPoint(name, value, engines.GROUP) for name, value in values]


def test_the_engines_are_what_the_distribution_registers() -> None:
    registered = sorted(p.name for p in entry_points(group=engines.GROUP))
    assert registered == ["catalogue", "core-deletions", "mutmut", "sweep"]
    assert list(engines.ENGINES) == registered
    assert engines.REGISTRY_ERROR is None
    assert all(engines.ENGINES[name].name == name for name in registered)


def test_an_engine_of_another_distribution_joins_by_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "extra_engine.py").write_text(
        "import dataclasses\nfrom guard_mutation.engines import SWEEP\n"
        "EXTRA = dataclasses.replace(SWEEP, name='extra', summary='one more')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found = _points(("sweep", "guard_mutation.engines:SWEEP"), ("extra", "extra_engine:EXTRA"))
    monkeypatch.setattr(engines, "entry_points", lambda group: found if group == engines.GROUP else [])
    assert [(name, e.summary) for name, e in engines.registered().items()] == [
        ("extra", "one more"),
        ("sweep", engines.SWEEP.summary),
    ]


@pytest.mark.parametrize(
    ("points", "says"),
    [
        (
            (("broken", "no_such_module_here:ENGINE"),),
            "engine 'broken' (no_such_module_here:ENGINE) does not load",
        ),
        (
            (("named", "guard_mutation.engines:SWEEP"),),
            "engine 'named' (guard_mutation.engines:SWEEP) is not an",
        ),
        (
            (("other", "guard_mutation.engines:GROUP"),),
            "engine 'other' (guard_mutation.engines:GROUP) is not an",
        ),
        ((), "no engine is registered under 'guard_mutation.engines'"),
    ],
)
def test_a_registry_that_cannot_be_read_is_a_clear_error_and_exit_2(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    points: tuple[tuple[str, str], ...],
    says: str,
) -> None:
    monkeypatch.setattr(engines, "entry_points", lambda group: _points(*points))
    with pytest.raises(engines.EngineError, match=re.escape(says)):
        engines.registered()
    error = engines._registry()[1]
    assert error is not None
    assert says in error
    monkeypatch.setattr(cli, "REGISTRY_ERROR", error)
    assert cli.main(["list", "sweep"]) == 2
    assert capsys.readouterr().err == f"guard-mutation: error: {error}\n"


def test_a_listing_whose_reader_stops_early_ends_quietly() -> None:
    command = [sys.executable, "-m", "guard_mutation", "list", "core-deletions"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as listing:
        assert listing.stdout is not None
        assert listing.stderr is not None
        listing.stdout.close()  # the reader gone before the first line, as `| head -0` would be
        assert listing.wait(timeout=60) == 0
        assert listing.stderr.read() == ""

"""Mutant naming, sharding, merging, --changed-since mapping, and reading mutmut's .meta files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import _scripts
import mutation_changes
import mutation_common as mc
import mutation_io
import mutation_run
import mutation_scope
import mutation_shards
import mutmut_child
import mutmut_export
import pytest


def test_parse_names_of_functions_methods_and_package_init() -> None:
    method = mc.parse_mutant_name("guard_lib.device_guard.xǁDeviceGuardǁclose__mutmut_12")
    assert (method.module, method.qualname, method.number) == (
        "guard_lib.device_guard",
        "DeviceGuard.close",
        12,
    )
    assert method.function == "guard_lib.device_guard:DeviceGuard.close"
    assert method.function_key == "guard_lib.device_guard.xǁDeviceGuardǁclose"
    # a module that itself starts with x_ must not be mistaken for the function part
    func = mc.parse_mutant_name("pkg.x_tools.x__helper__mutmut_3")
    assert (func.module, func.qualname) == ("pkg.x_tools", "_helper")
    assert mutation_scope.module_for_path("guard_lib/__init__.py") == "guard_lib"
    assert mc.mangle("A.b") == "xǁAǁb"
    with pytest.raises(mutation_io.InputError):
        mc.parse_mutant_name("guard_lib.device_guard.close")


def test_status_table_matches_mutmut() -> None:
    stats = pytest.importorskip("mutmut.stats")
    assert dict(stats.status_by_exit_code) == mc.STATUS_BY_EXIT_CODE
    assert mc.status_for_exit_code(99) == stats.status_by_exit_code[99] == "suspicious"


NAMES = [f"p.m.x_f__mutmut_{i}" for i in range(1, 24)] + [f"p.m.xǁCǁg__mutmut_{i}" for i in range(1, 8)]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 40])
def test_shards_partition_every_mutant_exactly_once_evenly(count: int) -> None:
    shards = [mutation_shards.select_shard(NAMES, i, count) for i in range(1, count + 1)]
    flat = [n for s in shards for n in s]
    assert sorted(flat) == sorted(NAMES)
    assert len(flat) == len(set(flat))
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1


def test_shard_choice_does_not_depend_on_input_order() -> None:
    assert mutation_shards.select_shard(list(reversed(NAMES)), 2, 3) == mutation_shards.select_shard(
        NAMES, 2, 3
    )


@pytest.mark.parametrize("bad", ["0/4", "5/4", "1/0", "a/b", "2"])
def test_bad_shard_spec(bad: str) -> None:
    with pytest.raises(mutation_io.InputError):
        mutation_shards.parse_shard(bad)


def shard_results(names: list[str], index: int, count: int) -> mc.Results:
    picked = mutation_shards.select_shard(names, index, count)
    records = [mc.MutantRecord.from_json(_scripts.mutant(n, "killed"), "t") for n in picked]
    return mc.Results(mutants=records, shard={"index": index, "count": count}, universe=mc.universe_of(names))


def test_merge_joins_shards() -> None:
    merged = mutation_shards.merge_results([shard_results(NAMES, i, 3) for i in (2, 1, 3)])
    assert sorted(m.name for m in merged.mutants) == sorted(NAMES)


def test_merge_refuses_missing_duplicate_or_foreign_shards() -> None:
    with pytest.raises(mutation_io.InputError, match="expected shards"):
        mutation_shards.merge_results([shard_results(NAMES, 1, 3), shard_results(NAMES, 2, 3)])
    with pytest.raises(mutation_io.InputError, match="expected shards"):
        mutation_shards.merge_results([shard_results(NAMES, 1, 2), shard_results(NAMES, 1, 2)])
    with pytest.raises(mutation_io.InputError, match="different mutant lists"):
        mutation_shards.merge_results([shard_results(NAMES, 1, 2), shard_results(NAMES[:-1], 2, 2)])
    short = shard_results(NAMES, 2, 2)
    short.mutants.pop()
    with pytest.raises(mutation_io.InputError, match="missing mutants"):
        mutation_shards.merge_results([shard_results(NAMES, 1, 2), short])
    blind = [shard_results(NAMES, i, 2) for i in (1, 2)]
    for part in blind:
        part.universe = {}
    with pytest.raises(mutation_io.InputError, match="carry no universe"):
        mutation_shards.merge_results(blind)


def test_merge_cli_round_trip(tmp_path: Path) -> None:
    files = []
    for i in (1, 2):
        path = tmp_path / f"s{i}.json"
        shard_results(NAMES, i, 2).write(path)
        files.append(str(path))
    out = tmp_path / "merged.json"
    assert mutation_run.main(["merge", *files, "--out", str(out)]) == 0
    assert len(mc.load_results(out, hint="x").mutants) == len(NAMES)
    assert mutation_run.main(["merge", files[0], "--out", str(out)]) == 2


SOURCE = """\
import os


def top(x):
    return x + 1


class Guard:
    @property
    def value(self):
        return 1

    def close(self):
        def inner():
            return 2
        return inner()


CONSTANT = 3
"""


def test_changed_lines_map_onto_mutable_units() -> None:
    assert mutation_scope.functions_touching(SOURCE, {5}) == {"top"}
    assert mutation_scope.functions_touching(SOURCE, {15}) == {
        "Guard.close"
    }  # nested def belongs to its unit
    assert mutation_scope.functions_touching(SOURCE, {9}) == {"Guard.value"}  # a decorator line is part of it
    assert mutation_scope.functions_touching(SOURCE, {1, 19}) == set()


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_git_changed_functions(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(SOURCE, encoding="utf-8")
    git(tmp_path, "init", "-q")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    (tmp_path / "pkg" / "m.py").write_text(SOURCE.replace("return x + 1", "return x + 2"), encoding="utf-8")
    (tmp_path / "pkg" / "new.py").write_text("def fresh():\n    return 0\n", encoding="utf-8")
    changed = mutation_scope.git_changed_functions("HEAD", ["pkg"], tmp_path)
    assert changed == {"pkg.m:top", "pkg.new:fresh"}
    names = ["pkg.m.x_top__mutmut_1", "pkg.m.xǁGuardǁclose__mutmut_1", "pkg.new.x_fresh__mutmut_2"]
    assert mutation_scope.filter_by_functions(names, changed) == [
        "pkg.m.x_top__mutmut_1",
        "pkg.new.x_fresh__mutmut_2",
    ]
    with pytest.raises(mutation_io.InputError, match="not a commit"):
        mutation_scope.git_changed_functions("no-such-ref", ["pkg"], tmp_path)


def test_read_meta_reads_exit_codes_and_skips_deleted_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("", encoding="utf-8")
    meta_dir = tmp_path / "mutants" / "pkg"
    meta_dir.mkdir(parents=True)
    meta = {
        "exit_code_by_key": {"pkg.m.x_f__mutmut_1": 1, "pkg.m.x_f__mutmut_2": None},
        "durations_by_key": {},
    }
    (meta_dir / "m.py.meta").write_text(json.dumps(meta), encoding="utf-8")
    (meta_dir / "gone.py.meta").write_text(json.dumps({"exit_code_by_key": {"pkg.gone.x_g__mutmut_1": 0}}))
    found = mutmut_export.read_meta(Path("mutants"))
    assert found == {
        "pkg.m.x_f__mutmut_1": ("pkg/m.py", 1, None),
        "pkg.m.x_f__mutmut_2": ("pkg/m.py", None, None),
    }
    (meta_dir / "m.py.meta").write_text("{not json", encoding="utf-8")
    with pytest.raises(mutation_io.InputError, match="unreadable"):
        mutmut_export.read_meta(Path("mutants"))


def test_read_meta_without_mutants_dir_says_run_mutmut(tmp_path: Path) -> None:
    with pytest.raises(mutation_io.InputError, match="mutmut run"):
        mutmut_export.read_meta(tmp_path / "mutants")


def test_locate_maps_a_method_change_to_file_columns() -> None:
    source = "class C:\n    def f(self, a):\n        if a < 1:\n            return a\n        return 0\n"
    orig = "def f(self, a):\n    if a < 1:\n        return a\n    return 0"
    mutated = orig.replace("a < 1", "a <= 1")
    where = mutmut_export.locate("pkg.m.xǁCǁf__mutmut_1", "pkg/m.py", source, orig, mutated)
    line = source.splitlines()[where.line - 1]
    assert where.line == 3
    assert line[where.column - 1 : where.end_column - 1] == "<" == where.original
    assert where.replacement == "<="
    assert where.mutator == "OperatorReplacement"
    assert "+    if a <= 1:" in where.diff


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "--shard", "2/4"], "--out is required with --shard"),
        (["run", "--changed-since", "HEAD"], "--out is required with --shard, --changed-since"),
        (["export", "--names", "names.txt"], "--out is required"),
        (["run", "--shard", "5/4", "--out", "x.json"], "need 1 <= I <= N"),
        (["run", "--out", "."], "is a directory"),
        (["run", "--changed-since", "no-such-ref-anywhere", "--out", "x.json"], "not a commit"),
        # an option-like ref reaches git as a revision after --end-of-options, never as an option
        (["list", "--changed-since=--output=written.txt"], "not a commit"),
        (["run", "--max-children", "0", "--out", "x.json"], "--max-children must be >= 1"),
    ],
)
def test_bad_run_input_is_exit_2_before_any_mutant_is_made(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    says: str,
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    made: list[list[str]] = []

    def child(args: list[str], override: object) -> int:
        made.append(args)
        return 0

    monkeypatch.setattr(mutation_run, "run_child", child)
    assert mutation_run.main(argv) == 2
    assert says in capsys.readouterr().err
    assert made == []  # mutmut never started
    assert sorted(p.name for p in tmp_path.iterdir()) == [".git"]


@pytest.mark.parametrize(
    ("raw", "logged"),
    [
        ("\r⠋ Generating mutants\r⠙ Generating mutants\r⠹ done in 12s\n", "done in 12s"),
        ("\r⠋ 12/371  🎉 10 🫥 0\r⠙ 371/371  🎉 366 🫥 0     \n", "371/371  🎉 366 🫥 0"),
        ("     also copying poetry.lock-that-is-not-here\n", None),
        ("     also copying pyproject.toml\n", "     also copying pyproject.toml"),
        ("plain line\n", "plain line"),
        ("\r\n", None),
    ],
)
def test_mutmut_output_into_a_log_keeps_each_lines_last_frame(
    raw: str, logged: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_scripts.ROOT)
    assert mutmut_child.log_line(raw) == logged


def _stats(path: Path, by_function: dict[str, list[str]]) -> Path:
    path.write_text(json.dumps({"tests_by_mangled_function_name": by_function}), encoding="utf-8")
    return path


def test_a_changed_test_reaches_the_functions_it_ran_before_and_runs_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before = tmp_path / "mutants" / "mutmut-stats.json"
    before.parent.mkdir()
    only = {"tests/test_b.py": frozenset({"test_two"})}
    changes = mutation_changes.Changes("HEAD", "c", tests=frozenset(only), test_functions=only)
    asked: list[list[str]] = []
    answer: dict[str, object] = {"code": 0, "record": {"pkg.n.x_new": ["tests/test_b.py::test_two"]}}

    def child(args: list[str], override: Path | None) -> int:
        asked.append(args)
        Path(args[1]).write_text(json.dumps({"tests_by_mangled_function_name": answer["record"]}), "utf-8")
        return int(str(answer["code"]))

    monkeypatch.setattr(mutation_run, "run_child", child)

    def reached() -> set[str] | None:
        return mutation_run._reached_by_changed_tests(changes, ["tests/test_b.py"], None)

    assert reached() is None  # no record yet: no stats run either
    assert asked == []
    _stats(
        before,
        {
            "pkg.m.x_top": ["tests/test_a.py::test_one", "tests/test_b.py::test_two"],
            "pkg.m.xǁGuardǁclose": ["tests/test_b.py::test_three[plain]"],  # the same file, not the test
            "pkg.n.x_other": ["tests/test_c.py::test_three"],
        },
    )
    assert reached() == {"pkg.m:top", "pkg.n:new"}  # what it reached before, and what it reaches now
    assert (asked[-1][0], asked[-1][2:]) == ("_stats", ["tests/test_b.py::test_two"])
    by_function = mutation_scope.associations(before)
    assert by_function is not None
    assert by_function["pkg.n.x_new"] == ["tests/test_b.py::test_two"]  # joined mutmut's record
    assert mutation_scope.functions_reached_by(by_function, {"tests/test_d.py::test_x"}.__contains__) == set()
    answer["code"] = 1
    assert reached() is None  # the stats run failed: every function
    answer.update(code=0, record=[])
    assert reached() is None  # its record is unreadable: every function


def test_an_unreadable_record_of_what_tests_reach_is_no_record(tmp_path: Path) -> None:
    record = tmp_path / "mutmut-stats.json"
    malformed: object
    for malformed in ([], {"f": 3}, {"f": [3]}):
        record.write_text(json.dumps({"tests_by_mangled_function_name": malformed}), encoding="utf-8")
        assert mutation_scope.associations(record) is None
    record.write_text("{not json", encoding="utf-8")
    assert mutation_scope.associations(record) is None


def test_what_a_changed_test_reaches_now_joins_mutmuts_record_and_nothing_else_of_it_changes(
    tmp_path: Path,
) -> None:
    record = tmp_path / "mutmut-stats.json"
    data = {
        "tests_by_mangled_function_name": {"pkg.m.x_f": ["tests/test_a.py::test_one"]},
        "duration_by_test": {"tests/test_a.py::test_one": 0.5},
        "function_hashes": {"pkg.m.x_f": "abc"},
    }
    record.write_text(json.dumps(data), encoding="utf-8")
    more = {"pkg.m.x_f": ["tests/test_b.py::test_two"], "pkg.m.x_g": ["tests/test_b.py::test_two"]}
    mutation_scope.merge_associations(record, more)
    merged = json.loads(record.read_text(encoding="utf-8"))
    assert merged["tests_by_mangled_function_name"] == {
        "pkg.m.x_f": ["tests/test_a.py::test_one", "tests/test_b.py::test_two"],
        "pkg.m.x_g": ["tests/test_b.py::test_two"],
    }
    assert {k: v for k, v in merged.items() if k != "tests_by_mangled_function_name"} == {
        k: v for k, v in data.items() if k != "tests_by_mangled_function_name"
    }


def test_a_stats_run_of_the_changed_tests_runs_those_a_change_inside_names_and_whole_files_else() -> None:
    changes = mutation_changes.Changes(
        "HEAD",
        "c",
        tests=frozenset({"tests/test_a.py", "tests/test_b.py"}),
        test_functions={"tests/test_a.py": frozenset({"test_new", "TestX.test_y"})},
    )
    targets = mutation_scope.stats_targets(changes, ["tests/test_b.py", "tests/test_a.py"])
    assert targets == ["tests/test_a.py::TestX.test_y", "tests/test_a.py::test_new", "tests/test_b.py"]
    named = [
        "tests/test_a.py::test_new[1]",
        "tests/test_a.py::TestX::test_y",
        "tests/test_a.py::test_old",
        "tests/test_b.py::test_any[p]",
        "tests/test_c.py::test_new",
    ]
    assert [t for t in named if mutation_scope.named(t, targets)] == [*named[:2], named[3]]


def test_a_core_rebuilt_since_mutmuts_copy_was_made_replaces_the_one_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # mutmut copies a file into mutants/ once and mutates only Python: the rest is refreshed here.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.mutmut]\nsource_paths = ["pkg"]\n', encoding="utf-8")
    for root in (tmp_path, tmp_path / "mutants"):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "core.so").write_bytes(b"old build")
        (root / "pkg" / "mod.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "pkg" / "core.so").write_bytes(b"new build")
    (tmp_path / "pkg" / "mod.py").write_text("x = 2\n", encoding="utf-8")  # mutmut's own to regenerate
    (tmp_path / "pkg" / "new.so").write_bytes(b"not yet copied")  # mutmut's own to copy
    assert mutation_run.refresh_built_files() == [Path("pkg/core.so")]
    assert (tmp_path / "mutants" / "pkg" / "core.so").read_bytes() == b"new build"
    assert (tmp_path / "mutants" / "pkg" / "mod.py").read_text(encoding="utf-8") == "x = 1\n"
    assert not (tmp_path / "mutants" / "pkg" / "new.so").exists()
    assert mutation_run.refresh_built_files() == []

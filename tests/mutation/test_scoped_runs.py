"""The proof of a change: each engine scoped to the code changed since a commit, judged at once."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Collection
from pathlib import Path

import _scripts
import pytest
from critical_harness.model import Mutant as CatalogueMutant
from critical_harness.model import MutantSpec
from critical_harness.scope import by_change as catalogue_by_change
from critical_harness.scope import edited_lines
from guard_mutation import cli, engines
from mutation_changes import Changes, verify_ref
from mutation_sweep import select_tests
from mutation_sweep.scope import by_change as sweep_by_change
from mutation_sweep.work_item import Mutant

F = "pkg.mod.x_f__mutmut_"
REVIEWED = '[[reviewed]]\nengine = "mutmut"\nfunction = "pkg.mod:f"\ndiff = "return a * b"\nreason = "r"\n'


def _changes(
    lines: dict[str, set[int]], tests: Collection[str] = (), functions: dict[str, set[str]] | None = None
) -> Changes:
    return Changes(
        "main",
        "0" * 40,
        {f: frozenset(n) for f, n in lines.items()},
        frozenset(tests),
        functions={f: frozenset(n) for f, n in (functions or {}).items()},
    )


def _sweep_mutant(line: int, end_line: int | None = None) -> Mutant:
    return Mutant("pkg/m.py", "f", "comparison", f"a < {line}", f"a <= {line}", line, end_line or line)


def test_the_sweep_takes_mutants_on_changed_lines_and_those_a_changed_test_reaches() -> None:
    mutants = [_sweep_mutant(3), _sweep_mutant(5, 7), _sweep_mutant(9), _sweep_mutant(11), _sweep_mutant(13)]
    reached: dict[int, tuple[str, ...]] = {9: ("tests/test_a.py::test_x",), 11: ("tests/test_b.py::test_y",)}
    mapping = select_tests.TestMap({"pkg/m.py": reached}, ("tests/test_a.py",))
    lines_only = sweep_by_change(mutants, _changes({"pkg/m.py": {6}}), mapping, Path("."), ["pkg/m.py"])
    assert [m.line for m in lines_only.mutants] == [5]
    with_tests = _changes({"pkg/m.py": {6}}, {"tests/test_a.py"})
    scoped = sweep_by_change(mutants, with_tests, mapping, Path("."), ["pkg/m.py"])
    # line 9 is reached by the changed test; 3 and 13 by no test alone, so by the whole suite (SUITE)
    assert [m.line for m in scoped.mutants] == [3, 5, 9, 13]
    assert scoped.describe(5) == (
        "4 of 5 mutants: 1 in changed functions or lines, 3 more that a changed test reaches"
    )
    # a change inside f's body: every mutant of f, whichever line it is on
    in_f = _changes({"pkg/m.py": {6}}, functions={"pkg/m.py": {"f"}})
    assert len(sweep_by_change(mutants, in_f, mapping, Path("."), ["pkg/m.py"]).mutants) == 5
    in_g = _changes({"pkg/m.py": {6}}, functions={"pkg/m.py": {"g"}})
    assert len(sweep_by_change(mutants, in_g, mapping, Path("."), ["pkg/m.py"]).mutants) == 1


def test_a_changed_test_reaches_every_mutant_of_what_runs_at_import_or_a_definitions_header() -> None:
    # Coverage ties line 11 to test_b alone (it imports the module afresh), but once those tests pass the
    # whole suite judges such a mutant: a change to test_a may undo its kill.
    at_import = Mutant("pkg/m.py", "<module>", "replace-value", "1", "2", 11, 11, at_import=True)
    header = Mutant("pkg/m.py", "f", "drop-element", "a=1", "a", 9, 9, definition=True)
    body = _sweep_mutant(11)
    reached: dict[int, tuple[str, ...]] = {9: ("tests/test_b.py::test_y",), 11: ("tests/test_b.py::test_y",)}
    mapping = select_tests.TestMap({"pkg/m.py": reached}, ("tests/test_a.py",))
    changes = _changes({}, {"tests/test_a.py"})
    scoped = sweep_by_change([at_import, header, body], changes, mapping, Path("."), ["pkg/m.py"])
    assert scoped.mutants == [at_import, header]


def _catalogue_mutant(mutant_id: str, hunk: str, killed_by: str) -> CatalogueMutant:
    spec = MutantSpec(mutant_id, "pkg/m.py", "f", "why", (killed_by,), "x", None, None)
    diff = f"--- a/pkg/m.py\n+++ b/pkg/m.py\n{hunk}\n-    x\n"
    return CatalogueMutant(spec, "", "", diff)


def test_the_catalogue_takes_mutants_whose_edit_or_named_test_changed() -> None:
    on_line = _catalogue_mutant("a", "@@ -4,2 +4,1 @@", "tests/test_a.py::test_x")
    by_test = _catalogue_mutant("b", "@@ -20 +20,0 @@", "tests/test_b.py::test_y[plain]")
    untouched = _catalogue_mutant("c", "@@ -30 +30 @@", "tests/test_a.py::test_z")
    assert edited_lines(on_line) == {4, 5}
    assert edited_lines(by_test) == {20}
    chosen, why = catalogue_by_change(
        [on_line, by_test, untouched], _changes({"pkg/m.py": {5}}, {"tests/test_b.py"})
    )
    assert [m.spec.id for m in chosen] == ["a", "b"]
    assert why == "2 of 3 mutants: 1 in changed functions or lines, 1 more are killed by a changed test"
    chosen, _ = catalogue_by_change([untouched], _changes({"pkg/m.py": {90}}, functions={"pkg/m.py": {"f"}}))
    assert [m.spec.id for m in chosen] == ["c"]


def _engine(name: str, run: object) -> engines.Engine:
    return engines.Engine(**{**engines.ENGINES[name].__dict__, "run": run})


def test_a_scoped_run_judges_every_engine_at_once_and_leaves_the_store_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each engine runs in a process of its own: what it was asked is written down, not appended.
    def ask(name: str, options: engines.RunOptions) -> None:
        (tmp_path / f"asked-{name}").write_text(str(options.changed_since), encoding="utf-8")

    mutants = [
        _scripts.mutant(F + "1", "killed"),
        _scripts.mutant(F + "2", "survived", added="return a * b"),
        _scripts.mutant(F + "3", "survived"),
    ]

    def mutmut(options: engines.RunOptions, out: Path) -> int:
        ask("mutmut", options)
        _scripts.results_file(out, mutants, scope={"kind": "changed-since", "ref": "HEAD", "functions": []})
        return 0

    def nothing(options: engines.RunOptions, out: Path) -> int:
        ask(out.stem, options)
        return 0  # selected nothing, so wrote nothing

    # Every engine faked, the core's deletions too: a real one would judge this checkout's own changes.
    fakes = (("mutmut", mutmut), ("sweep", nothing), ("catalogue", nothing), ("core-deletions", nothing))
    for name, run in fakes:
        monkeypatch.setitem(engines.ENGINES, name, _engine(name, run))
    config = tmp_path / "mutation_config.toml"
    config.write_text("[gate]\n" + REVIEWED, encoding="utf-8")
    store = tmp_path / "store.json"
    monkeypatch.chdir(_changed_repo(tmp_path / "repo"))
    argv = ["run", "--changed-since", "HEAD", "--out-dir", str(tmp_path / "scoped"), "--config", str(config)]
    assert cli.main([*argv, "--store", str(store)]) == 1
    out = capsys.readouterr().out
    asked = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.glob("asked-*")}
    assert asked == {
        "asked-mutmut": "HEAD",
        "asked-sweep": "HEAD",
        "asked-catalogue": "HEAD",
        "asked-core-deletions": "HEAD",
    }
    assert "guard-mutation: mutmut: 3 judged: 1 killed, 1 reviewed equivalent, 1 not killed" in out
    assert "guard-mutation: sweep: nothing needs judging" in out
    # side by side, each engine's own output under its name
    assert {"--- mutmut (", "--- sweep (", "--- catalogue ("} <= {
        line[: len(line.split("(")[0]) + 1] for line in out.splitlines()
    }
    assert f"  not killed: {F}3 (pkg/mod.py:2 f): survived" in out
    assert not store.exists()
    mutants.pop()
    summary = tmp_path / "summary.md"
    assert cli.main([*argv, "--markdown", str(summary)]) == 0
    text = summary.read_text(encoding="utf-8")
    assert "| mutmut | 2 | 1 | 1 | 0 | 0 |" in text
    assert "| sweep | 0 | 0 | 0 | 0 | 0 |" in text
    assert "every selected mutant killed or reviewed" in text
    assert text.splitlines()[2].startswith("changed since HEAD: ")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--changed-since", "no-such-ref"], "--changed-since 'no-such-ref': not a commit"),
        (
            ["--changed-since", "HEAD", "--shard", "1/2"],
            "--changed-since runs what the change selects, whole",
        ),
    ],
)
def test_a_scoped_run_refuses_bad_input_before_any_engine_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert cli.main(["run", *extra, "--out-dir", str(tmp_path / "scoped")]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
    assert not (tmp_path / "scoped").exists()


def test_each_engine_refuses_a_ref_that_names_no_commit(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    from critical_harness import cli as catalogue
    from mutation_sweep import cli as sweep

    assert sweep.main(["list", "--changed-since", "no-such-ref"]) == 2
    assert "--changed-since 'no-such-ref': not a commit" in caplog.text
    assert catalogue.main(["run", "--changed-since", "no-such-ref"]) == 2
    assert "--changed-since 'no-such-ref': not a commit" in capsys.readouterr().err


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def _changed_repo(repo: Path) -> Path:
    """A git repository with a change not committed yet."""
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "m.py").write_text("def f(a):\n    return a + 1\n", encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    (repo / "pkg" / "m.py").write_text("def f(a):\n    return a - 1\n", encoding="utf-8")
    return repo


def test_a_ref_that_is_the_checked_out_commit_of_a_clean_tree_compares_nothing_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A bug committed on main, main checked out: "since main" would find nothing, a false green.
    _changed_repo(tmp_path)
    _git(tmp_path, "branch", "-M", "main")
    _git(tmp_path, "commit", "-qam", "a bug")
    monkeypatch.chdir(tmp_path)
    for ref in ("main", "HEAD"):
        assert cli.main(["run", "--changed-since", ref, "--out-dir", "scoped"]) == 2
        err = capsys.readouterr().err
        assert err == (
            f"guard-mutation: error: --changed-since {ref}: {ref} is the checked-out commit, so nothing is "
            "compared: name the commit the change started from, such as origin/main or HEAD~1\n"
        )
    assert not (tmp_path / "scoped").exists()
    # uncommitted changes: HEAD is what they are compared with
    (tmp_path / "pkg" / "m.py").write_text("def f(a):\n    return a * 1\n", encoding="utf-8")
    assert verify_ref("HEAD", tmp_path) == _git(tmp_path, "rev-parse", "HEAD").strip()
    assert verify_ref("main~1", tmp_path) == _git(tmp_path, "rev-parse", "main~1").strip()


def test_a_ref_that_names_no_commit_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _git(tmp_path, "init", "-q")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "--changed-since", "origin/nowhere"]) == 2  # a repository with no commit yet
    captured = capsys.readouterr()
    assert captured.err.startswith("guard-mutation: error: --changed-since 'origin/nowhere': not a commit")
    assert captured.err.count("\n") == 1
    assert "Traceback" not in captured.out + captured.err


def _project(root: Path, before: str, after: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A project whose ``pkg/mod.py`` was ``before`` at HEAD~1 and is ``after`` at HEAD, its tests and its
    config; every engine faked, each writing what it was asked. The command line of its proof."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "mod.py").write_text(before, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_mod.py").write_text(
        "import pytest\n\nfrom pkg.mod import f\n\n\n"
        "def test_one_and_nothing():\n    assert f(1, 0) == 1\n\n\n"
        '@pytest.mark.parametrize("b", [1])\ndef test_sum(b):\n    assert f(2, b) == 3\n',
        encoding="utf-8",
    )
    (root / "mutation_config.toml").write_text(
        '[sweep]\npackage = "pkg"\npytest_args = ["tests"]\n', encoding="utf-8"
    )
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "base")
    (root / "pkg" / "mod.py").write_text(after, encoding="utf-8")
    _git(root, "commit", "-qam", "the change")
    monkeypatch.chdir(root)

    def nothing(options: engines.RunOptions, out: Path) -> int:
        Path(f"asked-{out.stem}").write_text(str(options.changed_since), encoding="utf-8")
        return 0

    for name in engines.ENGINES:
        monkeypatch.setitem(engines.ENGINES, name, _engine(name, nothing))
    return ["run", "--changed-since", "HEAD~1", "--markdown", "reports/scoped/summary.md"]


def test_a_red_change_stops_before_any_mutant_and_names_its_failing_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _project(
        tmp_path, "def f(a, b):\n    return a + b\n", "def f(a, b):\n    return a - b\n", monkeypatch
    )
    summary = tmp_path / "reports" / "scoped" / "summary.md"
    summary.parent.mkdir(parents=True)
    summary.write_text("every selected mutant killed or reviewed\n", encoding="utf-8")  # a green run's
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-2:] == [
        "  failed: tests/test_mod.py::test_sum[1]",
        "guard-mutation: run one again: GUARD_LIB_IMPL=python "
        "python -m pytest 'tests/test_mod.py::test_sum[1]'",
    ]
    assert "the tests fail on the unmutated tree" in out
    assert "reports/scoped/baseline.log" in out
    assert "test_sum" in (tmp_path / "reports" / "scoped" / "baseline.log").read_text(encoding="utf-8")
    assert not summary.exists()
    assert not list(tmp_path.glob("asked-*"))  # no engine ran


def test_an_engine_that_fails_is_named_with_its_log_and_no_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _project(
        tmp_path, "def f(a, b):\n    return b + a\n", "def f(a, b):\n    return a + b\n", monkeypatch
    )

    def fails(options: engines.RunOptions, out: Path) -> int:
        sys.stdout.write("Traceback (most recent call last):\n  ...\nRuntimeError: mutmut's own\n")
        return 2

    monkeypatch.setitem(engines.ENGINES, "mutmut", _engine("mutmut", fails))
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert captured.err == (
        "guard-mutation: error: mutmut did not run to the end (exit status 2); "
        "its output: reports/scoped/mutmut.log\n"
    )
    assert "RuntimeError: mutmut's own" in (tmp_path / "reports/scoped/mutmut.log").read_text("utf-8")


def test_a_mutant_not_killed_is_shown_with_its_diff_and_whether_it_only_reverses_the_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # f(a, b) was a - b and is a + b: the tests (f(1, 0) == 1, f(2, 1) == 3) pin the change. The mutant
    # that makes it a - b again reverses it; a * b does not.
    argv = _project(
        tmp_path, "def f(a, b):\n    return a - b\n", "def f(a, b):\n    return a + b\n", monkeypatch
    )
    argv[-1:] = ["reports/scoped/summary.md", "mutmut"]
    survivors = [
        _scripts.mutant(F + "1", "survived"),
        _scripts.mutant(F + "2", "survived", added="return a * b"),
    ]

    def mutmut(options: engines.RunOptions, out: Path) -> int:
        _scripts.results_file(
            out, survivors, scope={"kind": "changed-since", "ref": "HEAD~1", "functions": []}
        )
        return 0

    monkeypatch.setitem(engines.ENGINES, "mutmut", _engine("mutmut", mutmut))
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    first, second = out.split("  not killed: ")[1:]
    assert first.splitlines()[0] == f"{F}1 (pkg/mod.py:2 f): survived"
    assert "    -    return a + b" in first.splitlines()
    assert "    +    return a - b" in first.splitlines()
    assert first.splitlines()[-1] == (
        "    it only reverses the change: the change itself is what the tests cannot tell apart: add a test "
        "that pins it, or review it as equivalent in mutation_config.toml with a reason"
    )
    assert "    +    return a * b" in second.splitlines()
    assert "reverses" not in second
    summary = (tmp_path / "reports/scoped/summary.md").read_text(encoding="utf-8")
    assert "+    return a - b" in summary
    assert "it only reverses the change" in summary

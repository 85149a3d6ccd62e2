"""One real mutmut run, on the tiny package in fixture_pkg/ (never on guard_lib): two shards, merged,
gated and reported, to prove the scripts agree with what mutmut 3.8 actually writes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import _scripts
import pytest

FIXTURE = Path(__file__).parent / "fixture_pkg"


def run(cwd: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(_scripts.SCRIPTS / script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _fixture(tmp_path: Path) -> Path:
    """A copy of the fixture project to run mutmut in (the test is skipped where mutmut is not installed)."""
    pytest.importorskip("mutmut")
    work = tmp_path / "proj"
    shutil.copytree(FIXTURE, work)
    return work


@pytest.mark.skipif(shutil.which("git") is None, reason="mutmut's change detection shells out to git")
@pytest.mark.e2e
def test_sharded_run_merge_gate_and_report(tmp_path: Path) -> None:
    work = _fixture(tmp_path)
    for index in (1, 2):
        done = run(work, "mutation_run.py", "run", "--shard", f"{index}/2", "--out", f"s{index}.json")
        assert done.returncode == 0, done.stdout + done.stderr
    merged = run(work, "mutation_run.py", "merge", "s1.json", "s2.json", "--out", "merged.json")
    assert merged.returncode == 0, merged.stderr
    data = json.loads((work / "merged.json").read_text(encoding="utf-8"))
    by_name = {m["name"]: m for m in data["mutants"]}
    # the @property is skipped by mutmut, so only clamp, __init__ and bump have mutants
    assert {n.split("__mutmut_")[0] for n in by_name} == {
        "tinypkg.calc.x_clamp",
        "tinypkg.calc.xǁCounterǁ__init__",
        "tinypkg.calc.xǁCounterǁbump",
    }
    lt = next(m for m in data["mutants"] if m["replacement"] == "<=")
    assert (lt["status"], lt["line"], lt["original"]) == ("survived", 5, "<")
    assert any(m["status"] == "killed" for m in data["mutants"])

    config = work / "mutation_config.toml"
    config.write_text("[gate]\nmin_score = 100\n", encoding="utf-8")
    assert run(work, "mutation_gate.py", "--results", "merged.json").returncode == 1
    # reviewing every survivor as equivalent, keyed on function + changed text, turns the gate green
    entries = []
    for m in data["mutants"]:
        if m["status"] == "killed":
            continue
        mangled = m["name"].rsplit(".", 1)[1].split("__mutmut_")[0]
        qualname = mangled.removeprefix("x_").removeprefix("xǁ").replace("ǁ", ".")
        added = "\n".join(
            line[1:] for line in m["diff"].splitlines() if line[:1] == "+" and line[:3] != "+++"
        )
        removed = "\n".join(
            line[1:] for line in m["diff"].splitlines() if line[:1] == "-" and line[:3] != "---"
        )
        entries.append(
            f'[[reviewed]]\nengine = "mutmut"\nfunction = {json.dumps("tinypkg.calc:" + qualname)}\n'
            f'diff = {json.dumps(added)}\nremoved = {json.dumps(removed)}\nreason = "test"\n'
        )
    config.write_text("[gate]\nmin_score = 100\n" + "".join(entries), encoding="utf-8")
    gated = run(work, "mutation_gate.py", "--results", "merged.json")
    assert gated.returncode == 0, gated.stdout + gated.stderr
    report = run(
        work, "mutation_report.py", "--results", "merged.json", "--html", "r.html", "--markdown", "r.md"
    )
    assert report.returncode == 0, report.stderr
    assert "tinypkg/calc.py" in (work / "r.html").read_text(encoding="utf-8")


def _mutmut(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """mutmut as its users type it: the console script, no wrapper, no environment of ours."""
    script = Path(sys.executable).with_name("mutmut")
    return subprocess.run(
        [str(script), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="mutmut's change detection shells out to git")
@pytest.mark.e2e
def test_a_plain_mutmut_run_exports_what_mutmut_reports_and_the_gate_reads_it(tmp_path: Path) -> None:
    work = _fixture(tmp_path)
    done = _mutmut(work, "run")
    assert done.returncode == 0, done.stdout + done.stderr
    exported = run(work, "mutation_run.py", "export", "--out", "plain.json")
    assert exported.returncode == 0, exported.stdout + exported.stderr
    data = json.loads((work / "plain.json").read_text(encoding="utf-8"))
    # every mutant, with the verdict mutmut itself reports ...
    listed = _mutmut(work, "results", "--all", "true")
    assert listed.returncode == 0, listed.stderr
    reported = dict(line.strip().split(": ", 1) for line in listed.stdout.splitlines() if line.strip())
    assert {m["name"]: m["status"] for m in data["mutants"]} == reported
    assert {"killed", "survived"} <= set(reported.values())
    # ... and the diff `mutmut show` prints
    survivor = next(m for m in data["mutants"] if m["status"] == "survived")
    shown = _mutmut(work, "show", survivor["name"])
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == f"# {survivor['name']}: survived"
    assert shown.stdout.strip().split("\n", 1)[1].strip() == survivor["diff"].strip()
    # the gate takes it as a whole run: judged, not refused as partial input (exit 2)
    assert (data["scope"], data["shard"]) == ({"kind": "full"}, None)
    (work / "mutation_config.toml").write_text("[gate]\nmin_score = 0\n", encoding="utf-8")
    gated = run(work, "mutation_gate.py", "--results", "plain.json")
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert f"mutmut: {len(reported)} mutants" in gated.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="mutmut's change detection shells out to git")
@pytest.mark.e2e
def test_a_kill_is_reused_only_while_the_tests_that_reach_it_are_unchanged(tmp_path: Path) -> None:
    work = _fixture(tmp_path)

    def judged(*args: str) -> tuple[dict[str, str], str]:
        out = f"r{len(list(work.glob('r*.json')))}.json"
        done = run(work, "mutation_run.py", "run", "--out", out, *args)
        assert done.returncode == 0, done.stdout + done.stderr
        data = json.loads((work / out).read_text(encoding="utf-8"))
        return {m["name"]: m["status"] for m in data["mutants"]}, done.stdout

    first, _ = judged()
    killed = sorted(n for n, status in first.items() if status == "killed")
    assert killed
    assert len(killed) < len(first)
    again, said = judged("--reuse", "r0.json")
    assert again == first
    assert (
        f"mutmut: {len(killed)} verdict(s) reused from r0.json; {len(first) - len(killed)} to judge" in said
    )

    # A weaker test: mutmut's own cache would keep the kills it no longer makes (the functions did not
    # change); a run here judges them again, with or without --reuse.
    checks = work / "checks" / "check_calc.py"
    strong = checks.read_text(encoding="utf-8")
    checks.write_text(strong.replace("assert counter.bump() >= 1", "counter.bump()"), encoding="utf-8")
    weaker, _ = judged()
    assert any(first[n] == "killed" and weaker[n] == "survived" for n in first)
    reused, said = judged("--reuse", "r0.json")
    assert reused == weaker
    assert "mutmut: 0 verdict(s) reused" in said


@pytest.mark.skipif(shutil.which("git") is None, reason="a scoped run reads the change from git")
@pytest.mark.e2e
def test_a_new_test_rejudges_only_what_it_reaches_and_a_changed_tests_new_reach_joins_mutmuts_record(
    tmp_path: Path,
) -> None:
    # mutmut's stats of the last run have never seen the new test: a stats run of it alone says what it
    # reaches (the counter; mutmut puts no trampoline on a property), where its file's others reach clamp.
    work = _fixture(tmp_path)
    (work / "checks").rename(work / "tests")
    (work / "tests" / "check_calc.py").rename(work / "tests" / "test_calc.py")
    config = (work / "pyproject.toml").read_text(encoding="utf-8").replace('"checks"', '"tests"')
    (work / "pyproject.toml").write_text(config.replace('"check_*.py"', '"test_*.py"'), encoding="utf-8")

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=work, check=True, capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "fixture")
    whole = run(work, "mutation_run.py", "run", "--out", "whole.json")
    assert whole.returncode == 0, whole.stdout + whole.stderr
    with (work / "tests" / "test_calc.py").open("a", encoding="utf-8") as tests:
        tests.write("\n\ndef test_doubled() -> None:\n    counter = Counter()\n    counter.bump(2)\n")
        tests.write("    assert counter.doubled == 4\n")
    scoped = run(work, "mutation_run.py", "run", "--changed-since", "HEAD", "--out", "scoped.json")
    assert scoped.returncode in (0, 1), scoped.stdout + scoped.stderr
    said = "mutmut: tests changed (tests/test_calc.py::test_doubled): 2 function(s) they reach"
    assert said in scoped.stdout
    judged = json.loads((work / "scoped.json").read_text(encoding="utf-8"))["mutants"]
    functions = {m["name"].split("__mutmut_")[0] for m in judged}
    assert functions == {"tinypkg.calc.xǁCounterǁ__init__", "tinypkg.calc.xǁCounterǁbump"}

    # A changed test keeps its id, so mutmut runs no stats of it again: what it reaches now (bump, beside
    # clamp) joins mutmut's record, and bump's mutants run it.
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a new test")
    calc = (work / "tests" / "test_calc.py").read_text(encoding="utf-8")
    widened = "    assert clamp(11, 0, 10) == 10\n    assert Counter().bump(3) == 3\n"
    (work / "tests" / "test_calc.py").write_text(
        calc.replace("    assert clamp(11, 0, 10) == 10\n", widened), encoding="utf-8"
    )
    changed = run(work, "mutation_run.py", "run", "--changed-since", "HEAD", "--out", "changed.json")
    assert changed.returncode in (0, 1), changed.stdout + changed.stderr
    record = json.loads((work / "mutants" / "mutmut-stats.json").read_text(encoding="utf-8"))
    bump = "tinypkg.calc.xǁCounterǁbump"
    assert "tests/test_calc.py::test_clamp" in record["tests_by_mangled_function_name"][bump]
    judged = json.loads((work / "changed.json").read_text(encoding="utf-8"))["mutants"]
    assert {m["name"].split("__mutmut_")[0] for m in judged} >= {"tinypkg.calc.x_clamp", bump}

"""The verdict rules, against runs a stand-in for pytest reports: a catalogue mutant is killed only by its
``killed_by`` tests (killed by others alone: wrong-reason; every one skipped: no-tests); a generated one
by any test, and where the woven build's map holds it, only the tests that reach it run (with those whose
processes the map cannot see)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from guard_mutation import config
from guard_mutation.engines.edits import edit, judge
from guard_mutation.engines.edits.context import Context, Plan
from guard_mutation.engines.edits.outcomes import TestRun
from guard_mutation.engines.edits.processes import Runner
from guard_mutation.model import INVALID, KILLED, NO_TESTS, SURVIVED, TIMEOUT, WRONG_REASON

FIXTURE = Path(__file__).resolve().parent / "fixture_project"
T = "tests/check_core.py::"
NAMED = edit.make("pkg/m.py", "f", ("x = 1\n", "x = 2\n"), "c", "catalogue", killed_by=(T + "test_a",))
BOTH = edit.make(
    "pkg/m.py", "f", ("x = 1\n", "x = 2\n"), "c", "catalogue", killed_by=(T + "test_a", T + "test_b")
)
GENERATED = edit.make("pkg/m.pyx", "f", ("x = 1\n", "pass\n"), "g", "delete-statement")


def run(returncode: int | None = 1, /, **outcomes: str) -> TestRun:
    made = TestRun(returncode, "")
    for name, outcome in outcomes.items():
        made.order.append(T + name)
        made.outcomes[T + name] = outcome
    return made


class Pytest:
    """A stand-in for the runs a judge makes: each ``tests`` list answered from ``answers`` in turn."""

    def __init__(self, *answers: TestRun) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[tuple[str, ...], bool]] = []

    def __call__(self, tests: Sequence[str], exitfirst: bool, plan: Plan) -> TestRun:
        self.asked.append((tuple(tests), exitfirst))
        return self.answers.pop(0)


@pytest.fixture
def ctx(tmp_path: Path) -> Context:
    return Context(config.read(FIXTURE / "mutation_config.toml"), tmp_path, Runner(), "simulated", False)


@pytest.mark.parametrize(
    ("reported", "others", "verdict"),
    [
        ({"test_a": "failed", "test_b": "passed"}, [], KILLED),
        ({"test_a[1]": "passed", "test_a[2]": "failed"}, [], KILLED),  # an entry covers its cases
        ({"test_a": "passed"}, [T + "test_z"], WRONG_REASON),
        ({"test_a": "passed"}, [], SURVIVED),
        ({"test_a": "skipped"}, [], NO_TESTS),
    ],
)
def test_a_catalogue_mutant_is_killed_only_by_its_own_tests(
    reported: dict[str, str], others: list[str], verdict: str
) -> None:
    outcome = judge.classify(NAMED, run(**reported), others)
    assert outcome.verdict == verdict
    assert outcome.killers == tuple(t for t, o in run(**reported).outcomes.items() if o == "failed") + tuple(
        others
    )


@pytest.mark.parametrize(
    ("reported", "verdict"),
    [
        ({"test_a": "failed", "test_b": "failed"}, KILLED),
        ({"test_a": "failed", "test_b": "skipped"}, KILLED),  # skipped on this runtime: not asked to fail
        ({"test_a": "failed", "test_b": "passed"}, WRONG_REASON),
    ],
)
def test_a_catalogue_mutant_is_killed_only_when_every_test_it_names_fails(
    reported: dict[str, str], verdict: str
) -> None:
    assert judge.classify(BOTH, run(**reported)).verdict == verdict


def test_when_its_tests_pass_the_whole_suite_tells_survived_from_wrong_reason(ctx: Context) -> None:
    green: list[str] = []
    pytest_ = Pytest(run(0, test_a="passed"), run(1, test_a="passed", test_z="failed"))
    outcome = judge._catalogue(ctx, NAMED, False, pytest_, green.append)
    assert (outcome.verdict, outcome.killers) == (WRONG_REASON, (T + "test_z",))
    assert pytest_.asked == [((T + "test_a",), False), (("tests",), True)]
    assert green == ["python"]  # the unmutated suite must be green before a verdict rests on it


def test_a_kill_by_its_own_tests_runs_nothing_more(ctx: Context) -> None:
    pytest_ = Pytest(run(1, test_a="failed"))
    assert judge._catalogue(ctx, NAMED, False, pytest_, pytest.fail).verdict == KILLED
    assert len(pytest_.asked) == 1


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [(TestRun(None, ""), TIMEOUT), (TestRun(4, "ERROR: usage"), INVALID), (run(2), INVALID)],
)
def test_a_run_that_judged_nothing_is_a_timeout_or_invalid(
    ctx: Context, answer: TestRun, verdict: str
) -> None:
    if verdict == INVALID and answer.returncode == 2:
        answer.collect_errors.append("tests/check_core.py: ImportError")
    assert judge._catalogue(ctx, NAMED, False, Pytest(answer), pytest.fail).verdict == verdict


def test_a_generated_mutant_runs_the_whole_suite_and_any_failure_kills(ctx: Context) -> None:
    ctx.files = ("tests/quick.py", "tests/slow.py")  # the files, the quickest first
    pytest_ = Pytest(run(1, test_z="failed"))
    outcome = judge._generated(ctx, GENERATED, False, pytest_)
    assert (outcome.verdict, outcome.killers) == (KILLED, (T + "test_z",))
    assert pytest_.asked == [(("tests/quick.py", "tests/slow.py"), True)]
    assert judge._generated(ctx, GENERATED, False, Pytest(run(0, test_z="passed"))).verdict == SURVIVED


def test_a_woven_mutant_runs_the_tests_that_reach_it_and_those_the_map_is_blind_to(ctx: Context) -> None:
    ctx.switches = {"g": ("pkg.m", 3)}
    ctx.order = (T + "test_a", T + "test_spawns", T + "test_b", T + "test_c")
    ctx.hits = {T + "test_a": ["pkg.m:1"], T + "test_b": ["pkg.m:3", "pkg.m:1"], T + "test_c": []}
    ctx.blind = (T + "test_spawns",)
    pytest_ = Pytest(run(0, test_spawns="passed", test_b="passed"))
    assert judge._generated(ctx, GENERATED, False, pytest_).verdict == SURVIVED
    assert pytest_.asked == [((T + "test_spawns", T + "test_b"), True)]
    ctx.hits[T + "test_b"] = []
    assert judge._generated(ctx, GENERATED, False, Pytest(run(0, test_spawns="passed"))).verdict == NO_TESTS
    ctx.blind = ()
    assert judge._generated(ctx, GENERATED, False, Pytest()).verdict == NO_TESTS  # nothing to run
    full = Pytest(run(0, test_b="passed"))
    assert judge._generated(ctx, GENERATED, True, full).verdict == SURVIVED
    assert full.asked == [(("tests",), False)]  # under full: the whole suite, to its end

"""What every test folder shares: pytest's own pytester, the mutation profile, and the end-to-end split.

``tests/behaviour`` holds guard_lib's behaviour tests (both implementations); ``tests/docs`` runs the
blocks of README.md and docs/*.md; ``tests/tooling`` tests the mutation tooling. Plain ``pytest`` runs all
of them but the tooling's end-to-end tests (marker ``e2e``: an engine run end to end, in a copy of a
project), which ``--e2e`` adds; ``--e2e -m e2e`` runs those alone.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import Phase, settings

import guard_lib

pytest_plugins = ["pytester"]

# Chosen by the mutation engines (--hypothesis-profile=mutation): a mutant needs a failing example, not the
# smallest one, and shrinking a mutant's failure can cost many times the test itself. No example database:
# a verdict rests on the tests and their seed alone, never on examples an earlier mutant's run left on disk.
settings.register_profile("mutation", database=None, phases=[Phase.explicit, Phase.generate, Phase.target])

E2E = "e2e"


def pytest_configure(config: pytest.Config) -> None:
    # mutmut mutates the Python reference; tests served by the compiled core would leave every one of its
    # mutants "no tests". guard_lib takes the reference in mutmut's copy unless GUARD_LIB_IMPL says otherwise.
    if "MUTANT_UNDER_TEST" in os.environ and guard_lib.IMPLEMENTATION != "python":
        pytest.exit(
            "mutmut mutates guard_lib's Python reference, but these tests would run the compiled core "
            f"({guard_lib.implementation.REASON}); run mutmut with GUARD_LIB_IMPL unset (docs/mutmut.md)",
            returncode=pytest.ExitCode.TESTS_FAILED,
        )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--e2e",
        action="store_true",
        help="also run the mutation tooling's end-to-end tests (marker e2e: whole engine runs, minutes)",
    )


OTHER_IMPLEMENTATION = "test_the_behaviour_suite_passes_on_the_other_implementation"


def _other_implementation(session: pytest.Session) -> Any:
    """tests/test_both_implementations.py, as this session imported it, where it holds that test."""
    for item in session.items:
        module = item.getparent(pytest.Module)
        if item.name == OTHER_IMPLEMENTATION and module is not None:
            return module.obj
    return None


def pytest_runtestloop(session: pytest.Session) -> None:
    # The other implementation's run starts as the tests begin, on a second core, rather than when its test
    # comes last. Only in pytest's own loop: a plug-in that runs the tests its own way first (the harness's
    # warm server, an xdist worker) leaves that test to start the run itself.
    config = session.config
    if config.option.collectonly or session.testsfailed or hasattr(config, "workerinput"):
        return
    module = _other_implementation(session)
    if module is not None:
        module.start_other_run(config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    module = _other_implementation(session)
    if module is not None:
        module.stop_other_run(session.config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--e2e"):
        return
    slow = [item for item in items if item.get_closest_marker(E2E)]
    if slow:
        # Deselected rather than skipped: a plain run reports what it ran, not minutes it chose not to.
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker(E2E)]

"""The compiled core's lines mapped to the tests that reach them, from a line-traced build in a copy.

(That the build is a copy's is ``compiled_coverage``'s own construction; the tooling's end-to-end tests
run two at a time, and another may rebuild the checkout's core meanwhile, so its files are not compared.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mutation_sweep import compiled_coverage

ROOT = Path(__file__).resolve().parents[2]
CORE = "guard_lib/_core.pyx"


def _line(text: str) -> int:
    lines = (ROOT / CORE).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.strip() == text)


@pytest.mark.e2e
def test_each_line_of_the_core_names_the_tests_that_run_it() -> None:
    mapping = compiled_coverage.core_map(ROOT, "guard_lib", ["tests/behaviour", "-m", "not cuda"])
    lines = mapping.lines[CORE]
    # the refusal of a device never entered: reached by the test of exactly that
    refusal = lines[_line("if (self._runtime is None) if unread else not self._made:") + 1]
    never_entered = "test_reliability.py::test_a_device_never_entered_has_no_devices_to_read"
    assert f"tests/behaviour/{never_entered}" in refusal
    assert len(refusal) < 40  # a few tests, not the suite
    # Python names a type by module only from 3.13: before, no test can run the line that does
    qualified = lines.get(_line('return f"{cls.__module__}.{cls.__qualname__}"'), ())
    assert bool(qualified) == (sys.version_info >= (3, 13))
    assert mapping.suite_order  # the test files, quickest first

"""The fixture project's own tests; the harness runs them against each mutant."""

from __future__ import annotations

import os

import pytest
from counterpkg import Counter, add, clamp

ON_CUDA = os.environ.get("GUARD_LIB_TEST_RUNTIME") == "cuda"


def test_add() -> None:
    assert add(2, 3) == 5, "add(2, 3) must be 5"


def test_clamp_below() -> None:
    assert clamp(-4, 0, 10) == 0


def test_clamp_above() -> None:
    assert clamp(14, 0, 10) == 10


def test_clamp_inside() -> None:
    assert clamp(5, 0, 10) == 5


@pytest.mark.parametrize("step", [1, 2])
def test_bump(step: int) -> None:
    counter = Counter()
    assert counter.bump(step) == step
    assert counter.bump(step) == 2 * step


@pytest.mark.skipif(not ON_CUDA, reason="runs on the cuda runtime only")
def test_reset_on_cuda() -> None:
    counter = Counter()
    counter.bump()
    counter.reset()
    assert counter.count == 0


@pytest.mark.parametrize("op", ["add", "clamp"])
def test_each_op(op: str) -> None:
    # CHECK_CORE_RAN_LOG names a file that records which cases ran, in order.
    log = os.environ.get("CHECK_CORE_RAN_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as ran:
            ran.write(op + "\n")
    if op == "add":
        assert add(2, 0) == 2  # holds for a - b as well: only test_add must catch that mutant
    else:
        assert clamp(11, 0, 10) == 10

"""Slower is observable: a fast path a borrow takes when it can, shown by what it does not call. Counted,
never timed. (The compiled core's calls and allocations: ``test_borrow_cost.py``.)"""

from __future__ import annotations

from typing import Any

import pytest

import guard_lib
from guard_lib import _shared, device_guard
from guard_lib.simulated import SimulatedRuntime

pytestmark = pytest.mark.skipif(
    guard_lib.IMPLEMENTATION != "python", reason="counts the reference's own calls"
)


class _Index:
    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


def test_a_plain_int_index_is_taken_as_it_is_and_only_another_is_converted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    converted: list[object] = []
    real = _shared.as_int

    def counting(index: object) -> Any:
        converted.append(index)
        return real(index)

    monkeypatch.setattr(device_guard, "as_int", counting)
    rt = SimulatedRuntime(device_count=2)
    with guard_lib.device(1, runtime=rt):
        assert rt.current_device == 1
    assert converted == []
    other = _Index(1)
    with guard_lib.device(other, runtime=rt):  # type: ignore[arg-type]
        assert rt.current_device == 1
    assert converted == [other]

"""Device indices are compared by value: past 256, equal ints are not the same object.

CPython keeps one object for each small int (-5 to 256), so an identity test (``is``) passes wherever
``==`` does for the indices most machines have. A runtime that answers with fresh int objects, on a
machine with 300 devices, tells the two apart.
"""

from __future__ import annotations

from guard_lib import DeviceGuard, Err, device
from guard_lib.cuda_errors import LAUNCH_FAILURE
from guard_lib.runtime import SimulatedRuntime
from guard_lib.testing import assert_leaves_device

HIGH = 299


def _fresh(value: int) -> int:
    return int(str(value))  # equal, never the same object as another 299


class FreshInts(SimulatedRuntime):
    """Answers each read with a new int object."""

    def get_device(self) -> tuple[int, int | None]:
        code, index = super().get_device()
        return code, None if index is None else _fresh(index)


def _on_high() -> FreshInts:
    rt = FreshInts(device_count=HIGH + 1)
    rt.set_device(_fresh(HIGH))
    rt.calls.clear()
    return rt


def test_already_current_above_256_selects_and_restores_nothing() -> None:
    rt = _on_high()
    with DeviceGuard.create(_fresh(HIGH), runtime=rt).unwrap() as guard:
        assert guard.current_device == HIGH
    with device(_fresh(HIGH), runtime=rt):
        pass
    assert [op for op, _ in rt.calls] == ["get_device", "get_device"]
    assert rt.current_device == HIGH


def test_a_refusal_that_did_not_move_a_thread_above_256_puts_nothing_back() -> None:
    rt = _on_high()
    rt.fail_next("set_device", LAUNCH_FAILURE)
    assert DeviceGuard.create(_fresh(HIGH - 1), runtime=rt).is_err()
    # the failed switch, then one read to see where the thread is: no restore of a thread never moved
    assert [call for call in rt.calls if call[0] == "set_device"] == [("set_device", (HIGH - 1,))]
    assert rt.current_device == HIGH


def test_assert_leaves_device_compares_values_above_256() -> None:
    rt = _on_high()
    with assert_leaves_device(rt):
        pass


def test_an_index_past_a_c_long_long_is_asked_for_as_it_is_on_either_path(sim: SimulatedRuntime) -> None:
    # Past 2**63 the index has no C value: the core must not hand the C path what the failed conversion left.
    huge = 2**64 + 1
    with assert_leaves_device(sim):
        made = DeviceGuard.create(huge, runtime=sim)
    assert isinstance(made, Err)
    assert f"cannot select CUDA device {huge}" in str(made.error)
    assert ("set_device", (huge,)) in sim.calls
    assert all(call[1] != (-1,) for call in sim.calls)

"""Helpers shared by guard_lib's tests."""

from __future__ import annotations

from guard_lib import DeviceGuard, Err, GuardError, Result
from guard_lib.runtime import DeviceRuntime, SimulatedRuntime


def current(runtime: DeviceRuntime) -> int:
    """The calling thread's device. Read from the simulated runtime without logging a call."""
    if isinstance(runtime, SimulatedRuntime):
        return runtime.current_device
    code, index = runtime.get_device()
    assert not code, runtime.error_name(code)
    return int(index)


def select(runtime: DeviceRuntime, index: int) -> None:
    """Select a device behind the guard's back, as another backend would."""
    (code,) = runtime.set_device(index)
    assert not code, runtime.error_name(code)


def device_count(runtime: DeviceRuntime) -> int:
    code, count = runtime.get_device_count()
    assert not code, runtime.error_name(code)
    return int(count)


def clear_calls(runtime: DeviceRuntime) -> None:
    if isinstance(runtime, SimulatedRuntime):
        runtime.calls.clear()


def refusal(result: Result[DeviceGuard]) -> GuardError:
    """The error of a result that must be an Err."""
    assert isinstance(result, Err), f"expected a refusal, got {result!r}"
    return result.error

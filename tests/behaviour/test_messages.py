"""Every refusal, error and warning says exactly what was wrong, where, and about which device.

The texts are pinned whole: a message a backend's user reads in a log is part of the interface.
"""

from __future__ import annotations

import copy
import gc
import logging
import pickle
import re
import threading

import pytest

from guard_lib import (
    CallerStreamGuard,
    DeviceGuard,
    GuardError,
    UncheckedResultWarning,
    device,
    stream_handle,
)
from guard_lib.cuda_errors import INSUFFICIENT_DRIVER, INVALID_DEVICE, LAUNCH_FAILURE, NO_DEVICE
from guard_lib.runtime import CudaRuntime, SimulatedRuntime

from .support import refusal


def exactly(text: str) -> str:
    return f"^{re.escape(text)}$"


def test_refusals_name_the_device_and_the_reason(sim: SimulatedRuntime) -> None:
    cases = {
        -3: "cannot select CUDA device -3: a device index is >= 0",
        8: "cannot select CUDA device 8: cudaErrorInvalidDevice",
        "2": "cannot select CUDA device '2': a device index is an int, not str",
        2.0: "cannot select CUDA device 2.0: a device index is an int, not float",
        True: "cannot select CUDA device True: a device index is an int, not bool",
    }
    for index, message in cases.items():
        assert str(refusal(DeviceGuard.create(index, runtime=sim))) == message  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (
            NO_DEVICE,
            "cannot read the current CUDA device: no CUDA driver or device was found (cudaErrorNoDevice)",
        ),
        (
            INSUFFICIENT_DRIVER,
            "cannot read the current CUDA device: no CUDA driver or device was found "
            "(cudaErrorInsufficientDriver)",
        ),
        (LAUNCH_FAILURE, "cannot read the current CUDA device: cudaErrorLaunchFailure"),
    ],
)
def test_unreadable_device_says_why(sim: SimulatedRuntime, code: int, message: str) -> None:
    sim.fail_next("get_device", code)
    error = refusal(DeviceGuard.create(1, runtime=sim))
    assert str(error) == message
    assert error.device_index == 1


def test_failed_switch_names_the_cuda_error(sim: SimulatedRuntime) -> None:
    sim.fail_next("set_device", LAUNCH_FAILURE)
    error = refusal(DeviceGuard.create(3, runtime=sim))
    assert str(error) == "cannot select CUDA device 3: cudaErrorLaunchFailure"
    assert (error.device_index, error.code, error.code_name) == (3, LAUNCH_FAILURE, "cudaErrorLaunchFailure")


def test_failed_restore_log_line(sim: SimulatedRuntime, caplog: pytest.LogCaptureFixture) -> None:
    guard = DeviceGuard.create(2, runtime=sim).unwrap()
    sim.fail_next("set_device", LAUNCH_FAILURE)
    with caplog.at_level(logging.ERROR, logger="guard_lib"):
        guard.close()
    assert caplog.messages == [
        "could not restore CUDA device 0 after selecting device 2: cudaErrorLaunchFailure; "
        "this thread may still be on device 2"
    ]


def test_misuse_errors_name_the_device(sim: SimulatedRuntime) -> None:
    guard = DeviceGuard.create(2, runtime=sim).unwrap()
    raised: list[GuardError] = []

    def close_elsewhere() -> None:
        with pytest.raises(GuardError) as info:
            guard.close()
        raised.append(info.value)

    worker = threading.Thread(target=close_elsewhere)
    worker.start()
    worker.join()
    assert str(raised[0]) == (
        "a DeviceGuard for CUDA device 2 belongs to the thread that created it; "
        "CUDA's current device is per thread, so it cannot be restored from another"
    )
    assert raised[0].device_index == 2
    guard.close()
    with pytest.raises(
        GuardError, match=exactly("cannot take over a DeviceGuard for CUDA device 2: it was closed or taken")
    ) as taken:
        guard.take()
    assert taken.value.device_index == 2
    borrow = device(3, runtime=sim)
    with (
        borrow,
        pytest.raises(
            GuardError, match=exactly("guard_lib.device(3) is already entered; it is not reentrant")
        ) as entered,
    ):
        borrow.__enter__()
    assert entered.value.device_index == 3


def test_copy_and_pickle_errors_name_the_type(sim: SimulatedRuntime) -> None:
    with DeviceGuard.create(1, runtime=sim).unwrap() as guard, device(1, runtime=sim) as borrow:
        for held, name in ((guard, "DeviceGuard"), (borrow, "device")):
            copied = f"a {name} cannot be copied: DeviceGuard.take() hands a borrow over"
            with pytest.raises(TypeError, match=exactly(copied)):
                copy.copy(held)
            with pytest.raises(TypeError, match=exactly(copied)):
                copy.deepcopy(held)
            pickled = f"a {name} cannot be pickled: it holds a thread's device selection"
            with pytest.raises(TypeError, match=exactly(pickled)):
                pickle.dumps(held)


def test_caller_stream_guard_errors() -> None:
    guard = CallerStreamGuard("s")
    for duplicate in (copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match=exactly("a CallerStreamGuard cannot be copied")):
            duplicate(guard)
    with pytest.raises(TypeError, match=exactly("a CallerStreamGuard cannot be pickled")):
        pickle.dumps(guard)
    with (
        guard,
        pytest.raises(
            GuardError, match=exactly("this CallerStreamGuard is already active; it is not reentrant")
        ) as reentered,
    ):
        guard.__enter__()
    with pytest.raises(
        GuardError, match=exactly("this CallerStreamGuard was exited without being entered")
    ) as unentered:
        guard.__exit__(None, None, None)
    # a stream guard names no device
    assert reentered.value.device_index is None
    assert unentered.value.device_index is None
    with pytest.raises(TypeError, match=exactly("list is not a CUDA stream: it has no __cuda_stream__")):
        stream_handle([])


def test_simulated_runtime_errors() -> None:
    sim = SimulatedRuntime()
    with pytest.raises(
        ValueError,
        match=exactly(
            "fail_next: unknown op 'launch'; expected one of get_device, set_device, get_device_count"
        ),
    ):
        sim.fail_next("launch", 1)
    with pytest.raises(
        ValueError, match=exactly("fail_next: code must be a CUDA error code, not cudaSuccess (0)")
    ):
        sim.fail_next("set_device", 0)
    with pytest.raises(
        ValueError, match=exactly("fail_next: only set_device can move the thread (moves_to)")
    ):
        sim.fail_next("get_device", 1, moves_to=1)
    with pytest.raises(ValueError, match=exactly("device_count must be an int >= 0, got -1")):
        SimulatedRuntime(device_count=-1)


def test_cuda_runtime_names_codes_guard_lib_has_no_table_for() -> None:
    assert CudaRuntime().error_name(2) == "cudaErrorMemoryAllocation"
    assert CudaRuntime().error_name(INVALID_DEVICE) == "cudaErrorInvalidDevice"


def test_dropped_guard_warning_points_at_the_drop(sim: SimulatedRuntime) -> None:
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    with pytest.warns(ResourceWarning) as record:
        del guard
    [warning] = record.list
    assert str(warning.message) == (
        "DeviceGuard for CUDA device 1 was garbage-collected without close(); device 0 was never restored"
    )
    assert warning.filename == __file__
    assert isinstance(warning.source, DeviceGuard)
    warning.source.close()
    assert sim.current_device == 0


def test_unchecked_result_warning_points_at_the_drop(sim: SimulatedRuntime) -> None:
    with pytest.warns(UncheckedResultWarning) as record:
        DeviceGuard.create(-1, runtime=sim)
        gc.collect()
    [warning] = record.list
    assert str(warning.message) == (
        "Err(GuardError('cannot select CUDA device -1: a device index is >= 0')) "
        "was dropped without being checked"
    )
    assert warning.filename == __file__

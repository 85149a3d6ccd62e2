"""DeviceGuard and guard_lib.device: each behaviour of the borrow, pinned."""

from __future__ import annotations

import copy
import gc
import logging
import pickle
import threading
import warnings

import numpy as np
import pytest

from guard_lib import DeviceGuard, Err, GuardError, GuardTypeError, Ok, device
from guard_lib.cuda_errors import INVALID_DEVICE, LAUNCH_FAILURE, NO_DEVICE
from guard_lib.runtime import DeviceRuntime, SimulatedRuntime, use_runtime

from .conftest import SIMULATED_DEVICES
from .support import clear_calls, current, device_count, refusal, select

EXCEPTIONS = [ValueError("body failed"), KeyboardInterrupt(), SystemExit(3)]


# a. A selection that needs a switch restores the caller's device.


@pytest.mark.multi_gpu
def test_switch_selects_then_close_restores(rt: DeviceRuntime) -> None:
    guard = DeviceGuard.create(1, runtime=rt).unwrap()
    assert (guard.original_device, guard.current_device) == (0, 1)
    assert current(rt) == 1
    guard.close()
    assert current(rt) == 0


@pytest.mark.multi_gpu
def test_switch_restores_on_with_exit(rt: DeviceRuntime) -> None:
    with DeviceGuard.create(1, runtime=rt).unwrap() as guard:
        assert current(rt) == 1
        assert guard.current_device == 1
    assert current(rt) == 0


@pytest.mark.multi_gpu
@pytest.mark.parametrize("exc", EXCEPTIONS, ids=lambda e: type(e).__name__)
def test_switch_restores_when_body_raises(rt: DeviceRuntime, exc: BaseException) -> None:
    with pytest.raises(type(exc)), DeviceGuard.create(1, runtime=rt).unwrap():
        raise exc
    assert current(rt) == 0


@pytest.mark.multi_gpu
@pytest.mark.parametrize("exc", EXCEPTIONS, ids=lambda e: type(e).__name__)
def test_device_context_restores_when_body_raises(rt: DeviceRuntime, exc: BaseException) -> None:
    with pytest.raises(type(exc)), device(1, runtime=rt) as guard:
        assert current(rt) == 1
        assert guard.original_device == 0
        raise exc
    assert current(rt) == 0


def test_switch_costs_three_calls(sim: SimulatedRuntime) -> None:
    DeviceGuard.create(3, runtime=sim).unwrap().close()
    assert sim.calls == [("get_device", ()), ("set_device", (3,)), ("set_device", (0,))]


# b. Selecting the device that is already current changes nothing.


def test_already_current_makes_one_get_call_and_no_set(sim: SimulatedRuntime) -> None:
    select(sim, 2)
    sim.calls.clear()
    with DeviceGuard.create(2, runtime=sim).unwrap() as guard:
        assert (guard.original_device, guard.current_device) == (2, 2)
    assert sim.calls == [("get_device", ())]
    assert current(sim) == 2


def test_already_current_leaves_device(rt: DeviceRuntime) -> None:
    with device(0, runtime=rt) as guard:
        assert guard.original_device == guard.current_device == 0
    assert current(rt) == 0


# c. Refused indexes: negative, and anything that is not an integer.


@pytest.mark.parametrize("index", [-1, -7])
def test_negative_index_refused_before_any_cuda_call(sim: SimulatedRuntime, index: int) -> None:
    select(sim, 1)
    sim.calls.clear()
    error = refusal(DeviceGuard.create(index, runtime=sim))
    assert sim.calls == []
    assert current(sim) == 1
    assert type(error) is GuardError
    assert (error.device_index, error.code, error.code_name) == (index, None, None)
    assert f"device {index}" in str(error)


def test_negative_index_leaves_device(rt: DeviceRuntime) -> None:
    assert DeviceGuard.create(-1, runtime=rt).is_err()
    assert current(rt) == 0


@pytest.mark.parametrize("index", [True, False, 1.0, "1", None, [1]], ids=repr)
def test_non_integer_refused_as_type_error(sim: SimulatedRuntime, index: object) -> None:
    error = refusal(DeviceGuard.create(index, runtime=sim))  # type: ignore[arg-type]
    assert sim.calls == []
    assert isinstance(error, GuardTypeError)
    assert isinstance(error, TypeError)
    assert error.code is None
    assert repr(index) in str(error)
    assert type(index).__name__ in str(error)


@pytest.mark.parametrize("index", [np.int64(3), np.uint8(3), np.int32(3)], ids=repr)
def test_index_protocol_is_used_as_plain_int(sim: SimulatedRuntime, index: object) -> None:
    with DeviceGuard.create(index, runtime=sim).unwrap() as guard:  # type: ignore[arg-type]
        assert type(guard.current_device) is int
        assert guard.current_device == 3
        assert sim.calls[-1] == ("set_device", (3,))
        assert type(sim.calls[-1][1][0]) is int


def test_negative_index_protocol_value_refused(sim: SimulatedRuntime) -> None:
    error = refusal(DeviceGuard.create(np.int64(-2), runtime=sim))
    assert error.device_index == -2
    assert sim.calls == []


# d. An absent device is refused with the CUDA error's name.


def test_absent_device_refused_with_cuda_error_name(rt: DeviceRuntime) -> None:
    absent = device_count(rt)
    result = DeviceGuard.create(absent, runtime=rt)
    assert result.is_err()
    error = refusal(result)
    assert error.code == INVALID_DEVICE
    assert error.code_name == "cudaErrorInvalidDevice"
    assert error.device_index == absent
    assert f"device {absent}" in str(error)
    assert "cudaErrorInvalidDevice" in str(error)
    assert current(rt) == 0


def test_refusal_leaves_no_error_pending(rt: DeviceRuntime) -> None:
    assert rt.peek_at_last_error() == (0,)
    assert DeviceGuard.create(device_count(rt), runtime=rt).is_err()
    assert rt.peek_at_last_error() == (0,)


def test_device_context_raises_the_refusal(rt: DeviceRuntime) -> None:
    absent = device_count(rt)
    with pytest.raises(GuardError, match=f"device {absent}.*cudaErrorInvalidDevice") as info:
        with device(absent, runtime=rt):
            pytest.fail("the body of a refused selection must not run")
    assert info.value.code_name == "cudaErrorInvalidDevice"
    assert current(rt) == 0


def test_unreadable_current_device_is_an_err(sim: SimulatedRuntime) -> None:
    sim.fail_next("get_device", NO_DEVICE)
    error = refusal(DeviceGuard.create(1, runtime=sim))
    assert error.code == NO_DEVICE
    assert error.code_name == "cudaErrorNoDevice"
    assert "no CUDA driver or device was found" in str(error)
    assert sim.calls == [("get_device", ())]


# e. The restore is keyed on the request, not on the switch's success.


def test_failed_switch_that_moved_the_thread_is_put_back(sim: SimulatedRuntime) -> None:
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=2)
    result = DeviceGuard.create(2, runtime=sim)
    assert current(sim) == 0
    assert sim.calls == [("get_device", ()), ("set_device", (2,)), ("get_device", ()), ("set_device", (0,))]
    error = refusal(result)
    assert (error.code, error.code_name) == (LAUNCH_FAILURE, "cudaErrorLaunchFailure")
    assert sim.peek_at_last_error() == (0,)


def test_device_context_puts_back_a_failed_switch_that_moved(sim: SimulatedRuntime) -> None:
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=3)
    with pytest.raises(GuardError, match="cudaErrorLaunchFailure"), device(3, runtime=sim):
        pass
    assert current(sim) == 0


class _FailsSecondRead(SimulatedRuntime):
    """A runtime whose second cudaGetDevice, the read after a failed switch, fails and answers an index
    that means nothing, yet looks like the caller's device."""

    __slots__ = ("_reads",)

    def __init__(self) -> None:
        super().__init__(device_count=4)
        self._reads = 0

    def get_device(self) -> tuple[int, int | None]:
        self._reads += 1
        answer = super().get_device()
        return (LAUNCH_FAILURE, 0) if self._reads == 2 else answer


def test_failed_switch_is_put_back_when_the_device_cannot_be_read() -> None:
    sim = _FailsSecondRead()
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=3)
    assert DeviceGuard.create(3, runtime=sim).is_err()
    assert current(sim) == 0
    assert sim.calls[-1] == ("set_device", (0,))


# Restoring must not create a CUDA context on a device that had none (cudaSetDevice creates one, CUDA 12+).


def test_refused_selection_creates_no_context_on_the_callers_device(sim: SimulatedRuntime) -> None:
    assert refusal(DeviceGuard.create(SIMULATED_DEVICES, runtime=sim)).code == INVALID_DEVICE
    assert sim.contexts == set()
    assert [call for call in sim.calls if call[0] == "set_device"] == [("set_device", (SIMULATED_DEVICES,))]
    assert current(sim) == 0


def test_borrow_of_the_current_device_creates_no_context(sim: SimulatedRuntime) -> None:
    with device(0, runtime=sim), DeviceGuard.create(0, runtime=sim).unwrap():
        pass
    assert sim.contexts == set()


# f. A failed restore is logged, and never raised over the body's exception.


def test_failed_restore_is_logged(sim: SimulatedRuntime, caplog: pytest.LogCaptureFixture) -> None:
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    sim.fail_next("set_device", LAUNCH_FAILURE)
    with caplog.at_level(logging.ERROR, logger="guard_lib"):
        guard.close()
    [record] = caplog.records
    assert record.name == "guard_lib"
    assert record.levelno == logging.ERROR
    message = record.getMessage()
    assert "device 0" in message
    assert "device 1" in message
    assert "cudaErrorLaunchFailure" in message


def test_failed_restore_after_failed_switch_is_logged(
    sim: SimulatedRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=1)
    sim.fail_next("set_device", LAUNCH_FAILURE)
    with caplog.at_level(logging.ERROR, logger="guard_lib"):
        assert DeviceGuard.create(1, runtime=sim).is_err()
    assert "could not restore CUDA device 0" in caplog.text


def test_successful_guard_logs_nothing(sim: SimulatedRuntime, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="guard_lib"), device(1, runtime=sim):
        pass
    assert caplog.records == []


def test_failed_restore_never_hides_the_body_exception(
    sim: SimulatedRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="guard_lib"), pytest.raises(ValueError, match="body"):
        with DeviceGuard.create(1, runtime=sim).unwrap():
            sim.fail_next("set_device", LAUNCH_FAILURE)
            raise ValueError("body")
    assert "cudaErrorLaunchFailure" in caplog.text


# g. Moving: only the guard that took the borrow over restores.


@pytest.mark.multi_gpu
def test_take_restores_once(rt: DeviceRuntime) -> None:
    guard = DeviceGuard.create(1, runtime=rt).unwrap()
    with guard.take() as taker:
        assert (taker.original_device, taker.current_device) == (0, 1)
        assert current(rt) == 1
    assert current(rt) == 0
    # Somewhere a second restore would be visible: the moved-from guard must leave it alone.
    select(rt, 1)
    guard.close()
    assert current(rt) == 1


def test_take_hands_over_the_one_restore(sim: SimulatedRuntime) -> None:
    # The simulated twin of test_take_restores_once, so it runs on every runtime selection, C path too.
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    taker = guard.take()
    guard.close()
    assert sim.current_device == 1
    taker.close()
    taker.close()
    assert sim.current_device == 0
    assert sim.calls == [("get_device", ()), ("set_device", (1,)), ("set_device", (0,))]


def test_take_of_a_spent_guard_is_refused(sim: SimulatedRuntime) -> None:
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    guard.take().close()
    with pytest.raises(GuardError, match="closed or taken"):
        guard.take()
    closed = DeviceGuard.create(1, runtime=sim).unwrap()
    closed.close()
    with pytest.raises(GuardError, match="closed or taken"):
        closed.take()


def test_close_is_idempotent(sim: SimulatedRuntime) -> None:
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    guard.close()
    select(sim, 2)
    sim.calls.clear()
    guard.close()
    # Entering it now would run the body on whatever device the thread is on: refused, with no call.
    with pytest.raises(GuardError, match="was closed or taken, so it selects no device"), guard:
        pytest.fail("the body of a closed guard ran")
    assert sim.calls == []
    assert current(sim) == 2


def test_guard_cannot_be_constructed_copied_or_pickled(sim: SimulatedRuntime) -> None:
    with pytest.raises(TypeError, match=r"DeviceGuard\.create"):
        DeviceGuard()
    with DeviceGuard.create(1, runtime=sim).unwrap() as guard, device(2, runtime=sim) as borrow:
        for duplicate in (copy.copy, copy.deepcopy, pickle.dumps):
            for held in (guard, borrow):
                with pytest.raises(TypeError, match=r"take\(\) hands a borrow over|cannot be pickled"):
                    duplicate(held)


def test_repr_names_devices_and_state(sim: SimulatedRuntime) -> None:
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    assert repr(guard) == "<DeviceGuard device 1 (restores 0), open>"
    guard.close()
    assert repr(guard) == "<DeviceGuard device 1 (restores 0), restored>"


# h. A guard belongs to the thread that created it.


def _close_elsewhere(guard: DeviceGuard, runtime: DeviceRuntime) -> tuple[BaseException | None, object, int]:
    """Close ``guard`` on a new thread: what it raised, the calls made there, and that thread's device."""
    outcome: list[BaseException | None] = []
    seen: list[object] = []

    def other_thread() -> None:
        try:
            guard.close()
        except GuardError as error:
            outcome.append(error)
        else:
            outcome.append(None)
        seen.append(list(runtime.calls) if isinstance(runtime, SimulatedRuntime) else None)
        seen.append(current(runtime))

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    return outcome[0], seen[0], int(seen[1])  # type: ignore[call-overload]


def test_close_from_another_thread_raises_and_touches_nothing(sim: SimulatedRuntime) -> None:
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    error, other_calls, _ = _close_elsewhere(guard, sim)
    assert isinstance(error, GuardError)
    assert "thread" in str(error)
    assert other_calls == []
    assert current(sim) == 1
    guard.close()
    assert current(sim) == 0


def test_close_from_another_thread_refuses_a_guard_of_the_device_already_current(
    sim: SimulatedRuntime,
) -> None:
    # Nothing to put back, but the debt is still the owner's: another thread may not end it.
    guard = DeviceGuard.create(0, runtime=sim).unwrap()
    error, other_calls, _ = _close_elsewhere(guard, sim)
    assert isinstance(error, GuardError)
    assert "thread" in str(error)
    assert other_calls == []
    assert repr(guard).endswith(", open>")
    guard.close()
    assert repr(guard).endswith(", restored>")


@pytest.mark.multi_gpu
def test_close_from_another_thread_leaves_both_threads_devices(rt: DeviceRuntime) -> None:
    guard = DeviceGuard.create(1, runtime=rt).unwrap()
    error, _, other_device = _close_elsewhere(guard, rt)
    assert isinstance(error, GuardError)
    assert other_device == 0
    assert current(rt) == 1
    guard.close()
    assert current(rt) == 0


# i. A guard or a Result dropped without being dealt with warns.


def test_guard_dropped_while_owing_a_restore_warns_and_does_not_restore(sim: SimulatedRuntime) -> None:
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    with pytest.warns(ResourceWarning, match="CUDA device 1 .*device 0 was never restored"):
        del guard
        gc.collect()
    assert current(sim) == 1


def test_every_guard_dropped_while_owing_warns_not_only_the_first(sim: SimulatedRuntime) -> None:
    # Guards and borrows come and go by the thousand; reusing their memory must not silence a later drop.
    for _ in range(3):
        with device(1, runtime=sim):
            pass
        guard = DeviceGuard.create(1, runtime=sim).unwrap()
        with pytest.warns(ResourceWarning, match="CUDA device 1 .*device 0 was never restored"):
            del guard
            gc.collect()
        sim.set_device(0)


def test_closed_or_taken_guard_dropped_is_silent(
    sim: SimulatedRuntime, recwarn: pytest.WarningsRecorder
) -> None:
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    taker = guard.take()
    taker.close()
    del guard, taker
    gc.collect()
    assert recwarn.list == []


def test_unchecked_err_warns(sim: SimulatedRuntime) -> None:
    from guard_lib import UncheckedResultWarning

    with pytest.warns(UncheckedResultWarning, match="Err.*device -1"):
        DeviceGuard.create(-1, runtime=sim)
        gc.collect()


def test_unchecked_ok_warns(sim: SimulatedRuntime) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DeviceGuard.create(1, runtime=sim)
        gc.collect()
    messages = {(w.category.__name__, str(w.message).split(" was ")[0]) for w in caught}
    # The Ok nobody read warns, and so does the guard inside it, which nobody could close.
    assert ("UncheckedResultWarning", "Ok(<DeviceGuard device 1 (restores 0), open>)") in messages
    assert ("ResourceWarning", "DeviceGuard for CUDA device 1") in messages


def test_checked_results_are_silent(sim: SimulatedRuntime, recwarn: pytest.WarningsRecorder) -> None:
    assert DeviceGuard.create(-1, runtime=sim).is_err()
    ok = DeviceGuard.create(1, runtime=sim)
    assert ok.is_ok()
    ok.unwrap().close()
    del ok
    gc.collect()
    assert recwarn.list == []


# guard_lib.device


def test_device_selects_on_enter_not_on_construction(sim: SimulatedRuntime) -> None:
    borrow = device(1, runtime=sim)
    assert sim.calls == []
    with borrow:
        assert current(sim) == 1
    assert current(sim) == 0
    with borrow:  # reusable once exited
        assert current(sim) == 1


def test_device_is_not_reentrant(sim: SimulatedRuntime) -> None:
    borrow = device(1, runtime=sim)
    with borrow, pytest.raises(GuardError, match="already entered"):
        with borrow:
            pass
    assert current(sim) == 0


def test_device_exit_without_enter_does_nothing(sim: SimulatedRuntime) -> None:
    device(1, runtime=sim).__exit__(None, None, None)
    assert sim.calls == []


def test_default_runtime_is_used_when_none_given(sim: SimulatedRuntime) -> None:
    with use_runtime(sim), device(2):
        assert current(sim) == 2
        with DeviceGuard.create(3).unwrap():
            assert current(sim) == 3
    assert current(sim) == 0


def test_result_can_be_matched(sim: SimulatedRuntime) -> None:
    match DeviceGuard.create(1, runtime=sim):
        case Ok(guard):
            guard.close()
        case Err(error):
            pytest.fail(f"unexpected {error}")
    match DeviceGuard.create(99, runtime=sim):
        case Ok(guard):
            guard.close()
            pytest.fail("device 99 does not exist")
        case Err(error):
            assert error.code_name == "cudaErrorInvalidDevice"
    clear_calls(sim)


def test_a_borrow_of_the_current_device_is_open_until_closed(sim: SimulatedRuntime) -> None:
    # Nothing to restore, but it is a borrow all the same: open, not reentrant, and it can be taken.
    borrow = device(0, runtime=sim)
    with borrow:
        with pytest.raises(GuardError, match="already entered"):
            borrow.__enter__()
    guard = DeviceGuard.create(0, runtime=sim).unwrap()
    assert repr(guard) == "<DeviceGuard device 0 (restores 0), open>"
    taker = guard.take()
    assert repr(taker) == "<DeviceGuard device 0 (restores 0), open>"
    taker.close()
    assert repr(taker) == "<DeviceGuard device 0 (restores 0), restored>"
    assert sim.calls == [("get_device", ()), ("get_device", ())]

"""Settling a refused switch: what the log says when it cannot put the thread back, and who pays when the
runtime raises while it settles.

A switch that fails can still move the thread (cudaSetDevice does, once an error is pending). Settling
reads where the thread is and puts back a moved one; these tests make that read or that restore fail.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

from guard_lib import DeviceGuard, GuardError, device
from guard_lib.cuda_errors import LAUNCH_FAILURE
from guard_lib.runtime import SimulatedRuntime

from .support import EntryPointRuntime, refusal

if TYPE_CHECKING:
    from guard_lib.simulated import _Fault


class _ReadsAfterTheSwitch:
    """Each read of the device once a switch was asked for meets the next of ``reads``: None (answered),
    a CUDA error code (failed), or an exception (raised). The C path's reads meet them too."""

    reads: list[int | BaseException | None]

    def _fault(self, op: str) -> _Fault | None:
        runtime: SimulatedRuntime = self  # type: ignore[assignment]
        if op == "get_device" and self.reads and any(name == "set_device" for name, _ in runtime.calls):
            action = self.reads.pop(0)
            if isinstance(action, BaseException):
                runtime.raise_next("get_device", action)
            elif action is not None:
                runtime.fail_next("get_device", action)
        return SimulatedRuntime._fault(runtime, op)


class _Plain(_ReadsAfterTheSwitch, SimulatedRuntime):
    pass


class _Entry(_ReadsAfterTheSwitch, EntryPointRuntime):
    pass


@pytest.fixture(params=["plain", "c-entry"])
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _runtime(flavour: str, reads: list[int | BaseException | None]) -> SimulatedRuntime:
    runtime = _Plain(device_count=4) if flavour == "plain" else _Entry(device_count=4)
    runtime.reads = reads
    return runtime


def _restores(runtime: SimulatedRuntime) -> list[object]:
    return [call for call in runtime.calls if call == ("set_device", (0,))]


# --- the log of a failed switch that settling could not undo -----------------------------------------


def test_the_log_names_the_device_asked_for_and_the_one_the_thread_is_on(
    flavour: str, caplog: pytest.LogCaptureFixture
) -> None:
    sim = _runtime(flavour, [])
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=2)
    sim.fail_next("set_device", LAUNCH_FAILURE)
    with caplog.at_level(logging.ERROR, logger="guard_lib"):
        assert refusal(DeviceGuard.create(1, runtime=sim)).device_index == 1
    assert [r.getMessage() for r in caplog.records] == [
        "could not restore CUDA device 0 after selecting device 1: cudaErrorLaunchFailure; "
        "this thread may still be on device 2"
    ]
    assert sim.current_device == 2
    assert sim.peek_at_last_error() == (0,)


def test_the_log_of_a_with_block_names_both_devices_too(
    flavour: str, caplog: pytest.LogCaptureFixture
) -> None:
    sim = _runtime(flavour, [])
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=3)
    sim.fail_next("set_device", LAUNCH_FAILURE)
    with (
        caplog.at_level(logging.ERROR, logger="guard_lib"),
        pytest.raises(GuardError),
        device(2, runtime=sim),
    ):
        raise AssertionError("the body ran on a refused borrow")
    assert [r.getMessage() for r in caplog.records] == [
        "could not restore CUDA device 0 after selecting device 2: cudaErrorLaunchFailure; "
        "this thread may still be on device 3"
    ]


def test_the_log_still_comes_when_the_device_cannot_be_read_either(
    flavour: str, caplog: pytest.LogCaptureFixture
) -> None:
    sim = _runtime(flavour, [LAUNCH_FAILURE])
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=1)
    sim.fail_next("set_device", LAUNCH_FAILURE)
    with caplog.at_level(logging.ERROR, logger="guard_lib"):
        assert DeviceGuard.create(1, runtime=sim).is_err()
    assert [r.getMessage() for r in caplog.records] == [
        "could not restore CUDA device 0 after selecting device 1: cudaErrorLaunchFailure; "
        "the device this thread is on could not be read"
    ]
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    assert sim.current_device == 1


class _AnswersAnywayWhenFailing(_Plain):
    """A runtime whose failed read still answers a device, as some bindings answer 0."""

    def get_device(self) -> tuple[int, int | None]:
        code, index = super().get_device()
        return code, 0 if index is None else index


def test_a_failed_read_is_not_taken_for_where_the_thread_is(caplog: pytest.LogCaptureFixture) -> None:
    sim = _AnswersAnywayWhenFailing(device_count=4)
    sim.reads = [LAUNCH_FAILURE]
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=1)
    sim.fail_next("set_device", LAUNCH_FAILURE)
    with caplog.at_level(logging.ERROR, logger="guard_lib"):
        assert DeviceGuard.create(1, runtime=sim).is_err()
    assert [r.getMessage() for r in caplog.records] == [
        "could not restore CUDA device 0 after selecting device 1: cudaErrorLaunchFailure; "
        "the device this thread is on could not be read"
    ]


def test_an_unreadable_device_put_back_logs_nothing(flavour: str, caplog: pytest.LogCaptureFixture) -> None:
    sim = _runtime(flavour, [LAUNCH_FAILURE])
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=1)
    with caplog.at_level(logging.ERROR, logger="guard_lib"):
        assert DeviceGuard.create(1, runtime=sim).is_err()
    assert caplog.records == []
    assert sim.current_device == 0


# --- a runtime that raises while a refusal settles --------------------------------------------------
# Settling is tried once more by the handler around it; what both leave unpaid, the caller of create or of
# a decorated function never holds, so create and the decorator settle it themselves.


def test_create_puts_the_thread_back_when_both_settlings_raise(flavour: str) -> None:
    sim = _runtime(flavour, [RuntimeError("first read"), RuntimeError("second read")])
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=1)
    with pytest.raises(RuntimeError, match="second read"):
        DeviceGuard.create(1, runtime=sim)
    assert sim.current_device == 0
    assert len(_restores(sim)) == 1


def test_a_with_puts_the_thread_back_when_both_settlings_raise(flavour: str) -> None:
    sim = _runtime(flavour, [RuntimeError("first read"), RuntimeError("second read")])
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=1)
    with pytest.raises(RuntimeError, match="second read"), device(1, runtime=sim):
        raise AssertionError("the body ran on a refused borrow")
    assert sim.current_device == 0
    assert len(_restores(sim)) == 1


def _entered_elsewhere_with_reads_failing(flavour: str, reads: Sequence[BaseException]) -> list[object]:
    """What a thread saw entering a shared device that another thread holds, when its switch fails and
    moves it and ``reads`` raise in turn: the error it got, its device after, how many restores it made.
    The holder's device is checked kept throughout, and the thread that held it is back on 0 at the end."""
    sim = _runtime(flavour, [])
    assert isinstance(sim, _ReadsAfterTheSwitch)
    shared = device(2, runtime=sim)
    seen: list[object] = []

    def refused() -> None:
        sim.reads = list(reads)
        sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=1)
        try:
            with shared:
                seen.append("the body ran on a refused borrow")
        except RuntimeError as error:
            seen.append(str(error))
        seen.extend([sim.current_device, len(_restores(sim))])

    with shared:
        worker = threading.Thread(target=refused)
        worker.start()
        worker.join()
        assert sim.current_device == 2
    assert sim.current_device == 0
    return seen


def test_a_shared_device_borrowed_elsewhere_puts_the_thread_back_when_both_settlings_raise(
    flavour: str,
) -> None:
    # Another thread holds the device: this thread's with makes a borrow of its own, which it settles.
    seen = _entered_elsewhere_with_reads_failing(
        flavour, [RuntimeError("first read"), RuntimeError("second read")]
    )
    assert seen == ["second read", 0, 1]


def test_a_shared_device_borrowed_elsewhere_settles_its_own_borrow_twice_more(flavour: str) -> None:
    # The borrow of its own is settled twice by its entry and twice more around it: where the first three
    # settlings raise, the fourth puts this thread back, once.
    reads = [RuntimeError("first read"), RuntimeError("second read"), RuntimeError("third read")]
    assert _entered_elsewhere_with_reads_failing(flavour, reads) == ["third read", 0, 1]


def test_a_decorated_call_puts_the_thread_back_when_both_settlings_raise(flavour: str) -> None:
    sim = _runtime(flavour, [RuntimeError("first read"), RuntimeError("second read")])

    @device(1, runtime=sim)
    def work() -> None:
        raise AssertionError("the body ran on a refused borrow")

    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=1)
    with pytest.raises(RuntimeError, match="second read"):
        work()
    assert sim.current_device == 0
    assert len(_restores(sim)) == 1


def test_a_decorated_call_never_restores_twice_after_a_restore_that_raised(flavour: str) -> None:
    # The first settling puts the thread back and the runtime raises after it; the second cannot read
    # where the thread is. Nothing is owed but the mark: a restore now would repeat the one that happened.
    sim = _runtime(flavour, [None, RuntimeError("second read")])

    @device(1, runtime=sim)
    def work() -> None:
        raise AssertionError("the body ran on a refused borrow")

    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=1)
    sim.raise_next("set_device", RuntimeError("after the restore"))
    with pytest.raises(RuntimeError, match="second read"):
        work()
    assert sim.current_device == 0
    assert len(_restores(sim)) == 1

"""Who may act on a borrow, which objects are per thread, and the process default a setter leaves.

A DeviceGuard belongs to the thread that created it: another thread's ``with``, ``close`` or ``take`` is
refused before anything runs, and a guard that owes nothing (closed, or taken over) selects nothing, so
entering it is refused too. A ``device(i)`` object may be shared: each thread's ``with`` is its own borrow.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

import guard_lib.runtime as runtime_module
from guard_lib import CallerStreamGuard, DeviceGuard, GuardError, device
from guard_lib.cuda_errors import LAUNCH_FAILURE
from guard_lib.runtime import (
    RUNTIME_ENV,
    RuntimeChoice,
    SimulatedRuntime,
    get_runtime,
    runtime_from_spec,
    use_runtime,
)

FOREIGN_ENTER = (
    "a DeviceGuard for CUDA device 2 belongs to the thread that created it; "
    "CUDA's current device is per thread, so it cannot be entered from another"
)


def _on_thread(call: Callable[[], object]) -> tuple[object, BaseException | None]:
    result: list[Any] = [None, None]

    def run() -> None:
        try:
            result[0] = call()
        except BaseException as error:
            result[1] = error

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    return result[0], result[1]


# --- DeviceGuard: the creating thread alone --------------------------------------------------------


def test_another_threads_with_never_runs_its_body(sim: SimulatedRuntime) -> None:
    guard = DeviceGuard.create(2, runtime=sim).unwrap()
    ran: list[int] = []

    def enter_elsewhere() -> None:
        sim.calls.clear()
        try:
            with guard:
                ran.append(sim.current_device)
        finally:
            assert sim.calls == []  # the worker's device was neither read nor moved
            assert sim.current_device == 0

    _, error = _on_thread(enter_elsewhere)
    assert ran == []
    assert isinstance(error, GuardError)
    assert str(error) == FOREIGN_ENTER
    assert error.device_index == 2
    # The owner's borrow is untouched: still owed, and paid on its own thread.
    assert sim.current_device == 2
    with guard:
        assert sim.current_device == 2
    assert sim.current_device == 0


def test_another_threads_with_is_refused_at_the_door_not_over_its_bodys_exception(
    sim: SimulatedRuntime,
) -> None:
    guard = DeviceGuard.create(2, runtime=sim).unwrap()

    def body_raises() -> None:
        with guard:
            raise ValueError("the body's own")

    _, error = _on_thread(body_raises)
    # Refused at the door: the body, and its exception, never happened, so nothing was replaced.
    assert isinstance(error, GuardError)
    assert error.__context__ is None
    assert str(error) == FOREIGN_ENTER
    guard.close()


def test_a_taken_guard_selects_nothing_when_entered(sim: SimulatedRuntime) -> None:
    guard = DeviceGuard.create(2, runtime=sim).unwrap()
    taker = guard.take()
    sim.calls.clear()
    with pytest.raises(GuardError) as raised, guard:
        pytest.fail("the body of a guard taken over ran")
    assert str(raised.value) == (
        "this DeviceGuard for CUDA device 2 was closed or taken, so it selects no device: create another"
    )
    assert raised.value.device_index == 2
    assert sim.calls == []
    assert sim.current_device == 2  # the taker still owes
    with taker:
        pass
    assert sim.current_device == 0


# --- device(i): shared by threads, a borrow per with ----------------------------------------------


def test_a_device_shared_by_threads_gives_each_with_its_own_borrow(sim: SimulatedRuntime) -> None:
    shared = device(3, runtime=sim)
    held = threading.Event()
    release = threading.Event()
    seen: dict[str, Any] = {}

    def other() -> None:
        sim.set_device(1)  # this thread's caller is on device 1
        held.wait(10)
        with shared as borrow:
            seen["borrow"] = borrow
            seen["inside"] = sim.current_device
            seen["devices"] = (borrow.original_device, borrow.current_device)
            with pytest.raises(GuardError, match="already entered; it is not reentrant"), shared:
                pass
            seen["after refusal"] = sim.current_device
        seen["after"] = sim.current_device
        release.set()

    worker = threading.Thread(target=other)
    worker.start()
    with shared as mine:
        assert mine is shared
        held.set()
        release.wait(10)
        # The other thread's borrow came and went; this one is still held, on this thread's device.
        assert sim.current_device == 3
        assert (shared.original_device, shared.current_device) == (0, 3)
    worker.join()
    assert sim.current_device == 0
    assert seen["borrow"] is not shared
    assert seen["inside"] == 3
    assert seen["devices"] == (1, 3)
    assert seen["after refusal"] == 3
    assert seen["after"] == 1


def test_a_device_entered_after_another_thread_left_it_is_this_threads(sim: SimulatedRuntime) -> None:
    shared = device(2, runtime=sim)

    def borrow_once() -> tuple[int, int]:
        with shared as borrow:
            inside = sim.current_device
        return inside, borrow.current_device

    assert _on_thread(borrow_once) == ((2, 2), None)
    with shared as mine:
        assert mine is shared
        assert sim.current_device == 2
    assert sim.current_device == 0


def test_only_another_threads_borrow_is_refused_at_exit(sim: SimulatedRuntime) -> None:
    shared = device(2, runtime=sim)
    shared.__enter__()
    _, error = _on_thread(lambda: shared.__exit__(None, None, None))
    assert isinstance(error, GuardError)
    assert "cannot be restored from another" in str(error)
    assert sim.current_device == 2
    shared.__exit__(None, None, None)
    assert sim.current_device == 0
    # Exited: nothing is owed, so an exit from anywhere does nothing.
    assert _on_thread(lambda: shared.__exit__(None, None, None)) == (None, None)


def test_a_refused_borrow_of_a_shared_device_leaves_nothing_held(sim: SimulatedRuntime) -> None:
    shared = device(2, runtime=sim)
    shared.__enter__()

    def refused_then_retried() -> tuple[int, int, int]:
        sim.fail_next("set_device", LAUNCH_FAILURE)
        with pytest.raises(GuardError, match="cudaErrorLaunchFailure"), shared:
            pass
        with shared:
            inside = sim.current_device
        with shared:  # and again, once this thread's first borrow of it has ended
            again = sim.current_device
        return inside, again, sim.current_device

    assert _on_thread(refused_then_retried) == ((2, 2, 0), None)
    shared.__exit__(None, None, None)
    assert sim.current_device == 0


def test_a_threads_closed_borrow_of_a_shared_device_is_not_kept_by_it(sim: SimulatedRuntime) -> None:
    # Each thread that ever borrowed a shared device would otherwise leave a borrow behind in it.
    shared = device(2, runtime=sim)
    shared.__enter__()

    def borrow_once() -> tuple[int, int]:
        with shared as borrow:
            pass
        alone = device(2, runtime=sim)
        return sys.getrefcount(borrow), sys.getrefcount(alone)

    # Held by this frame alone, as a device nothing else holds.
    counts = _on_thread(borrow_once)[0]
    assert isinstance(counts, tuple)
    assert counts[0] == counts[1]
    shared.__exit__(None, None, None)
    assert sim.current_device == 0


def test_a_decorated_function_borrows_on_the_calling_thread(sim: SimulatedRuntime) -> None:
    @device(2, runtime=sim)
    def where() -> int:
        return sim.current_device

    hold = threading.Event()
    go = threading.Event()

    @device(1, runtime=sim)
    def holding() -> int:
        hold.set()
        go.wait(10)
        return sim.current_device

    worker = threading.Thread(target=holding)
    worker.start()
    hold.wait(10)
    assert where() == 2
    go.set()
    worker.join()
    assert _on_thread(where) == (2, None)
    assert sim.current_device == 0


# --- use_runtime: a setter that also nests as a with block -----------------------------------------


@pytest.fixture
def unbuilt_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_module, "_default", None)


def test_use_runtime_called_as_a_setter_takes_effect_at_once(unbuilt_default: None) -> None:
    first, second = SimulatedRuntime(2), SimulatedRuntime(4)
    choice = use_runtime(first)
    assert isinstance(choice, RuntimeChoice)
    assert choice.runtime is first
    assert get_runtime() is first
    with device(1) as borrow:
        assert borrow.current_device == 1
    assert first.calls == [("get_device", ()), ("set_device", (1,)), ("set_device", (0,))]
    inner = use_runtime(second)
    assert get_runtime() is second
    inner.restore()
    assert get_runtime() is first
    inner.restore()  # again: nothing more
    assert get_runtime() is first
    choice.restore()
    assert runtime_module._default is None
    # Restored once: a later choice stays in force whatever an earlier one does.
    later = use_runtime(second)
    choice.restore()
    inner.restore()
    assert get_runtime() is second
    assert repr(later) == "<RuntimeChoice SimulatedRuntime(device_count=4), in force>"
    later.restore()
    assert repr(later) == "<RuntimeChoice SimulatedRuntime(device_count=4), restored>"
    assert runtime_module._default is None


def test_use_runtime_as_a_with_block_puts_the_previous_default_back(unbuilt_default: None) -> None:
    outer = SimulatedRuntime(2)
    with use_runtime(outer) as entered:
        assert entered is outer
        with use_runtime(SimulatedRuntime(3)):
            assert get_runtime().device_count == 3  # type: ignore[attr-defined]
        assert get_runtime() is outer
    assert runtime_module._default is None


def test_use_runtime_never_builds_the_default_it_replaces(
    unbuilt_default: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A default that would not build: use_runtime must not build it just to put it back.
    monkeypatch.setenv(RUNTIME_ENV, "no-such-runtime")
    sim = SimulatedRuntime(2)
    with use_runtime(sim):
        assert get_runtime() is sim
    assert runtime_module._default is None
    with pytest.raises(ValueError, match="names no runtime"):
        get_runtime()


@pytest.mark.parametrize("spec", ["SIMULATED", "Simulated", "Cuda", "CUDA", "SIMULATED:2", "Simulated:3"])
def test_runtime_names_are_lower_case_only(
    spec: str, unbuilt_default: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match=f"{RUNTIME_ENV}={spec!r} names no runtime"):
        runtime_from_spec(spec)
    monkeypatch.setenv(RUNTIME_ENV, spec)
    with pytest.raises(ValueError, match="names no runtime"):
        get_runtime()


# --- CallerStreamGuard.stream: the guard's own, whatever is current ---------------------------------


def test_a_caller_stream_guards_stream_is_its_own_at_every_moment() -> None:
    outer, inner = CallerStreamGuard(11), CallerStreamGuard(22)
    assert (outer.stream, inner.stream) == (11, 22)
    with outer:
        with inner:
            assert (outer.stream, inner.stream) == (11, 22)
        assert (outer.stream, inner.stream) == (11, 22)
    assert (outer.stream, inner.stream) == (11, 22)


# --- a failed restore says where it left the thread, device 0 included ------------------------------


def test_a_failed_restore_that_left_the_thread_on_device_zero_says_so(
    sim: SimulatedRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    sim.set_device(1)
    with caplog.at_level(logging.ERROR, logger="guard_lib"), device(0, runtime=sim):
        sim.fail_next("set_device", LAUNCH_FAILURE)
    assert [record.getMessage() for record in caplog.records] == [
        "could not restore CUDA device 1 after selecting device 0: cudaErrorLaunchFailure; "
        "this thread may still be on device 0"
    ]

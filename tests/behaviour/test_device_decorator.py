"""``@guard_lib.device(i)``: every call of the decorated function borrows device ``i`` and gives it back."""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Iterator

import pytest

from guard_lib import GuardError, GuardTypeError, device
from guard_lib.cuda_errors import INVALID_DEVICE
from guard_lib.runtime import DeviceRuntime, SimulatedRuntime

from .support import current, select


@pytest.mark.multi_gpu
def test_each_call_runs_on_the_device_and_gives_the_callers_back(rt: DeviceRuntime) -> None:
    seen: list[int] = []

    @device(1, runtime=rt)
    def work(a: int, *, b: int) -> int:
        seen.append(current(rt))
        return a + b

    select(rt, 0)
    assert work(2, b=3) == 5
    assert current(rt) == 0
    assert work(1, b=1) == 2  # a decorated function borrows again on every call
    assert seen == [1, 1]
    assert current(rt) == 0


@pytest.mark.multi_gpu
def test_an_exception_in_the_function_still_gives_the_device_back(rt: DeviceRuntime) -> None:
    @device(1, runtime=rt)
    def fails() -> None:
        raise ValueError("the backend failed")

    select(rt, 0)
    with pytest.raises(ValueError, match="the backend failed"):
        fails()
    assert current(rt) == 0


def test_recursive_calls_each_restore_their_own_caller() -> None:
    sim = SimulatedRuntime(device_count=4)
    trail: list[tuple[int, int]] = []

    @device(2, runtime=sim)
    def deeper(depth: int) -> None:
        trail.append((depth, sim.current_device))
        if depth:
            sim.set_device(3)  # the body moves on; the inner call's borrow must give 3 back
            deeper(depth - 1)
            trail.append((depth, sim.current_device))
            sim.set_device(2)

    sim.set_device(1)
    deeper(2)
    assert trail == [(2, 2), (1, 2), (0, 2), (1, 3), (2, 3)]
    assert sim.current_device == 1


def test_threads_calling_one_decorated_function_each_keep_their_device() -> None:
    sim = SimulatedRuntime(device_count=4)
    ready = threading.Barrier(3)

    @device(3, runtime=sim)
    def work() -> int:
        ready.wait(timeout=10)  # all three inside at once
        return sim.current_device

    results: dict[int, object] = {}

    def run(start: int) -> None:
        sim.set_device(start)
        try:
            results[start] = (work(), sim.current_device)
        except BaseException as error:
            # A thread that cannot get in must not leave the others waiting out the barrier.
            ready.abort()
            results[start] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert results == {0: (3, 0), 1: (3, 1), 2: (3, 2)}


def test_a_refused_selection_raises_at_the_call_and_runs_nothing() -> None:
    sim = SimulatedRuntime(device_count=2)
    ran: list[bool] = []

    @device(5, runtime=sim)
    def work() -> None:
        ran.append(True)

    with pytest.raises(GuardError) as info:
        work()
    assert info.value.code == INVALID_DEVICE
    assert ran == []
    assert sim.current_device == 0

    @device("1", runtime=sim)  # type: ignore[arg-type]
    def typed() -> None:
        ran.append(True)

    with pytest.raises(GuardTypeError, match="'1'"):
        typed()
    assert ran == []


def test_a_failed_restore_is_logged_as_a_with_block_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    sim = SimulatedRuntime(device_count=2)

    @device(1, runtime=sim)
    def work() -> int:
        sim.fail_next("set_device", INVALID_DEVICE)
        return 7

    assert work() == 7
    assert [r.getMessage() for r in caplog.records] == [
        "could not restore CUDA device 0 after selecting device 1: cudaErrorInvalidDevice; "
        "this thread may still be on device 1"
    ]


def test_the_wrapper_looks_like_the_function() -> None:
    def work(x: int) -> int:
        """Does the work."""
        return x

    wrapped = device(0, runtime=SimulatedRuntime())(work)
    assert wrapped.__name__ == "work"
    assert wrapped.__doc__ == "Does the work."
    assert wrapped.__wrapped__ is work  # type: ignore[attr-defined]
    assert wrapped(4) == 4


async def _coroutine() -> None:
    pass


async def _async_generator() -> AsyncIterator[int]:
    yield 1


def _generator() -> Iterator[int]:
    yield 1


@pytest.mark.parametrize(
    ("target", "says"),
    [
        (_coroutine, "a coroutine function: the borrow would be held across await"),
        (_async_generator, "a coroutine function: the borrow would be held across await"),
        (_generator, "a generator function: its body runs after the call returns"),
        (42, "guard_lib.device(1) decorates a function, not 42"),
    ],
)
def test_what_cannot_be_decorated_is_refused_at_decoration(target: object, says: str) -> None:
    with pytest.raises(TypeError, match=re.escape(says)):
        device(1, runtime=SimulatedRuntime())(target)  # type: ignore[arg-type]

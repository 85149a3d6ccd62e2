"""Many threads, nested guards: no thread ever sees another's selection (bounded stress)."""

from __future__ import annotations

import threading
import time

import pytest

from guard_lib import CallerStreamGuard, DeviceGuard, get_caller_stream
from guard_lib.runtime import DeviceRuntime

from .support import current, device_count

THREADS = 8
ITERATIONS = 200
DEADLINE_S = 20.0


@pytest.mark.multi_gpu
def test_nested_guards_restore_in_order(rt: DeviceRuntime) -> None:
    last = device_count(rt) - 1
    with DeviceGuard.create(1, runtime=rt).unwrap():
        with DeviceGuard.create(last, runtime=rt).unwrap() as inner:
            assert inner.original_device == 1
            assert current(rt) == last
            with DeviceGuard.create(0, runtime=rt).unwrap():
                assert current(rt) == 0
            assert current(rt) == last
        assert current(rt) == 1
    assert current(rt) == 0


@pytest.mark.multi_gpu
def test_threads_on_their_own_devices_never_see_each_other(rt: DeviceRuntime) -> None:
    devices = device_count(rt)
    barrier = threading.Barrier(THREADS, timeout=DEADLINE_S)
    failures: list[str] = []
    deadline = time.monotonic() + DEADLINE_S

    def worker(n: int) -> None:
        mine, home = n % devices, (n + 1) % devices
        try:
            (code,) = rt.set_device(home)
            barrier.wait()
            for i in range(ITERATIONS):
                if time.monotonic() > deadline:
                    break
                with CallerStreamGuard(n):
                    with DeviceGuard.create(mine, runtime=rt).unwrap():
                        if current(rt) != mine or get_caller_stream() != n:
                            failures.append(
                                f"thread {n}, round {i}: saw {current(rt)}, {get_caller_stream()}"
                            )
                    if current(rt) != home:
                        failures.append(f"thread {n}, round {i}: left on {current(rt)}, not {home}")
            assert code == 0
        except BaseException as error:  # reported below, on the test's own thread
            failures.append(f"thread {n}: {error!r}")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_S + 5)
    assert not any(thread.is_alive() for thread in threads), "a worker thread hung"
    assert failures == []

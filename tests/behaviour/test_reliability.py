"""What an attack on the implementations found: cycles, stale or malformed entry points, runtimes kept alive,
thread identity. Each test runs on whichever implementation this process uses (plain pytest runs both)."""

from __future__ import annotations

import gc
import warnings
import weakref
from typing import Any

import pytest

from guard_lib import DeviceGuard, device
from guard_lib.runtime import DeviceRuntime, SimulatedRuntime

from .support import EntryPointRuntime


class _KeepsItsExit(DeviceGuard):
    """A subclass that keeps its own bound ``__exit__``, as a cleanup list would: a cycle through it."""

    __slots__ = ("__dict__", "__weakref__")


def _cycle_through_exit(runtime: DeviceRuntime) -> weakref.ref[Any]:
    guard: Any = _KeepsItsExit.create(1, runtime=runtime).unwrap()
    guard.cleanup = guard.__exit__
    guard.close()
    return weakref.ref(guard)


def test_a_guard_that_keeps_its_own_exit_is_freed_by_the_collector(rt: DeviceRuntime) -> None:
    gone = [_cycle_through_exit(rt) for _ in range(100)]
    gc.collect()
    assert [ref for ref in gone if ref() is not None] == []


class _Keeping(EntryPointRuntime):
    """A runtime that keeps what it is given, as an instrumentation wrapper might."""

    __slots__ = ("__dict__", "__weakref__")


def test_a_runtime_that_stores_a_borrows_exit_is_freed_by_the_collector() -> None:
    refs = []
    for _ in range(100):
        sim: Any = _Keeping(2)
        borrow = device(1, runtime=sim)
        sim.keep = borrow.__exit__
        refs.append(weakref.ref(sim))
        del sim, borrow
    gc.collect()
    assert [ref for ref in refs if ref() is not None] == []


def test_an_open_guard_in_such_a_cycle_still_warns_when_collected() -> None:
    sim = SimulatedRuntime(2)
    guard: Any = _KeepsItsExit.create(1, runtime=sim).unwrap()
    guard.cleanup = guard.__exit__
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del guard
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == [
        "DeviceGuard for CUDA device 1 was garbage-collected without close(); device 0 was never restored"
    ]


@pytest.fixture(autouse=True)
def _collect_after() -> Any:
    yield
    gc.collect()

"""Behaviours of the compiled core that deleting one of its statements showed no test pinned.

Each holds for the reference too (plain pytest runs whichever implementation this process uses), except
where a test says the compiled core is the point. The core remembers the last runtime's offer of C entry
points, holding its capsules, and a borrow that used it holds it until it is restored: the capsules here
count themselves, so that what still holds them can be seen.
"""

from __future__ import annotations

import ctypes
import gc
import os
import threading
from typing import Any

import pytest

import guard_lib
from guard_lib import DeviceGuard, GuardError, device
from guard_lib.cuda_errors import INVALID_VALUE
from guard_lib.runtime import SimulatedRuntime

from .support import GET_DEVICE_SIGNATURE, SET_DEVICE_SIGNATURE, EntryPointRuntime

COMPILED = guard_lib.IMPLEMENTATION == "compiled"

_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_GetDevice = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int))
_SetDevice = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

# The capsules of this module not yet destroyed. The destructor lives as long as the process, so that a
# capsule destroyed after its runtime is gone still has it to call.
_live = [0]


def _count_destroyed(_capsule: int) -> None:
    _live[0] -= 1


_destroyed = _Destructor(_count_destroyed)


class _CountedCapsules(EntryPointRuntime):
    """Offers its C functions in capsules made afresh at each ask, whose destruction stands for freeing the
    functions: a C call made while none of them is left is logged in ``after_free`` (the functions are
    kept, so that such a call is seen rather than crashing)."""

    __slots__ = ("_counted_get", "_counted_set", "after_free", "offered")

    def __init__(self) -> None:
        super().__init__(2)
        self.after_free: list[str] = []
        self.offered = 0

        def get_device(out: Any) -> int:
            if not _live[0]:
                self.after_free.append("get_device")
            return int(self._c_get_device(out))

        def set_device(index: int) -> int:
            if not _live[0]:
                self.after_free.append("set_device")
            return int(self._c_set_device(index))

        self._counted_get = _GetDevice(get_device)
        self._counted_set = _SetDevice(set_device)

    def c_entry_points(self) -> Any:
        self.offered += 1
        on_free = ctypes.cast(_destroyed, ctypes.c_void_p)
        offer = [
            _new_capsule(ctypes.cast(self._counted_get, ctypes.c_void_p), GET_DEVICE_SIGNATURE, on_free),
            _new_capsule(ctypes.cast(self._counted_set, ctypes.c_void_p), SET_DEVICE_SIGNATURE, on_free),
        ]
        _live[0] += 2
        return offer


class _EmptiesItsLists(_CountedCapsules):
    """Keeps each list it hands its capsules in, to empty it later: then only what took the capsules out of
    it holds them."""

    __slots__ = ("lists",)

    def __init__(self) -> None:
        super().__init__()
        self.lists: list[list[object]] = []

    def c_entry_points(self) -> Any:
        self.lists.append(super().c_entry_points())
        return self.lists[-1]


def _forget_the_offer() -> None:
    """Borrow through a runtime that offers no entry points: the offer the core remembers is now that one's,
    and the capsules that only the remembered offer held are destroyed."""
    with device(0, runtime=SimulatedRuntime(2)):
        pass
    gc.collect()


@pytest.fixture
def counted() -> _CountedCapsules:
    _forget_the_offer()
    assert _live[0] == 0, "capsules of an earlier test are still held"
    return _CountedCapsules()


# --- what a borrow holds once it owes nothing -------------------------------------------------------------


@pytest.mark.parametrize("kind", ["device", "DeviceGuard"])
def test_a_restored_borrow_holds_no_offer_of_entry_points(counted: _CountedCapsules, kind: str) -> None:
    # Restored, a borrow calls nothing more: it lets go of the offer, and the capsules go with the last
    # runtime's offer that the core remembers, not with the borrow.
    borrow: Any
    if kind == "device":
        borrow = device(1, runtime=counted)
        with borrow:
            assert counted.current_device == 1
    else:
        borrow = DeviceGuard.create(1, runtime=counted).unwrap()
        borrow.close()
    assert counted.current_device == 0
    assert _live[0] == (2 if COMPILED else 0)
    _forget_the_offer()
    assert _live[0] == 0
    assert counted.offered == int(COMPILED)
    assert (borrow.original_device, borrow.current_device) == (0, 1)  # the borrow is still held here


def test_a_refused_entry_holds_no_offer_of_entry_points(counted: _CountedCapsules) -> None:
    # The refused switch is settled at once: the borrow, kept by its caller, holds nothing of the offer.
    borrow = device(1, runtime=counted)
    counted.fail_next("set_device", INVALID_VALUE)
    with pytest.raises(GuardError, match="cannot select CUDA device 1: cudaErrorInvalidValue"), borrow:
        pytest.fail("the body ran on a refused borrow")
    assert counted.current_device == 0
    _forget_the_offer()
    assert _live[0] == 0
    assert counted.c_calls == (["get_device", "set_device"] if COMPILED else [])


def test_a_guard_taken_over_holds_no_offer_of_entry_points(counted: _CountedCapsules) -> None:
    # The taker holds the offer until it restores; the guard it took over holds nothing of it from the take.
    guard = DeviceGuard.create(1, runtime=counted).unwrap()
    taker = guard.take()
    taker.close()
    assert counted.current_device == 0
    _forget_the_offer()
    assert _live[0] == 0
    assert repr(guard) == "<DeviceGuard device 1 (restores 0), restored>"  # still here, and held
    assert counted.c_calls == (["get_device", "set_device", "set_device"] if COMPILED else [])


def test_the_core_holds_the_capsules_not_the_list_they_came_in() -> None:
    # A runtime may empty the list it handed its capsules in: the C functions live while the core may call
    # them, since it keeps the capsules themselves.
    _forget_the_offer()
    rt = _EmptiesItsLists()
    with device(1, runtime=rt):
        pass
    for handed in rt.lists:
        handed.clear()
    gc.collect()
    with device(1, runtime=rt):
        assert rt.current_device == 1
    assert rt.current_device == 0
    assert rt.after_free == []
    assert rt.c_calls == (["get_device", "set_device", "set_device"] * 2 if COMPILED else [])
    _forget_the_offer()
    assert _live[0] == 0


# --- create given a class that object.__new__ makes ---------------------------------------------------------


@pytest.mark.skipif(
    "MUTANT_UNDER_TEST" in os.environ,
    reason="mutmut's copy of create looks itself up on the class it is given",
)
def test_create_given_a_plain_class_refuses_it_by_name() -> None:
    # object.__new__ makes one of these, but no guard can be made of it: refused before any runtime call.
    class Plain:
        pass

    create: Any = DeviceGuard.__dict__["create"].__func__
    rt = SimulatedRuntime(2)
    with pytest.raises(TypeError) as raised:
        create(Plain, 1, runtime=rt)
    assert str(raised.value) == f"DeviceGuard.create() makes a DeviceGuard, not {Plain!r}"
    assert rt.calls == []


# --- a device made anew ------------------------------------------------------------------------------------


def test_a_reinitialised_device_forgets_the_borrows_other_threads_hold_of_it() -> None:
    # __init__ makes the object new: a borrow another thread made of it is no longer found by its exit,
    # and is closed by the borrow object that ``with ... as`` handed that thread.
    sim = SimulatedRuntime(2)
    shared = device(1, runtime=sim)
    entered, made_anew = threading.Event(), threading.Event()
    seen: list[object] = []

    def elsewhere() -> None:
        try:
            own = shared.__enter__()
            seen.append(own is not shared)
        finally:
            entered.set()
        made_anew.wait()
        shared.__exit__(None, None, None)
        seen.append(sim.current_device)
        own.close()
        seen.append(sim.current_device)

    with shared:
        worker = threading.Thread(target=elsewhere)
        worker.start()
        entered.wait()
    device.__init__(shared, 1, runtime=sim)
    made_anew.set()
    worker.join()
    assert seen == [True, 1, 0]
    assert sim.current_device == 0

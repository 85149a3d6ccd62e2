"""A collection inside a borrow may run any finaliser, and a finaliser may replace the runtime's methods.

Up to 3.11 a collection runs wherever an object is allocated, C code included, so a finaliser can run in
the middle of the core's look at a runtime (from 3.12 only between bytecodes). The test collects as often
as the collector allows (``gc.set_threshold(1)``: whenever tracked objects were made and not freed).

Invariant: whatever a finaliser replaces, at whichever collection of a borrow, every later borrow calls the
methods there are now, and the thread is put back. The reference always calls the methods; the core must
not keep a look that a collection made stale.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import guard_lib
from guard_lib import device
from guard_lib.runtime import SimulatedRuntime

from .support import EntryPointRuntime

COMPILED = guard_lib.IMPLEMENTATION == "compiled"
KINDS = ["get_device", "set_device"]
CALLS_PER_BORROW = {"get_device": 1, "set_device": 2}


@contextmanager
def _at_collection(number: int, act: Callable[[], object]) -> Iterator[list[int]]:
    """Collect at nearly every allocation, and run ``act`` at the start of collection ``number`` (counted
    from 1; 0: never). Yields the count of collections so far."""
    seen = [0]

    def on_collection(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen[0] += 1
            if seen[0] == number:
                act()

    threshold = gc.get_threshold()
    gc.collect()
    gc.callbacks.append(on_collection)
    gc.set_threshold(1)
    try:
        yield seen
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(on_collection)


def _own(kind: str) -> Callable[..., Any]:
    """A method of a class's own, which only that class holds: replaced there, it is freed."""

    def own(self: SimulatedRuntime, *args: object) -> Any:
        method: Callable[..., Any] = getattr(SimulatedRuntime, kind)
        return method(self, *args)

    return own


def _honest(with_dict: bool) -> type[EntryPointRuntime]:
    """A class of its own with methods of its own, which offers its C entry points only while those are
    still its methods, as ``CudaRuntime`` does: the offer speaks for the methods as they were when asked.
    With a ``__dict__``, the first look at an instance may allocate (the dictionary is made then)."""
    own = {kind: _own(kind) for kind in KINDS}
    known = {kind: weakref.ref(method) for kind, method in own.items()}

    def c_entry_points(self: EntryPointRuntime) -> tuple[object, object] | None:
        if any(getattr(type(self), kind) is not known[kind]() for kind in KINDS):
            return None
        return EntryPointRuntime.c_entry_points(self)

    slots = {} if with_dict else {"__slots__": ()}
    return type("Honest", (EntryPointRuntime,), {**slots, **own, "c_entry_points": c_entry_points})


def _fresh(kind: str, with_dict: bool) -> tuple[EntryPointRuntime, list[str], Callable[[], object]]:
    """A runtime of an honest class of its own, and what replaces the class's ``kind`` (logging each call
    to the replacement)."""
    log: list[str] = []
    cls = _honest(with_dict)

    def replacement(self: SimulatedRuntime, *args: object) -> Any:
        log.append(kind)
        method: Callable[..., Any] = getattr(SimulatedRuntime, kind)
        return method(self, *args)

    return cls(2), log, lambda: setattr(cls, kind, replacement)


@pytest.mark.parametrize("with_dict", [False, True], ids=["slots", "dict"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_method_replaced_by_a_finaliser_at_any_collection_of_a_borrow_is_called_by_the_next(
    kind: str, with_dict: bool
) -> None:
    # Unreplaced, the core calls such a runtime through its entry points: what a replacement must undo.
    rt, _, _ = _fresh(kind, with_dict)
    with _at_collection(0, lambda: None), device(1, runtime=rt):
        pass
    assert bool(rt.c_calls) == COMPILED
    # How many collections a borrow sees depends on what else is allocated and freed: go on until one is
    # asked for that never comes.
    number = 0
    while True:
        number += 1
        assert number < 1000, "collections without end"
        rt, log, replace = _fresh(kind, with_dict)
        with _at_collection(number, replace) as seen, device(1, runtime=rt):
            pass
        if seen[0] < number:
            break
        assert rt.current_device == 0, f"collection {number}"
        del log[:]
        with device(1, runtime=rt):
            assert rt.current_device == 1
        assert rt.current_device == 0
        assert log == [kind] * CALLS_PER_BORROW[kind], f"replaced at collection {number}"
    assert number > 1, "no collection ran inside the borrow: the test reaches nothing"

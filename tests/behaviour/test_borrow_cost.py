"""What one borrow costs the compiled core, counted rather than timed, so that CI can hold a ceiling.

On a runtime that offers C entry points: the Python-level calls a borrow makes (the runtime's C
functions, here ctypes callbacks, are the only Python a borrow may run) and the objects it allocates and
keeps (while the block runs, and after 10,000 borrows).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

import guard_lib
from guard_lib import DeviceGuard
from guard_lib.runtime import use_runtime

from .support import EntryPointRuntime

pytestmark = pytest.mark.skipif(
    guard_lib.IMPLEMENTATION != "compiled", reason="counts the compiled core's calls and allocations"
)

BORROWS = 10_000


def _with_device(rt: EntryPointRuntime, index: int) -> None:
    with guard_lib.device(index, runtime=rt):
        pass


def _with_guard(rt: EntryPointRuntime, index: int) -> None:
    with DeviceGuard.create(index, runtime=rt).unwrap():
        pass


def _with_device_on_the_default(rt: EntryPointRuntime, index: int) -> None:
    with guard_lib.device(index):
        pass


def _with_guard_on_the_default(rt: EntryPointRuntime, index: int) -> None:
    with DeviceGuard.create(index).unwrap():
        pass


WAYS: dict[str, Callable[[EntryPointRuntime, int], None]] = {"device": _with_device, "create": _with_guard}
# The same borrows with no runtime given: the process default serves them.
ON_THE_DEFAULT: dict[str, Callable[[EntryPointRuntime, int], None]] = {
    "device": _with_device_on_the_default,
    "create": _with_guard_on_the_default,
}
# What the borrow calls in Python: the runtime's C functions alone, once each per read and switch.
CALLS = {0: ["get_device"], 1: ["get_device", "set_device", "set_device"]}


def _python_calls(
    borrow: Callable[[EntryPointRuntime, int], None], rt: EntryPointRuntime, index: int
) -> list[str]:
    """The Python functions that one borrow calls, once the core has learnt the runtime's entry points."""
    borrow(rt, index)  # the core learns the runtime's entry points
    called: list[str] = []

    def profile(frame: Any, event: str, arg: object) -> None:
        # Only what the borrow itself calls: the frames whose caller is the borrowing function's.
        if event == "call" and frame.f_back is not None and frame.f_back.f_code is borrow.__code__:
            called.append(frame.f_code.co_name)

    rt.c_calls.clear()
    sys.setprofile(profile)
    try:
        borrow(rt, index)
    finally:
        sys.setprofile(None)
    return called


@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("way", WAYS)
def test_a_borrow_calls_only_the_runtimes_c_functions(way: str, index: int) -> None:
    rt = EntryPointRuntime(2)
    assert _python_calls(WAYS[way], rt, index) == CALLS[index]
    assert rt.c_calls == CALLS[index]
    assert rt.current_device == 0


@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("way", ON_THE_DEFAULT)
def test_a_borrow_on_the_default_runtime_calls_only_its_c_functions(way: str, index: int) -> None:
    # The default is read where use_runtime put it, with no call of get_runtime() on the way.
    rt = EntryPointRuntime(2)
    with use_runtime(rt):
        assert _python_calls(ON_THE_DEFAULT[way], rt, index) == CALLS[index]
    assert rt.c_calls == CALLS[index]
    assert rt.current_device == 0


# Blocks alive while the block runs, counted on CPython 3.11 after one borrow before: the borrow, the
# bound __exit__ the with
# statement holds, the int that holds the count read before it, and what the runtime's log of its one
# read keeps. A guard is made before the count, so only the bound __exit__ (and its log, shared) is new.
HELD_IN_THE_BLOCK = {"device": 5, "create": 2}


@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("way", ["device", "create"])
def test_a_borrow_holds_no_object_but_itself(way: str, index: int) -> None:
    rt = EntryPointRuntime(2)
    WAYS[way](rt, index)
    rt.calls.clear()
    rt.c_calls.clear()
    if way == "device":
        before = sys.getallocatedblocks()
        with guard_lib.device(index, runtime=rt):
            held = sys.getallocatedblocks() - before
    else:
        result = DeviceGuard.create(index, runtime=rt)
        guard = result.unwrap()
        del result
        before = sys.getallocatedblocks()
        with guard:
            held = sys.getallocatedblocks() - before
    # A switch adds nothing the block holds: the same ceiling whether or not the device moved.
    assert held <= HELD_IN_THE_BLOCK[way]


@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("way", WAYS)
def test_borrows_keep_nothing(way: str, index: int) -> None:
    rt = EntryPointRuntime(2)
    borrow = WAYS[way]
    borrow(rt, index)
    rt.calls.clear()
    rt.c_calls.clear()
    before = sys.getallocatedblocks()
    for _ in range(BORROWS):
        borrow(rt, index)
        rt.calls.clear()
        rt.c_calls.clear()
    kept = sys.getallocatedblocks() - before
    # Far fewer than one per borrow: a borrow that kept anything would keep 10,000.
    assert kept < 20


class _Watching(EntryPointRuntime):
    """Offers no C entry points, so that the restore calls ``set_device`` in Python, where it looks."""

    __slots__ = ("seen", "watched")

    def __init__(self, device_count: int) -> None:
        super().__init__(device_count)
        self.watched = object()
        self.seen: list[int] = []

    def c_entry_points(self) -> None:  # type: ignore[override]
        return None

    def set_device(self, index: int, /) -> tuple[int]:
        self.seen.append(sys.getrefcount(self.watched))
        return super().set_device(index)


@pytest.mark.parametrize("way", ["device", "create"])
def test_leaving_a_block_copies_none_of_exits_arguments(way: str) -> None:
    # __exit__ is close, which takes *args: called as Python calls a function with no vectorcall of its own,
    # each call would copy its arguments into a tuple (two, through the bound method): held twice more.
    rt = _Watching(2)
    borrow: Any = guard_lib.device(1, runtime=rt)
    if way == "device":
        borrow.__enter__()
    else:
        borrow = DeviceGuard.create(1, runtime=rt).unwrap()
    rt.seen.clear()
    before = sys.getrefcount(rt.watched)
    borrow.__exit__(None, rt.watched, None)
    # Held once more than before, by the caller's own arguments alone.
    assert rt.seen == [before + 1]
    assert rt.current_device == 0

"""What an attack on the implementations found: cycles, stale or malformed entry points, runtimes kept alive,
thread identity. Each test runs on whichever implementation this process uses (plain pytest runs both)."""

from __future__ import annotations

import gc
import sys
import threading
import time
import warnings
import weakref
from typing import Any

import pytest

from guard_lib import DeviceGuard, GuardError, device
from guard_lib.runtime import DeviceRuntime, SimulatedRuntime, use_runtime

from .support import EntryPointRuntime, SlottedRuntime, current, select

# A collection at every check of what a test dropped: cheap on a frozen heap.
pytestmark = pytest.mark.usefixtures("frozen_heap")


class _KeepsItsExit(DeviceGuard):
    """A subclass that keeps its own bound ``__exit__``, as a cleanup list would: a cycle through it."""

    __slots__ = ("__dict__", "__weakref__")


def _cycle_through_exit(runtime: DeviceRuntime) -> weakref.ref[Any]:
    # Device 0: there on every runtime, one GPU included.
    guard: Any = _KeepsItsExit.create(0, runtime=runtime).unwrap()
    guard.cleanup = guard.__exit__
    guard.close()
    return weakref.ref(guard)


def test_a_guard_that_keeps_its_own_exit_is_freed_by_the_collector(rt: DeviceRuntime) -> None:
    gone = [_cycle_through_exit(rt) for _ in range(100)]
    gc.collect()
    assert [ref for ref in gone if ref() is not None] == []


class _Keeping(EntryPointRuntime):
    """A runtime that keeps what it is given, as an instrumentation wrapper might."""

    __slots__ = ("__dict__",)


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


# --- methods replaced after the runtime was used ---------------------------------------------------------


class _Open(EntryPointRuntime):
    __slots__ = ("__dict__",)


def _replace(runtime: Any, where: str) -> list[tuple[Any, ...]]:
    log: list[tuple[Any, ...]] = []

    def get_device(*_self: object) -> tuple[int, Any]:
        log.append(("get",))
        return SimulatedRuntime.get_device(runtime)

    def set_device(*args: Any) -> tuple[int]:
        log.append(("set", args[-1]))
        return SimulatedRuntime.set_device(runtime, args[-1])

    target = type(runtime) if where == "class" else runtime
    target.get_device = get_device
    target.set_device = set_device
    return log


def _replaceable(where: str) -> Any:
    if where == "slot":
        return SlottedRuntime(4)
    if where == "class":
        return type("_OwnClass", (EntryPointRuntime,), {"__slots__": ()})(4)
    return _Open(4)


@pytest.mark.parametrize("where", ["instance", "class", "slot"])
def test_methods_replaced_after_the_runtime_was_used_are_the_ones_called(where: str) -> None:
    runtime = _replaceable(where)
    DeviceGuard.create(1, runtime=runtime).unwrap().close()
    guard = DeviceGuard.create(1, runtime=runtime).unwrap()
    log = _replace(runtime, where)
    runtime.c_calls.clear()
    guard.close()
    with device(2, runtime=runtime):
        assert current(runtime) == 2
    assert current(runtime) == 0
    assert log == [("set", 0), ("get",), ("set", 2), ("set", 0)]
    assert runtime.c_calls == []


# --- offers of entry points that cannot be used -------------------------------------------------------


def _make_offering(answer: Any) -> EntryPointRuntime:
    class Offering(EntryPointRuntime):
        __slots__ = ()

        def c_entry_points(self) -> Any:
            return answer(*EntryPointRuntime.c_entry_points(self))

    return Offering(4)


def _raise(error: BaseException) -> Any:
    raise error


MALFORMED: dict[str, Any] = {
    "int": lambda get, set_: 5,
    "one": lambda get, set_: [get],
    "empty": lambda get, set_: (),
    "generator": lambda get, set_: (capsule for capsule in (get, set_)),
    "raises": lambda get, set_: _raise(RuntimeError("no entry points today")),
    "interrupted": lambda get, set_: _raise(KeyboardInterrupt()),
    "get-only": lambda get, set_: (get, None),
    "set-only": lambda get, set_: (5, set_),
}


class _UncallableOffer(EntryPointRuntime):
    __slots__ = ()
    c_entry_points = 5  # type: ignore[assignment]


@pytest.mark.parametrize("offer", [*MALFORMED, "uncallable"])
def test_an_offer_that_cannot_be_used_is_as_none(offer: str) -> None:
    runtime = _UncallableOffer(4) if offer == "uncallable" else _make_offering(MALFORMED[offer])
    with device(1, runtime=runtime):
        assert current(runtime) == 1
    DeviceGuard.create(2, runtime=runtime).unwrap().close()
    with use_runtime(runtime):
        DeviceGuard.create(3).unwrap().close()
        with device(1):
            assert current(runtime) == 1
    assert current(runtime) == 0
    assert runtime.c_calls == []


# --- nothing kept alive once the borrows ended --------------------------------------------------------


@pytest.mark.parametrize("kind", [SimulatedRuntime, EntryPointRuntime])
def test_a_runtime_used_then_dropped_is_freed(kind: type[SimulatedRuntime]) -> None:
    runtime = kind(2)
    with device(1, runtime=runtime):
        pass
    DeviceGuard.create(1, runtime=runtime).unwrap().close()
    gone = weakref.ref(runtime)
    del runtime
    gc.collect()
    assert gone() is None


@pytest.mark.parametrize("kind", [SimulatedRuntime, EntryPointRuntime])
def test_a_default_runtime_replaced_then_dropped_is_freed(kind: type[SimulatedRuntime]) -> None:
    runtime = kind(2)
    with use_runtime(runtime):
        with device(1):
            pass
        DeviceGuard.create(1).unwrap().close()
    gone = weakref.ref(runtime)
    del runtime
    gc.collect()
    assert gone() is None


class _Unreferable:
    """A runtime no weak reference can be made to, offering C entry points."""

    __slots__ = ("inner",)

    def __init__(self) -> None:
        self.inner = EntryPointRuntime(2)

    def get_device(self) -> tuple[int, Any]:
        return self.inner.get_device()

    def set_device(self, index: int, /) -> tuple[int]:
        return self.inner.set_device(index)

    def get_device_count(self) -> tuple[int, Any]:
        return self.inner.get_device_count()

    def get_last_error(self) -> tuple[int]:
        return self.inner.get_last_error()

    def peek_at_last_error(self) -> tuple[int]:
        return self.inner.peek_at_last_error()

    def error_name(self, code: int, /) -> str:
        return self.inner.error_name(code)

    def c_entry_points(self) -> tuple[object, object]:
        return self.inner.c_entry_points()


def test_a_runtime_without_weak_references_still_works() -> None:
    runtime = _Unreferable()
    with pytest.raises(TypeError):
        weakref.ref(runtime)
    for index in (1, 0, 1):
        with device(index, runtime=runtime):
            assert current(runtime.inner) == index
        DeviceGuard.create(index, runtime=runtime).unwrap().close()
    assert current(runtime.inner) == 0


# --- a thread's identity --------------------------------------------------------------------------------


def _on_new_thread(call: Any) -> Any:
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(call()))
    worker.start()
    worker.join()
    return done[0]


def _on_a_thread_with_ident(ident: int, call: Any) -> tuple[bool, Any]:
    """``call`` on a new thread that the system gave ``ident``, and True; False where none came.

    A finished thread's id goes to a later thread once the first has wholly exited, which a join does
    not wait for, and a thread that ends takes the place its id would be handed out from: so each new
    thread without the id is kept waiting, doing nothing, until one has it.
    """
    release = threading.Event()
    waiting: list[threading.Thread] = []
    try:
        for _ in range(100):
            done: list[Any] = []

            def attempt(done: list[Any] = done) -> None:
                if threading.get_ident() == ident:
                    done.append(call())
                else:
                    release.wait()

            worker = threading.Thread(target=attempt)
            worker.start()
            if worker.ident == ident:
                worker.join()
                return True, done[0]
            waiting.append(worker)
            time.sleep(0.001)
        return False, None
    finally:
        release.set()
        for worker in waiting:
            worker.join()


# Each guard is left open on purpose: its owner is gone, so nobody can close it.
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_a_guard_left_by_a_finished_thread_refuses_the_thread_that_reuses_its_id(
    sim: SimulatedRuntime,
) -> None:
    # Ownership must not follow the id, or the next thread would restore its own device to the first
    # one's original. Every guard here is tried from a thread that holds its creator's id.
    reused = 0
    for _ in range(10):
        guard, ident = _on_new_thread(
            lambda: (DeviceGuard.create(1, runtime=sim).unwrap(), threading.get_ident())
        )

        def close_elsewhere(guard: Any = guard) -> tuple[str, int]:
            select(sim, 3)
            try:
                guard.close()
            except GuardError as error:
                return str(error), current(sim)
            return "closed", current(sim)

        came, seen = _on_a_thread_with_ident(ident, close_elsewhere)
        if not came:
            continue
        reused += 1
        message, device_after = seen
        assert "belongs to the thread that created it" in message
        assert device_after == 3
    if not reused:
        pytest.skip("this system gave no finished thread's id to a new thread")


@pytest.fixture(autouse=True)
def _collect_after() -> Any:
    yield
    gc.collect()


# --- small differences between the implementations --------------------------------------------------------


def _named(cls: type) -> str:
    """The type as Python names it in an unset slot's AttributeError: with its module from 3.13."""
    return f"{cls.__module__}.{cls.__qualname__}" if sys.version_info >= (3, 13) else cls.__name__


@pytest.mark.parametrize("attribute", ["original_device", "current_device"])
def test_a_device_never_entered_has_no_devices_to_read(attribute: str) -> None:
    borrow = device(1, runtime=SimulatedRuntime(2))
    with pytest.raises(AttributeError, match=f"^'{_named(device)}' object has no attribute '_devices'$"):
        getattr(borrow, attribute)


@pytest.mark.parametrize(
    ("args", "kwargs"), [((), {}), ((None,), {}), ((0,), {}), ((), {"device_index": 0})], ids=repr
)
def test_a_guard_cannot_be_made_by_its_new_or_by_calling_its_class(
    args: tuple[object, ...], kwargs: dict[str, object]
) -> None:
    refusal = r"^DeviceGuard cannot be constructed directly: use DeviceGuard\.create"
    with pytest.raises(TypeError, match=refusal):
        DeviceGuard.__new__(DeviceGuard, *args, **kwargs)
    with pytest.raises(TypeError, match=refusal):
        DeviceGuard(*args, **kwargs)


class _Forbidding(DeviceGuard):
    """Refuses direct construction, as DeviceGuard itself does."""

    __slots__ = ()

    def __new__(cls, *args: object, **kwargs: object) -> Any:
        raise TypeError("made by create()")


def test_create_makes_a_subclass_without_asking_its_new() -> None:
    sim = SimulatedRuntime(2)
    guard = _Forbidding.create(1, runtime=sim).unwrap()
    assert type(guard) is _Forbidding
    assert current(sim) == 1
    guard.close()
    assert current(sim) == 0


def test_take_hands_a_subclass_guards_borrow_to_a_plain_guard() -> None:
    sim = SimulatedRuntime(2)
    guard = _Forbidding.create(1, runtime=sim).unwrap()
    taker = guard.take()
    assert type(taker) is DeviceGuard
    taker.close()
    assert current(sim) == 0


class _Bare(device):
    """Forgets to call device.__init__."""

    def __init__(self, device_index: object) -> None:
        self.index = device_index


def test_a_device_whose_init_never_ran_can_be_neither_entered_nor_closed() -> None:
    borrow = _Bare(1)
    missing = f"^'{_named(_Bare)}' object has no attribute '_restored'$"
    with pytest.raises(AttributeError, match=missing):
        borrow.__enter__()
    with pytest.raises(AttributeError, match=missing):
        borrow.close()
    with pytest.raises(AttributeError, match=f"^'{_named(_Bare)}' object has no attribute '_index'$"):
        borrow(len)

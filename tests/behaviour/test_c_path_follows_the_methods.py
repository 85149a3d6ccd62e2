"""A runtime's methods, not a stale cache, decide how the compiled core calls it.

The core calls a runtime through the C entry points it offers only while its ``get_device`` and
``set_device`` are the objects they were when it offered them, and keeps what it found in caches so that a
borrow does not look again. The reference always calls the methods. So, on both implementations: a method
replaced after the offer (on the instance, in a slot, by a new class) is the one called, wherever its object
lies in memory; an offer the core cannot use exactly is no offer; and nothing compares the runtime itself.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

import guard_lib
from guard_lib import DeviceGuard, device
from guard_lib.runtime import SimulatedRuntime

from .support import GET_DEVICE_SIGNATURE, SET_DEVICE_SIGNATURE, EntryPointRuntime

COMPILED = guard_lib.IMPLEMENTATION == "compiled"
KINDS = ["get_device", "set_device"]
# What one ``with device(1)`` calls: one read, then the switch and the switch back.
CALLS_PER_BORROW = {"get_device": 1, "set_device": 2}


def _simulate(kind: str, runtime: SimulatedRuntime, args: tuple[object, ...]) -> Any:
    method: Callable[..., Any] = getattr(SimulatedRuntime, kind)
    return method(runtime, *args)


class _Stand:
    """A ``get_device`` or ``set_device`` standing in for the runtime's own, logging its calls. Allows no
    weak reference, so the core must hold it strongly to know it again."""

    __slots__ = ("kind", "log", "runtime")

    def __init__(self, kind: str, runtime: SimulatedRuntime) -> None:
        self.kind, self.runtime = kind, runtime
        self.log: list[str] = []

    def __call__(self, *args: object) -> Any:
        self.log.append(self.kind)
        return _simulate(self.kind, self.runtime, args)


def _function(kind: str, runtime: SimulatedRuntime) -> Any:
    """The same as a plain function, which the core holds weakly."""

    def stand(*args: object) -> Any:
        stand.log.append(kind)  # type: ignore[attr-defined]
        return _simulate(kind, runtime, args)

    stand.log = []  # type: ignore[attr-defined]
    return stand


class _Open(EntryPointRuntime):
    """An EntryPointRuntime with a ``__dict__``, so that its methods can be replaced on the instance."""


@pytest.mark.parametrize("make", [_Stand, _function], ids=["callable", "function"])
@pytest.mark.parametrize("new_lies", ["below", "above"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_method_replaced_after_the_offer_is_called_wherever_it_lies(
    kind: str, new_lies: str, make: Callable[[str, SimulatedRuntime], Any]
) -> None:
    # The core knows a method again by identity: one object above or below the other in memory is another.
    rt = _Open(2)
    made = sorted((make(kind, rt) for _ in range(64)), key=id)
    old, new = (made[-1], made[0]) if new_lies == "below" else (made[0], made[-1])
    setattr(rt, kind, old)
    with device(1, runtime=rt):
        pass
    # unchanged since the offer, the core calls the C entry points; the reference calls the method
    assert old.log == ([] if COMPILED else [kind] * CALLS_PER_BORROW[kind])
    setattr(rt, kind, new)
    with device(1, runtime=rt):
        assert rt.current_device == 1
    assert new.log == [kind] * CALLS_PER_BORROW[kind]
    assert rt.current_device == 0


def _slotted(kind: str) -> type[EntryPointRuntime]:
    # A fresh class each time: some cases change it.
    return type(f"Slotted_{kind}", (EntryPointRuntime,), {"__slots__": (kind,)})


@pytest.mark.parametrize("class_changed_between", [False, True], ids=["same-class", "class-changed"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_method_held_in_a_slot_and_replaced_there_is_called(kind: str, class_changed_between: bool) -> None:
    # One method read from a slot, the other from the class: a change of the slot alone changes no type.
    rt = _slotted(kind)(2)
    old, new = _Stand(kind, rt), _Stand(kind, rt)
    setattr(rt, kind, old)
    with device(1, runtime=rt):
        pass
    if class_changed_between:
        # the type changes: the core looks again at both methods and records where each is found
        type(rt).unrelated = 1  # type: ignore[attr-defined]
        with device(1, runtime=rt):
            pass
    setattr(rt, kind, new)
    with device(1, runtime=rt):
        assert rt.current_device == 1
    assert new.log == [kind] * CALLS_PER_BORROW[kind]
    assert rt.current_device == 0


@pytest.mark.parametrize("new_class_is", ["older", "newer"])
def test_a_runtime_given_another_class_is_called_through_that_classs_method(new_class_is: str) -> None:
    # The core trusts a class's methods while the type's version stands; another class has another version,
    # lower or higher than the first's.
    log: list[str] = []

    class Base(EntryPointRuntime):
        __slots__ = ()

    def own_get_device(self: SimulatedRuntime) -> Any:
        log.append("get_device")
        return SimulatedRuntime.get_device(self)

    def with_own_method() -> type[Base]:
        cls = type("WithItsOwn", (Base,), {"__slots__": (), "get_device": own_get_device})
        getattr(cls, "get_device")  # noqa: B009 - the lookup gives the type its version now
        return cls

    older = with_own_method() if new_class_is == "older" else None
    start = type("Start", (Base,), {"__slots__": ()})
    rt = start(2)
    with device(1, runtime=rt):
        pass
    rt.__class__ = older if older is not None else with_own_method()
    with device(1, runtime=rt):
        assert rt.current_device == 1
    assert log == ["get_device"]
    assert rt.current_device == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_method_that_moves_from_the_class_to_a_slot_is_followed_there(kind: str) -> None:
    # The same function, found first on the class and then, the runtime's class changed, in a slot: the core
    # must note where it now lies, so that a later change of the slot alone is seen.
    log: list[str] = []
    base = type("Base", (EntryPointRuntime,), {"__slots__": (kind,)})

    def same(*args: object) -> Any:  # bound through the class it gets the runtime first
        log.append("same")
        return _simulate(kind, rt, args[1:] if args and args[0] is rt else args)

    by_class = type("ByClass", (base,), {"__slots__": (), kind: same})
    by_slot = type("BySlot", (base,), {"__slots__": ()})
    rt = by_class(2)
    base.__dict__[kind].__set__(rt, same)
    with device(1, runtime=rt):
        pass
    rt.__class__ = by_slot
    with device(1, runtime=rt):
        pass
    new = _Stand(kind, rt)
    setattr(rt, kind, new)
    with device(1, runtime=rt):
        assert rt.current_device == 1
    assert new.log == [kind] * CALLS_PER_BORROW[kind]
    assert rt.current_device == 0


# Names a capsule could carry that are not the exact signatures, held here so that their bytes outlive the
# capsules that point at them.
NOT_THE_SIGNATURES: dict[str, tuple[bytes | None, bytes | None]] = {
    "sorting-before": (b"Aaa (int *)", b"Aaa (int)"),
    "sorting-after": (b"zzz (int *)", b"zzz (int)"),
    "unnamed": (None, None),
    "get-unnamed": (None, SET_DEVICE_SIGNATURE),
    "set-unnamed": (GET_DEVICE_SIGNATURE, None),
    "get-longer": (GET_DEVICE_SIGNATURE + b" ", SET_DEVICE_SIGNATURE),
    "set-shorter": (GET_DEVICE_SIGNATURE, SET_DEVICE_SIGNATURE[:-1]),
}


class _Named(EntryPointRuntime):
    __slots__ = ("names",)

    def __init__(self, names: tuple[bytes | None, bytes | None]) -> None:
        super().__init__(2)
        self.names = names

    def c_entry_points(self) -> tuple[object, object]:
        return self.capsules(*self.names)


@pytest.mark.parametrize("names", NOT_THE_SIGNATURES.values(), ids=NOT_THE_SIGNATURES.keys())
def test_capsules_not_named_by_the_exact_signatures_are_no_offer(names: tuple[bytes | None, ...]) -> None:
    rt = _Named(names)  # type: ignore[arg-type]
    with device(1, runtime=rt):
        assert rt.current_device == 1
    assert rt.c_calls == []
    assert [op for op, _ in rt.calls] == ["get_device", "set_device", "set_device"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_method_that_is_a_property_is_called_through_python(kind: str) -> None:
    # What a property gives can only be known by running it: the core calls the runtime from Python.
    log: list[str] = []

    def give(self: SimulatedRuntime) -> Callable[..., Any]:
        def given(*args: object) -> Any:
            log.append(kind)
            return _simulate(kind, self, args)

        return given

    rt = type("Giving", (EntryPointRuntime,), {"__slots__": (), kind: property(give)})(2)
    with device(1, runtime=rt):
        assert rt.current_device == 1
    assert rt.current_device == 0
    assert log == [kind] * CALLS_PER_BORROW[kind]
    assert rt.c_calls == []


class _Comparing(EntryPointRuntime):
    """Logs every comparison made with it."""

    __slots__ = ("compared",)

    def __init__(self) -> None:
        super().__init__(2)
        self.compared: list[str] = []

    def __eq__(self, other: object) -> bool:
        self.compared.append("==")
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        self.compared.append("!=")
        return NotImplemented

    __hash__ = object.__hash__


def test_a_runtime_is_never_compared() -> None:
    rt = _Comparing()
    for _ in range(3):
        with device(1, runtime=rt):
            pass
        guard = DeviceGuard.create(1, runtime=rt).unwrap()
        guard.take().close()
        device(1, runtime=rt)(lambda: None)()
    assert rt.current_device == 0
    assert rt.compared == []


def test_a_bound_enter_called_through_its_call_refuses_an_argument() -> None:
    rt = SimulatedRuntime(2)
    borrow: Any = device(1, runtime=rt)
    with pytest.raises(TypeError):
        borrow.__enter__.__call__(5)
    assert (rt.current_device, rt.calls) == (0, [])
    assert borrow.__enter__.__call__() is borrow
    assert rt.current_device == 1
    borrow.__exit__.__call__(None, None, None)
    assert rt.current_device == 0


def test_a_decorated_function_has_type_params_exactly_as_the_references_python_wrapper() -> None:
    # From Python 3.12 every Python function has __type_params__ (empty unless generic) and functools.wraps
    # copies the wrapped one's; a wrapped callable without them (a partial, a builtin) leaves the wrapper's
    # own, empty. Before 3.12 there are none.
    def plain() -> None:
        pass

    def generic() -> None:
        pass

    params = (TypeVar("T"),)
    if sys.version_info >= (3, 12):
        generic.__type_params__ = params  # type: ignore[attr-defined]
    for function in (plain, generic, functools.partial(plain), len):
        decorated = device(0, runtime=SimulatedRuntime(2))(function)
        if sys.version_info >= (3, 12):
            assert decorated.__type_params__ == getattr(function, "__type_params__", ())
        else:
            assert not hasattr(decorated, "__type_params__")
    assert getattr(generic, "__type_params__", None) == (params if sys.version_info >= (3, 12) else None)


@pytest.mark.parametrize("module", ["some.where", "__main__", "builtins"])
def test_an_unmade_borrows_attribute_error_names_its_type_as_python_does(module: str) -> None:
    # Python words its own message by version (3.13 adds the module); an unset slot of a plain class shows
    # how, and the borrow's message must read the same.
    names = {"__module__": module, "__qualname__": "Outer.Unmade"}
    unmade = type("Unmade", (device,), {"__slots__": (), "__init__": lambda self: None, **names})
    plain = type("Unmade", (), {"__slots__": ("_restored",), **names})
    with pytest.raises(AttributeError) as pythons:
        plain()._restored  # noqa: B018
    with pytest.raises(AttributeError) as caught:
        unmade().__enter__()
    assert str(caught.value) == str(pythons.value)


@pytest.mark.parametrize("kind", KINDS)
def test_a_method_replaced_inside_the_block_puts_the_thread_back_where_the_caller_was(kind: str) -> None:
    # The offer no longer stands at the restore: the core restores through the new method, to the
    # device the caller was on, which here is not device 0.
    rt = _Open(4)
    rt.set_device(2)
    with device(1, runtime=rt):
        assert rt.current_device == 1
        setattr(rt, kind, _Stand(kind, rt))
    assert rt.current_device == 2


class _Plain(SimulatedRuntime):
    """Offers no C entry points, and counts how often it is asked for them."""

    __slots__ = ("asked",)

    def __init__(self, device_count: int) -> None:
        super().__init__(device_count)
        self.asked = 0

    def c_entry_points(self) -> None:
        self.asked += 1


def test_a_runtime_that_offers_nothing_is_asked_once_not_at_every_borrow() -> None:
    # Asking is a call into Python on every borrow: the core remembers the last runtime that offered
    # nothing (the reference never asks).
    rt = _Plain(2)
    for _ in range(3):
        with device(1, runtime=rt):
            assert rt.current_device == 1
    assert rt.asked == (1 if COMPILED else 0)
    assert rt.current_device == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_runtime_whose_method_only_python_can_read_is_never_asked_for_entry_points(kind: str) -> None:
    # An offer stands for the methods as the core read them; one it cannot read without running Python
    # (here a property) leaves nothing to check the offer against, so asking would be a call into Python
    # for nothing (the reference never asks).
    asked: list[str] = []

    def give(self: SimulatedRuntime) -> Callable[..., Any]:
        return functools.partial(getattr(SimulatedRuntime, kind), self)

    def c_entry_points(self: EntryPointRuntime) -> tuple[object, object]:
        asked.append(kind)
        return EntryPointRuntime.c_entry_points(self)

    namespace = {"__slots__": (), kind: property(give), "c_entry_points": c_entry_points}
    rt = type("Giving", (EntryPointRuntime,), namespace)(2)
    for _ in range(2):
        with device(1, runtime=rt):
            assert rt.current_device == 1
    assert (asked, rt.c_calls, rt.current_device) == ([], [], 0)


def test_a_runtime_whose_methods_sit_in_slots_is_called_through_its_entry_points_at_every_borrow() -> None:
    # As CudaRuntime's do: the core finds them in their slots, and a check of the slots alone keeps the
    # offer standing from one borrow to the next, also once a change of the class made it look again.
    cls = type("InSlots", (EntryPointRuntime,), {"__slots__": tuple(KINDS)})
    rt = cls(2)
    for kind in KINDS:
        setattr(rt, kind, functools.partial(getattr(SimulatedRuntime, kind), rt))
    for borrow in range(6):
        if borrow == 3:
            cls.unrelated = 1  # type: ignore[attr-defined]
        with device(1, runtime=rt):
            assert rt.current_device == 1
    assert rt.current_device == 0
    assert rt.c_calls == (["get_device", "set_device", "set_device"] * 6 if COMPILED else [])

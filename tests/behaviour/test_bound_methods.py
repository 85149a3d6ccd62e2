"""A borrow's ``__enter__`` and ``__exit__`` as a caller sees them, bound, in either implementation.

Both hand out Python's own bound methods. These tests pin that every call and every attribute of them is
what the reference's bound methods give.
"""

from __future__ import annotations

import inspect
import pickle
import types
from collections.abc import Callable
from typing import Any

import pytest

import guard_lib
from guard_lib import DeviceGuard, Err, GuardError, Ok, device
from guard_lib.runtime import SimulatedRuntime

COMPILED = guard_lib.IMPLEMENTATION == "compiled"

Make = Callable[[SimulatedRuntime], Any]
BORROWS: list[tuple[str, Make]] = [
    ("device", lambda rt: device(1, runtime=rt)),
    ("DeviceGuard", lambda rt: DeviceGuard.create(1, runtime=rt).unwrap()),
]


def _entered(kind: str, sim: SimulatedRuntime) -> Any:
    borrow = dict(BORROWS)[kind](sim)
    if kind == "device":
        borrow.__enter__()
    assert sim.current_device == 1
    return borrow


@pytest.mark.parametrize("kind", [k for k, _ in BORROWS])
def test_exit_is_close_bound_to_the_borrow(kind: str) -> None:
    rt = SimulatedRuntime(2)
    borrow = dict(BORROWS)[kind](rt)
    cls = type(borrow)
    bound = borrow.__exit__
    assert cls.__exit__ is cls.close
    assert bound.__self__ is borrow
    assert bound.__func__ is cls.close
    assert (bound.__name__, bound.__qualname__) == ("close", "_Borrow.close")
    assert bound.__doc__ == cls.close.__doc__
    assert bound.__doc__.startswith("Restore the caller's device.")
    assert [p.name for p in inspect.signature(bound).parameters.values()] == ["_exc_info"]
    assert repr(bound).startswith("<bound method _Borrow.close of <")
    assert bound == borrow.close == borrow.__exit__
    assert bound != device(1, runtime=rt).__exit__
    assert hash(bound) == hash(borrow.close)
    assert {"__func__", "__self__"} <= set(dir(bound))
    borrow.close()


@pytest.mark.parametrize("kind", [k for k, _ in BORROWS])
def test_enter_bound_reads_as_the_method(kind: str) -> None:
    rt = SimulatedRuntime(2)
    borrow = dict(BORROWS)[kind](rt)
    bound = borrow.__enter__
    assert bound.__self__ is borrow
    assert bound.__func__ is type(borrow).__enter__
    assert bound == borrow.__enter__
    assert list(inspect.signature(bound).parameters) == []
    borrow.close()


@pytest.mark.parametrize("kind", [k for k, _ in BORROWS])
@pytest.mark.parametrize("args", [(), (None, None, None), (ValueError, ValueError("x"), None, "extra")])
def test_exit_called_with_any_positional_arguments_restores(
    kind: str, sim: SimulatedRuntime, args: tuple[object, ...]
) -> None:
    borrow = _entered(kind, sim)
    assert borrow.__exit__(*args) is None
    assert sim.current_device == 0
    assert borrow._restored


@pytest.mark.parametrize("kind", [k for k, _ in BORROWS])
def test_exit_called_with_a_keyword_is_refused_and_restores_nothing(kind: str, sim: SimulatedRuntime) -> None:
    borrow = _entered(kind, sim)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'exc_type'"):
        borrow.__exit__(exc_type=None)
    assert sim.current_device == 1
    assert not borrow._restored
    borrow.__exit__()
    assert sim.current_device == 0


@pytest.mark.parametrize("kind", [k for k, _ in BORROWS])
def test_close_read_from_the_class_and_given_no_borrow_is_refused(kind: str, sim: SimulatedRuntime) -> None:
    borrow = _entered(kind, sim)
    with pytest.raises(TypeError, match=r"needs an argument|missing 1 required positional argument"):
        type(borrow).close()
    assert sim.current_device == 1
    type(borrow).close(borrow)
    assert sim.current_device == 0


@pytest.mark.parametrize("args", [(1,), ()])
def test_enter_called_with_arguments_is_refused_and_selects_nothing(
    sim: SimulatedRuntime, args: tuple[int]
) -> None:
    borrow: Any = device(1, runtime=sim)
    kwargs: dict[str, int] = {} if args else {"extra": 1}
    with pytest.raises(TypeError, match=r"\(\) (takes|got an unexpected keyword)"):
        borrow.__enter__(*args, **kwargs)
    assert sim.current_device == 0
    assert borrow._restored
    guard: Any = DeviceGuard.create(1, runtime=sim).unwrap()
    with pytest.raises(TypeError, match=r"\(\) (takes|got an unexpected keyword)"):
        guard.__enter__(*args, **kwargs)
    guard.close()
    assert sim.current_device == 0


def test_enter_returns_what_the_with_statement_binds(sim: SimulatedRuntime) -> None:
    borrow = device(1, runtime=sim)
    assert borrow.__enter__() is borrow
    assert sim.current_device == 1
    borrow.__exit__(None, None, None)
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    assert guard.__enter__() is guard
    # a guard selects on create: entering it calls nothing
    calls = len(sim.calls)
    with guard as bound:
        assert bound is guard
    assert [op for op, _ in sim.calls[calls:]] == ["set_device"]
    assert sim.current_device == 0


def test_a_bound_method_called_through_a_tuple_acts_as_called_directly(sim: SimulatedRuntime) -> None:
    # functools.partial and other wrappers call through tp_call with a tuple, not by vectorcall
    borrow: Any = device(1, runtime=sim)
    enter, leave = borrow.__enter__, borrow.__exit__
    assert enter.__call__() is borrow
    assert sim.current_device == 1
    leave.__call__(None, None, None)
    assert sim.current_device == 0
    with pytest.raises(TypeError, match="keyword argument"):
        leave.__call__(exc_type=None)


def test_bound_methods_are_pythons_own_in_both_implementations() -> None:
    borrow: Any = device(0, runtime=SimulatedRuntime(2))
    guard: Any = DeviceGuard.create(0, runtime=SimulatedRuntime(2)).unwrap()
    for bound in (borrow.__enter__, borrow.__exit__, guard.__enter__, guard.__exit__):
        assert type(bound) is types.MethodType
    guard.close()


def test_the_class_dictionary_entry_calls_and_reads_as_the_method() -> None:
    sim = SimulatedRuntime(2)
    borrow: Any = device(1, runtime=sim)
    borrow.__enter__()
    entry = vars(type(borrow).__mro__[1])["__exit__"]
    assert (entry.__name__, entry.__doc__) == ("close", type(borrow).close.__doc__)
    assert repr(entry) == repr(type(borrow).close)
    entry(borrow, None, None, None)
    assert sim.current_device == 0


@pytest.mark.skipif(not COMPILED, reason="the reference's functions act on anything")
def test_the_cores_methods_act_on_borrows_alone() -> None:
    entry = vars(type(device(0)).__mro__[1])["__exit__"]
    with pytest.raises(TypeError, match="_Borrow"):
        entry.__get__(42, int)()


def _refused_as_a_builtin_method(cls: type, method: str, other: object) -> None:
    """``cls.method(other)`` raises what a built-in type's method read from the class raises for a self of
    another type: before it reads or writes a field that ``other`` lays out differently, or not at all."""
    with pytest.raises(TypeError) as raised:
        getattr(cls, method)(other)
    assert str(raised.value) == (
        f"descriptor '{method}' for '{cls.__name__}' objects doesn't apply to a "
        f"'{type(other).__name__}' object"
    )


@pytest.mark.skipif(not COMPILED, reason="the reference's functions act on anything")
@pytest.mark.parametrize("method", ["is_ok", "is_err", "unwrap"])
@pytest.mark.parametrize("kind", ["Ok", "Err"])
def test_the_cores_result_methods_act_on_their_own_class_alone(kind: str, method: str) -> None:
    # Ok and Err lay out their fields alike: one's method on the other would answer, or raise, as its own.
    ok, err = Ok(1), Err(GuardError("refused", device_index=1))
    cls, other = (Ok, err) if kind == "Ok" else (Err, ok)
    _refused_as_a_builtin_method(cls, method, other)
    assert ok.is_ok()
    assert err.is_err()


@pytest.mark.skipif(not COMPILED, reason="the reference's functions act on anything")
@pytest.mark.parametrize("method", ["take", "__enter__"])
def test_the_cores_guard_methods_act_on_guards_alone(method: str) -> None:
    # A device held here lays out its fields as a guard does: taken or entered as one, it would be handed
    # over or entered again, where it is refused before anything is read.
    sim = SimulatedRuntime(2)
    with device(1, runtime=sim) as borrow:
        _refused_as_a_builtin_method(DeviceGuard, method, borrow)
        assert sim.current_device == 1
    assert sim.current_device == 0


@pytest.mark.skipif(not COMPILED, reason="the reference's functions act on anything")
def test_the_cores_device_enter_acts_on_devices_alone() -> None:
    # A closed guard lays out its fields as a device does: entered as one, it would select its device again.
    sim = SimulatedRuntime(2)
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    guard.close()
    _refused_as_a_builtin_method(device, "__enter__", guard)
    assert sim.current_device == 0
    assert [op for op, _ in sim.calls] == ["get_device", "set_device", "set_device"]


@pytest.mark.parametrize("kind", [k for k, _ in BORROWS])
def test_enter_read_from_the_class_returns_what_the_bound_one_does(kind: str) -> None:
    sim = SimulatedRuntime(2)
    borrow = dict(BORROWS)[kind](sim)
    assert type(borrow).__enter__(borrow) is borrow
    assert sim.current_device == 1
    borrow.close()


@pytest.mark.parametrize("kind", [k for k, _ in BORROWS])
def test_a_bound_method_pickles_as_its_borrow_does(kind: str) -> None:
    borrow = dict(BORROWS)[kind](SimulatedRuntime(2))
    for bound in (borrow.__enter__, borrow.__exit__):
        with pytest.raises(TypeError, match="cannot be pickled: it holds a thread's device selection"):
            pickle.dumps(bound)
    borrow.close()

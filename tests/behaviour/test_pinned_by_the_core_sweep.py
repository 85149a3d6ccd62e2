"""Behaviours of the compiled core that a sweep of its mutants showed no test pinned.

Each holds for the reference too (plain pytest runs whichever implementation this process uses), except
where a test says the compiled core's C path is the point: there the reference is held to what it does.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

import guard_lib
from guard_lib import DeviceGuard, GuardError, GuardTypeError, device
from guard_lib.cuda_errors import INVALID_VALUE, NO_DEVICE
from guard_lib.runtime import DeviceRuntime, SimulatedRuntime, use_runtime

from .support import EntryPointRuntime, refusal

COMPILED = guard_lib.IMPLEMENTATION == "compiled"


class _Unmade(device):
    """A subclass whose ``__init__`` never runs ``device.__init__``: a borrow that was never made."""

    def __init__(self) -> None:
        pass


# --- what a borrow's methods refuse ----------------------------------------------------------------------


def test_enter_and_exit_called_with_keywords_are_refused_as_any_method_would_be() -> None:
    # TypeError, the error of a wrong call, rather than one from inside: the borrow's state is untouched.
    rt = SimulatedRuntime(2)
    borrow: Any = device(1, runtime=rt)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'a'"):
        borrow.__enter__(a=1, b=2)
    assert rt.current_device == 0
    borrow.__enter__()
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'a'"):
        borrow.__exit__(a=1, b=2)
    assert rt.current_device == 1
    borrow.__exit__(None, None, None)
    assert rt.current_device == 0


def test_an_unmade_borrow_names_the_missing_field_and_itself_when_entered() -> None:
    # The AttributeError carries name and obj, as Python's own does, so tools that read them can say why.
    unmade = _Unmade()
    with pytest.raises(AttributeError) as caught:
        unmade.__enter__()
    assert caught.value.name == "_restored"
    assert caught.value.obj is unmade


def test_an_unentered_borrows_original_device_names_the_missing_field_and_itself() -> None:
    # Reading original_device before entering fails as an unset attribute does, naming field and object.
    borrow = device(0, runtime=SimulatedRuntime(2))
    with pytest.raises(AttributeError) as caught:
        borrow.original_device  # noqa: B018
    assert caught.value.name == "_devices"
    assert caught.value.obj is borrow


# --- how an index is read --------------------------------------------------------------------------------


def test_the_type_int_as_an_index_is_refused_as_a_type_not_raised(sim: SimulatedRuntime) -> None:
    # create never raises for a bad index: the class int itself comes back as an Err naming its type.
    error = refusal(DeviceGuard.create(int, runtime=sim))  # type: ignore[arg-type]
    assert isinstance(error, GuardTypeError)
    assert str(error) == "cannot select CUDA device <class 'int'>: a device index is an int, not type"
    assert sim.current_device == 0


def test_an_index_objects_index_method_is_called_once_per_entry(sim: SimulatedRuntime) -> None:
    # One conversion: an __index__ with side effects or changing answers selects what it first said.
    answers: list[int] = []

    class Index:
        def __index__(self) -> int:
            answers.append(1 if not answers else 0)
            return answers[-1]

    with device(Index(), runtime=sim):  # type: ignore[arg-type]
        assert answers == [1]
        assert sim.current_device == 1
    assert sim.current_device == 0


def test_an_index_object_beyond_a_c_long_long_is_refused_as_an_absent_device(sim: SimulatedRuntime) -> None:
    # A huge __index__ answer is compared as the int it converted to, so create returns an Err, not raises.
    class Huge:
        def __index__(self) -> int:
            return 2**70

    error = refusal(DeviceGuard.create(Huge(), runtime=sim))  # type: ignore[arg-type]
    assert str(error) == "cannot select CUDA device 1180591620717411303424: cudaErrorInvalidDevice"
    assert sim.current_device == 0


# --- the compiled core's C path --------------------------------------------------------------------------


def test_the_default_runtime_is_called_through_its_c_entry_points() -> None:
    # The core's C path serves the default runtime as it does a given one; the reference calls its methods.
    rt = EntryPointRuntime(2)
    with use_runtime(rt):
        with device(1):
            assert rt.current_device == 1
        DeviceGuard.create(1).unwrap().close()
    assert rt.current_device == 0
    assert rt.c_calls == (["get_device", "set_device", "set_device"] * 2 if COMPILED else [])
    assert [op for op, _ in rt.calls] == ["get_device", "set_device", "set_device"] * 2


def test_the_largest_c_int_index_takes_the_c_path() -> None:
    # 2**31-1 fits a C int, so the core asks the runtime's C entry points; the refusal reads the same.
    rt = EntryPointRuntime(2)
    error = refusal(DeviceGuard.create(2**31 - 1, runtime=rt))
    assert str(error) == "cannot select CUDA device 2147483647: cudaErrorInvalidDevice"
    assert rt.c_calls == (["get_device", "set_device"] if COMPILED else [])
    assert rt.calls == [("get_device", ()), ("set_device", (2147483647,)), ("get_device", ())]
    assert rt.current_device == 0


# --- a borrow entered again --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [(EntryPointRuntime, SimulatedRuntime), (SimulatedRuntime, EntryPointRuntime)],
    ids=["c-entry-then-plain", "plain-then-c-entry"],
)
def test_an_entry_that_cannot_read_the_device_keeps_the_last_entrys_devices(
    first: type[SimulatedRuntime], second: type[SimulatedRuntime]
) -> None:
    # A refused re-entry records nothing: current_device and original_device still tell the last borrow.
    borrow = device(1)
    with use_runtime(first(2)):
        with borrow:
            pass
    failing = second(2)
    failing.fail_next("get_device", NO_DEVICE)
    with use_runtime(failing), pytest.raises(GuardError, match="cannot read the current CUDA device"):
        with borrow:
            pass
    assert (borrow.current_device, borrow.original_device) == (1, 0)
    assert failing.current_device == 0


def test_a_reinitialised_entered_borrow_owes_nothing() -> None:
    # __init__ makes the borrow new: it forgets the old entry, so its exit calls nothing and moves nothing.
    rt = SimulatedRuntime(2)
    borrow = device(1, runtime=rt)
    borrow.__enter__()
    device.__init__(borrow, 1, runtime=rt)
    assert borrow._restored
    rt.calls.clear()
    borrow.__exit__(None, None, None)
    assert rt.calls == []
    assert rt.current_device == 1


# --- interrupts that land in every settling but the last ---------------------------------------------------


class _InterruptedReport(EntryPointRuntime):
    """A C switch that fails and moves the thread; reporting it and the first settling are interrupted."""

    armed = True

    def get_last_error(self) -> tuple[int]:
        if self.armed:
            self.armed = False
            self.raise_next("get_device", KeyboardInterrupt("during settling"))
            raise KeyboardInterrupt("while reporting the refusal")
        return super().get_last_error()


def test_an_entry_interrupted_while_reporting_and_settling_still_restores() -> None:
    # The outer handler settles again after an interrupted inner one: the thread ends where it began.
    rt = _InterruptedReport(2)
    rt.fail_next("set_device", INVALID_VALUE, moves_to=1)
    borrow = device(1, runtime=rt)
    with pytest.raises(KeyboardInterrupt, match="during settling"):
        with borrow:
            pytest.fail("the body ran")
    assert rt.current_device == 0
    assert borrow._restored


class _InterruptedTwice(SimulatedRuntime):
    """A switch that takes effect and is interrupted, and whose two settlings in the entry are too."""

    __slots__ = ()

    def set_device(self, index: int, /) -> tuple[int]:
        try:
            return super().set_device(index)
        except KeyboardInterrupt:
            for _ in range(2):
                self.raise_next("get_device", KeyboardInterrupt("during settling"))
            raise


def test_create_interrupted_through_both_settlings_of_its_entry_still_restores() -> None:
    # create settles a third time: the caller, who got no guard, is not left on the borrowed device.
    rt = _InterruptedTwice(2)
    rt.raise_next("set_device", KeyboardInterrupt("during switch"))
    with pytest.raises(KeyboardInterrupt):
        DeviceGuard.create(1, runtime=rt)
    assert rt.current_device == 0


def test_a_decorated_call_interrupted_through_both_settlings_of_its_entry_still_restores() -> None:
    # The wrapper settles a third time: the caller of the decorated function is left on its own device.
    rt = _InterruptedTwice(2)

    @device(1, runtime=rt)
    def work() -> str:
        return "ran"

    rt.raise_next("set_device", KeyboardInterrupt("during switch"))
    with pytest.raises(KeyboardInterrupt):
        work()
    assert rt.current_device == 0


# --- what the decorator refuses first ----------------------------------------------------------------------


def test_an_unmade_borrow_decorating_reads_its_index_first() -> None:
    # An unmade borrow fails on its missing index before judging what it decorates, as an unset field does.
    unmade = _Unmade()
    # Python 3.13 names the type with its module in this message; the field and the object are the point.
    with pytest.raises(AttributeError, match=r"_Unmade' object has no attribute '_index'$") as caught:
        unmade(5)  # type: ignore[arg-type]
    assert (caught.value.name, caught.value.obj) == ("_index", unmade)


def test_a_non_callable_is_refused_before_any_of_its_attributes_are_read() -> None:
    # TypeError for what cannot be decorated, never the object's own error from functools.wraps' reads.
    class Settings:
        def __init__(self) -> None:
            self._data: dict[str, object] = {}

        def __getattr__(self, name: str) -> object:
            return self._data[name]

    with pytest.raises(TypeError, match=r"^guard_lib\.device\(0\) decorates a function, not <"):
        device(0, runtime=SimulatedRuntime(2))(Settings())  # type: ignore[arg-type]


# --- close from another thread -----------------------------------------------------------------------------


def test_close_from_another_thread_refuses_before_comparing_devices() -> None:
    # The owner check comes first: no code of the runtime's answers runs on a thread the guard is not for.
    compared_on: list[str] = []

    class Device(int):
        def __ne__(self, other: object) -> bool:
            compared_on.append(threading.current_thread().name)
            return int.__ne__(self, other)

    class Runtime(SimulatedRuntime):
        __slots__ = ()

        def get_device(self) -> tuple[int, int | None]:
            code, index = super().get_device()
            return code, None if index is None else Device(index)

    rt: DeviceRuntime = Runtime(2)
    guard = DeviceGuard.create(1, runtime=rt).unwrap()
    refused: list[BaseException] = []

    def close_elsewhere() -> None:
        try:
            guard.close()
        except GuardError as error:
            refused.append(error)

    thread = threading.Thread(target=close_elsewhere, name="other")
    thread.start()
    thread.join()
    assert [type(error) for error in refused] == [GuardError]
    assert compared_on == []
    guard.close()


def test_init_called_again_on_a_made_guard_changes_nothing() -> None:
    # The reference's guard has object's __init__: on a made guard it accepts anything and does nothing.
    rt = SimulatedRuntime(3)
    guard: Any = DeviceGuard.create(1, runtime=rt).unwrap()
    assert guard.__init__() is None
    assert guard.__init__(2, runtime=rt) is None
    assert (guard.current_device, guard.original_device, rt.current_device) == (1, 0, 1)
    guard.close()
    assert rt.current_device == 0
    with pytest.raises(TypeError, match="DeviceGuard cannot be constructed directly"):
        DeviceGuard(1)

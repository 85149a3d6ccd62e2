"""Contracts that hand-written mutants, made apart from the catalogue and the engines, found unpinned."""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable

import pytest

from guard_lib import CallerStreamGuard, DeviceGuard, Err, GuardError, Ok, device
from guard_lib.runtime import SimulatedRuntime, use_runtime
from guard_lib.testing import assert_leaves_device

from .support import EntryPointRuntime, refusal


class _Card(enum.IntEnum):
    SECOND = 1


def test_an_int_subclass_index_is_read_as_the_plain_int_it_stands_for(sim: SimulatedRuntime) -> None:
    # The index is normalised once, by operator.index: what the runtime, the borrow and an error carry is
    # an int, never the caller's enum member.
    with device(_Card.SECOND, runtime=sim) as borrow:
        assert type(borrow.current_device) is int
    guard = DeviceGuard.create(_Card.SECOND, runtime=sim).unwrap()
    assert type(guard.current_device) is int
    guard.close()
    switches = [args[0] for name, args in sim.calls if name == "set_device"]
    assert switches == [1, 0, 1, 0]
    assert all(type(index) is int for index in switches)
    error = refusal(DeviceGuard.create(_Card.SECOND, runtime=type(sim)(1)))
    assert type(error.device_index) is int
    assert error.device_index == 1
    with pytest.raises(GuardError) as raised, device(_Card.SECOND, runtime=type(sim)(1)):
        pass
    assert type(raised.value.device_index) is int


def test_a_failed_switch_can_leave_the_thread_on_device_zero() -> None:
    rt = SimulatedRuntime(2)
    rt.set_device(1)
    rt.contexts.clear()
    rt.fail_next("set_device", 719, moves_to=0)
    assert rt.set_device(1) == (719,)
    assert rt.current_device == 0
    assert rt.contexts == {0}
    # Through a borrow: the caller on device 1 asks for 0, the switch fails there, and 1 is put back.
    rt = SimulatedRuntime(2)
    rt.set_device(1)
    rt.calls.clear()
    rt.fail_next("set_device", 719, moves_to=0)
    refusal(DeviceGuard.create(0, runtime=rt))
    assert rt.calls == [("get_device", ()), ("set_device", (0,)), ("get_device", ()), ("set_device", (1,))]
    assert rt.current_device == 1


class _Plain(SimulatedRuntime):
    __slots__ = ("during_switch",)
    during_switch: Callable[[], object]

    def set_device(self, index: int, /) -> tuple[int]:
        self.during_switch()
        return super().set_device(index)


class _WithEntryPoints(EntryPointRuntime):
    __slots__ = ("during_switch",)
    during_switch: Callable[[], object]

    def set_device(self, index: int, /) -> tuple[int]:
        self.during_switch()
        return super().set_device(index)


@pytest.mark.parametrize("kind", [_Plain, _WithEntryPoints])
def test_a_borrow_owes_its_restore_before_its_switch_runs(kind: type[_Plain | _WithEntryPoints]) -> None:
    # Code that runs during the switch (a runtime's callback, another thread sharing the borrow while the
    # real runtime releases the GIL) finds the borrow entered: it cannot enter it a second time.
    rt = kind(2)
    borrow = device(1, runtime=rt)
    seen: list[str] = []

    def enter_again() -> None:
        if seen:
            return
        try:
            borrow.__enter__()
            seen.append("entered twice")
        except GuardError as error:
            seen.append(str(error))

    rt.during_switch = enter_again
    if isinstance(rt, EntryPointRuntime):
        rt.during_c_switch = enter_again
    with borrow:
        pass
    assert seen == ["guard_lib.device(1) is already entered; it is not reentrant"]
    assert rt.calls == [("get_device", ()), ("set_device", (1,)), ("set_device", (0,))]
    assert rt.current_device == 0


def test_assert_leaves_device_reads_the_default_runtime_when_it_is_entered() -> None:
    first, second = SimulatedRuntime(2), SimulatedRuntime(2)
    with use_runtime(first):
        checker = assert_leaves_device()
    with (
        use_runtime(second),
        pytest.raises(AssertionError, match="left the current CUDA device at 1; it was 0 before"),
        checker,
    ):
        second.set_device(1)


class _FloatIndexRuntime(SimulatedRuntime):
    """A runtime that reports the device as a float: the checker reads it as the int it stands for."""

    __slots__ = ()

    def get_device(self) -> tuple[int, int]:
        code, index = super().get_device()
        return code, float(index or 0)  # type: ignore[return-value]


def test_assert_leaves_device_names_devices_as_ints() -> None:
    rt = _FloatIndexRuntime(2)
    with pytest.raises(AssertionError) as raised, assert_leaves_device(rt):
        rt.set_device(1)
    assert str(raised.value) == "the block left the current CUDA device at 1; it was 0 before"


def test_a_caller_stream_guard_exited_elsewhere_says_so_without_the_reset_behind_it() -> None:
    # The reset's ValueError is how the guard finds out, not what the caller is told.
    guard = CallerStreamGuard("mine")
    with guard:
        errors: list[BaseException] = []

        def exit_here() -> None:
            try:
                guard.__exit__(None, None, None)
            except GuardError as error:
                errors.append(error)

        worker = threading.Thread(target=exit_here)
        worker.start()
        worker.join()
    (error,) = errors
    assert error.__suppress_context__ is True
    assert error.__cause__ is None


def test_an_outcome_shows_its_value_as_repr_does() -> None:
    ok, err = Ok("1"), Err(GuardError("no", device_index=None))
    assert repr(ok) == "Ok('1')"
    assert repr(err) == "Err(GuardError('no'))"
    assert ok.is_ok()
    assert err.is_err()

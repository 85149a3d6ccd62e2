"""Contracts that hand-written mutants, made apart from the catalogue and the engines, found unpinned."""

from __future__ import annotations

import enum
import gc
import logging
import os
import subprocess
import sys
import textwrap
import threading
import types
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from guard_lib import CallerStreamGuard, DeviceGuard, Err, GuardError, Ok, cuda_errors, device, implementation
from guard_lib.runtime import SimulatedRuntime, use_runtime
from guard_lib.testing import assert_leaves_device

from .support import EntryPointRuntime, SlottedRuntime, refusal


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


# --- a third batch: the testing helpers, the simulated runtime's injections, messages and log records ---


def test_assert_leaves_device_shows_the_blocks_exception_behind_its_own() -> None:
    rt = SimulatedRuntime(2)
    with pytest.raises(AssertionError) as raised, assert_leaves_device(rt):
        rt.set_device(1)
        raise ValueError("backend failed")
    # Chained as context, and shown: the traceback tells what the block was doing when it left the device.
    assert isinstance(raised.value.__context__, ValueError)
    assert raised.value.__suppress_context__ is False


class _SimulatedKind(SimulatedRuntime):
    __slots__ = ()


def test_assert_leaves_device_gives_no_gpu_hint_for_any_simulated_runtime() -> None:
    rt = _SimulatedKind(2)
    rt.fail_next("get_device", cuda_errors.INSUFFICIENT_DRIVER)
    with pytest.raises(AssertionError) as raised, assert_leaves_device(rt):
        pass
    assert str(raised.value) == (
        "assert_leaves_device: cannot read the device before the block: cudaErrorInsufficientDriver"
    )


@pytest.mark.parametrize("op", ["get_device", "get_device_count"])
def test_only_set_device_can_move_the_thread_even_to_device_zero(op: str) -> None:
    rt = SimulatedRuntime(2)
    with pytest.raises(ValueError, match=r"^fail_next: only set_device can move the thread \(moves_to\)$"):
        rt.fail_next(op, cuda_errors.LAUNCH_FAILURE, moves_to=0)
    assert getattr(rt, op)()[0] == 0  # nothing was armed


def test_a_decorated_function_keeps_the_borrow_it_was_decorated_with(sim: SimulatedRuntime) -> None:
    borrow = device(1, runtime=sim)

    @borrow
    def where() -> int:
        return sim.current_device

    other = SimulatedRuntime(4)
    borrow.__init__(2, runtime=other)  # type: ignore[misc]
    assert where() == 1
    assert other.calls == []


def test_an_unreadable_build_note_is_as_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A note that cannot be read (a folder in its place, no permission) says nothing: the choice falls
    # back as where the build left none, and importing guard_lib never fails for it.
    monkeypatch.setattr(implementation, "_NOTE", str(tmp_path))
    assert implementation._build_note() is None


def test_a_bad_index_names_its_type_by_its_plain_name(sim: SimulatedRuntime) -> None:
    class Handle:
        def __repr__(self) -> str:
            return "<handle>"

    error = refusal(DeviceGuard.create(Handle(), runtime=sim))  # type: ignore[arg-type]
    assert str(error) == "cannot select CUDA device <handle>: a device index is an int, not Handle"
    # raised where it is made, from no other exception: nothing is chained to it
    assert error.__context__ is None


def test_a_generator_function_is_refused_by_its_qualified_name(sim: SimulatedRuntime) -> None:
    class Backend:
        def batches(self) -> Iterator[int]:
            yield 1

    with pytest.raises(TypeError) as raised:
        device(1, runtime=sim)(Backend.batches)
    assert str(raised.value) == (
        "guard_lib.device cannot decorate "
        "test_a_generator_function_is_refused_by_its_qualified_name.<locals>.Backend.batches, "
        "a generator function: its body runs after the call returns, outside the borrow"
    )


def test_a_failed_restore_logs_its_values_as_the_records_arguments(
    sim: SimulatedRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    # A handler that groups records by their message, or reads the devices, finds them as arguments.
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    sim.fail_next("set_device", cuda_errors.LAUNCH_FAILURE)
    with caplog.at_level(logging.ERROR, logger="guard_lib"):
        guard.close()
    (record,) = caplog.records
    assert record.msg == (
        "could not restore CUDA device %d after selecting device %d: %s; "
        "this thread may still be on device %d"
    )
    assert record.args == (0, 1, "cudaErrorLaunchFailure", 1)


# --- the third batch in the core: which path a runtime is called through, and what a borrow holds ---


def test_set_device_replaced_alone_in_its_slot_is_called() -> None:
    rt = SlottedRuntime(4)
    with device(1, runtime=rt):
        pass
    switched: list[int] = []

    def set_device(index: int) -> tuple[int]:
        switched.append(index)
        return SimulatedRuntime.set_device(rt, index)

    rt.set_device = set_device  # type: ignore[method-assign]
    rt.c_calls.clear()
    with device(2, runtime=rt):
        pass
    assert switched == [2, 0]
    # the replaced method, not the entry point it replaced, switched both ways
    assert "set_device" not in rt.c_calls


class _Either:
    """Serves either call, by its arguments, and logs its name: two of these may change slots."""

    def __init__(self, name: str, runtime: SimulatedRuntime, log: list[str]) -> None:
        self.name, self.runtime, self.log = name, runtime, log

    def __call__(self, *args: int) -> Any:
        self.log.append(self.name)
        if args:
            return SimulatedRuntime.set_device(self.runtime, *args)
        return SimulatedRuntime.get_device(self.runtime)


def test_methods_that_changed_slots_are_called() -> None:
    log: list[str] = []
    rt = SlottedRuntime(4)
    rt.get_device, rt.set_device = _Either("A", rt, log), _Either("B", rt, log)  # type: ignore[method-assign]
    with device(1, runtime=rt):
        pass
    log.clear()
    rt.c_calls.clear()
    rt.get_device, rt.set_device = rt.set_device, rt.get_device  # type: ignore[method-assign]
    with device(2, runtime=rt):
        pass
    assert log == ["B", "A", "A"]
    assert rt.c_calls == []
    assert rt.current_device == 0


def test_a_slotted_runtime_moved_to_a_class_with_its_own_get_device_is_called_through_it() -> None:
    log: list[str] = []

    class Overriding(SlottedRuntime):
        __slots__ = ()

        def get_device(self) -> tuple[int, int | None]:
            log.append("class get_device")
            return SimulatedRuntime.get_device(self)

    rt = SlottedRuntime(4)
    with device(1, runtime=rt):
        pass
    rt.__class__ = Overriding
    rt.c_calls.clear()
    with device(2, runtime=rt):
        pass
    assert log == ["class get_device"]
    assert rt.c_calls == []


class _LooksUpItself(EntryPointRuntime):
    """Answers get_device and set_device with wrappers of its own, made by its ``__getattribute__``."""

    __slots__ = ("log",)
    log: list[str]

    def __getattribute__(self, name: str) -> Any:
        found = object.__getattribute__(self, name)
        if name not in ("get_device", "set_device"):
            return found
        log: list[str] = object.__getattribute__(self, "log")

        def wrapped(*args: int) -> Any:
            log.append(name)
            return found(*args)

        return wrapped


def test_a_runtime_that_looks_up_its_own_attributes_is_called_through_them() -> None:
    rt = _LooksUpItself(2)
    rt.log = []
    with device(1, runtime=rt):
        pass
    assert rt.log == ["get_device", "set_device", "set_device"]
    assert rt.c_calls == []


class _Open(EntryPointRuntime):
    """Offers C entry points, with a ``__dict__`` of its own."""


def test_a_runtime_with_its_methods_in_its_dict_is_not_kept_alive() -> None:
    rt = _Open(2)
    rt.get_device = types.MethodType(SimulatedRuntime.get_device, rt)  # type: ignore[method-assign]
    rt.set_device = types.MethodType(SimulatedRuntime.set_device, rt)  # type: ignore[method-assign]
    with device(1, runtime=rt):
        pass
    gone = weakref.ref(rt)
    del rt
    gc.collect()
    assert gone() is None


def test_a_runtimes_dict_is_looked_at_without_a_reference_kept() -> None:
    class Payload:
        pass

    rt = _Open(2)
    rt.payload = Payload()  # type: ignore[attr-defined]
    with device(1, runtime=rt):
        pass
    before = sys.getrefcount(rt.__dict__)
    for _ in range(100):
        with device(1, runtime=rt):
            pass
    # a reference kept per borrow would be a hundred; the few around the count are the test's own
    grew = sys.getrefcount(rt.__dict__) - before
    assert grew < 10
    held = weakref.ref(rt.payload)  # type: ignore[attr-defined]
    del rt
    gc.collect()
    assert held() is None


def test_making_a_guard_keeps_no_reference_it_took(sim: SimulatedRuntime) -> None:
    # The core makes each guard with an empty tuple of arguments. From Python 3.12 the empty tuple is
    # immortal and its count never moves; before, a reference kept per guard shows here.
    DeviceGuard.create(1, runtime=sim).unwrap().take().close()
    before = sys.getrefcount(())
    for _ in range(100):
        DeviceGuard.create(1, runtime=sim).unwrap().take().close()
    grew = sys.getrefcount(()) - before
    assert grew < 10


# --- a fourth batch ---


class _FalsyCode(SimulatedRuntime):
    """Answers a read that succeeded with a falsy code that is not the int 0."""

    __slots__ = ("success",)
    success: object

    def get_device(self) -> tuple[Any, int | None]:
        code, index = super().get_device()
        return (self.success if code == 0 else code), index


@pytest.mark.parametrize("success", [None, False, 0.0], ids=repr)
def test_a_read_that_answers_any_falsy_code_succeeded(success: object) -> None:
    # As the reference reads a code: by its truth, whatever its type.
    rt = _FalsyCode(2)
    rt.success = success
    guard = DeviceGuard.create(1, runtime=rt).unwrap()
    assert (guard.original_device, guard.current_device) == (0, 1)
    guard.close()
    assert rt.current_device == 0


# --- a fifth batch ---


@pytest.mark.parametrize("value", ["PYTHON", "Compiled", " Auto "])
def test_the_implementation_is_named_in_lower_case_only(value: str) -> None:
    # One spelling per choice, as the docs give it: what a shell's case conventions produce is refused
    # by name rather than read as one of them.
    with pytest.raises(ImportError) as raised:
        implementation._choose({implementation.IMPL_ENV: value})
    assert str(raised.value) == (
        f"GUARD_LIB_IMPL={value.strip()!r} names no implementation: use one of auto, compiled, python"
    )


# --- a whole sweep run, whose order of tests left these to chance ---


# Its check runs in a child interpreter, whose lines coverage ties to no test: the sweep runs it as it runs
# the tests under a tracer of their own, for every mutant whose other tests pass.
def test_a_process_whose_first_borrow_is_under_use_runtime_follows_every_later_default() -> None:
    # The core keeps the default it read last while the runtime module's dictionary is unchanged. The
    # first read of a process decides what it holds, so the check runs in a process of its own: here its
    # first borrow finds a default set by use_runtime. Started from this process's directory and
    # environment, it imports the guard_lib these tests run.
    program = textwrap.dedent(
        """
        from guard_lib import device
        from guard_lib.runtime import SimulatedRuntime, use_runtime

        first, second = SimulatedRuntime(2), SimulatedRuntime(2)
        for runtime in (first, second, first):
            with use_runtime(runtime), device(1):
                pass
        print(len(first.calls), len(second.calls))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False, cwd=os.getcwd()
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["6", "3"]

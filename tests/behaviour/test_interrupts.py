"""An interrupt at any instruction inside guard_lib leaves no device moved that nobody owes.

The invariant: wherever a KeyboardInterrupt lands inside ``create``, ``device.__enter__`` / ``__exit__``,
a function decorated with ``@device(i)``, ``close``, ``take``, ``CallerStreamGuard`` or ``Result``, once
the caller's own ``with`` blocks have run, the thread is where the uninterrupted run leaves it, or on a
device that a guard the caller holds still owes (and closing the guards it holds puts the thread there).
No restore is ever repeated: no selection of the device the thread is already on. No finaliser complains.

A tracer counts the instructions executed in guard_lib's own frames and raises KeyboardInterrupt before
the N-th, for every N, on every path, except at the boundary with the caller: the entry of a frame
called from outside guard_lib (before its first statement does anything) and its return there. An
interrupt at either is one in the caller's code, just before the call or just after it. The simulated
runtime stands for C code and is not interrupted midway; ``raise_next`` covers a runtime call that
raises after taking effect. Finalisers are not interrupted either: an exception there is only ever
printed, never raised to the caller.
"""

from __future__ import annotations

import ctypes
import dis
import functools
import gc
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest

import guard_lib
from guard_lib import CallerStreamGuard, DeviceGuard, Err, Ok, cuda_errors, device, get_caller_stream
from guard_lib.runtime import SimulatedRuntime

from .support import GET_DEVICE_SIGNATURE, SET_DEVICE_SIGNATURE

# Every test here runs under its own tracer, in coverage's place: the sweep runs them by this mark.

_LIB = Path(guard_lib.__file__).resolve().parent
_COMPILED = guard_lib.IMPLEMENTATION == "compiled"
# For the Python implementation the simulated runtime stands for C code. The compiled core runs no Python
# instruction of its own: an interrupt can surface only from the Python it calls, so there the runtime's
# every instruction, its entry and its return, is where one lands. The plugin is the tests' own.
_NOT_INTERRUPTED = {_LIB / "testing.py"} if _COMPILED else {_LIB / "simulated.py", _LIB / "testing.py"}
_RUNTIME = _LIB / "simulated.py"


@functools.cache
def _in_the_library(filename: str) -> bool:
    path = Path(filename).resolve()
    return path.parent == _LIB and path not in _NOT_INTERRUPTED


@functools.cache
def _is_the_runtime(filename: str) -> bool:
    return Path(filename).resolve() == _RUNTIME


def _in_the_runtime(frame: FrameType) -> bool:
    code = frame.f_code
    return _COMPILED and (code is WatchedRuntime.set_device.__code__ or _is_the_runtime(code.co_filename))


def _interruptible(frame: FrameType) -> bool:
    if _in_the_runtime(frame):
        return True
    return _in_the_library(frame.f_code.co_filename) and frame.f_code.co_name != "__del__"


# The C entry points' callbacks stand for CUDA's C functions: nothing under them is interrupted (ctypes
# would only print an exception raised there).
_C_CALLBACKS: set[CodeType] = set()


def _under_a_c_call(frame: FrameType) -> bool:
    caller = frame.f_back
    while caller is not None:
        if caller.f_code in _C_CALLBACKS:
            return True
        caller = caller.f_back
    return False


_RETURNS = {dis.opmap[name] for name in ("RETURN_VALUE", "RETURN_CONST") if name in dis.opmap}
_PRELUDE = {dis.opmap[name] for name in ("RESUME", "NOP", "COPY_FREE_VARS", "MAKE_CELL") if name in dis.opmap}
# Inline caches (3.11 on) are slots of the instruction before them, never executed; 3.10 has none.
_CACHE = dis.opmap.get("CACHE")


def _at_the_boundary(frame: FrameType) -> bool:
    """Whether the frame, called from outside guard_lib, is at its entry or its return.

    An interrupt there is one in the caller just before the call or just after it: CPython's ``with``
    statement can lose ``__exit__`` there for every context manager (gh-74174), and a value being
    returned is the caller's already.
    """
    caller = frame.f_back
    if _in_the_runtime(frame) or (caller is not None and _interruptible(caller)):
        # A runtime called from the compiled core has that core, not the caller, on either side of it.
        return False
    code, at = frame.f_code.co_code, frame.f_lasti
    if code[at] in _RETURNS:
        return True
    # The first instruction is the entry: Python 3.10 has no RESUME to stand before the function's own.
    return at == 0 or all(
        code[offset] in _PRELUDE for offset in range(0, at + 1, 2) if code[offset] != _CACHE
    )


class Interrupter:
    """Raise KeyboardInterrupt before the ``at``-th instruction executed in guard_lib (never if 0)."""

    def __init__(self, at: int, on_fire: Callable[[], None]) -> None:
        self.at = at
        self.on_fire = on_fire
        self.count = 0
        self.fired = False

    def _global(self, frame: FrameType, event: str, arg: object) -> Any:
        if event == "call" and _interruptible(frame) and not _under_a_c_call(frame):
            # f_trace first: Python 3.12 switches opcode events on only for a frame that has a tracer
            frame.f_trace = self._local
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
            return self._local
        return None

    def _local(self, frame: FrameType, event: str, arg: object) -> Any:
        if event == "opcode" and not _at_the_boundary(frame):
            self.count += 1
            if self.count == self.at:
                self.fired = True
                self.on_fire()
                # Raising from the tracer raises in the traced frame, before this instruction runs.
                raise KeyboardInterrupt(f"instruction {self.at}")
        return self._local

    @contextmanager
    def active(self) -> Iterator[None]:
        if self.at < 0:
            # no tracer at all: coverage sees which lines a scenario runs, and so which tests reach them
            yield
            return
        # Coverage's tracer steps aside meanwhile: the lines only an interrupt reaches are marked
        # "# interrupted" and left out of the coverage figure; this test and the mutants prove them.
        previous = sys.gettrace()
        sys.settrace(self._global)
        try:
            yield
        finally:
            sys.settrace(previous)


class WatchedRuntime(SimulatedRuntime):
    """Records every selection of the device the thread is already on: a restore done twice."""

    __slots__ = ("repeated",)

    def __init__(self, device_count: int) -> None:
        super().__init__(device_count)
        self.repeated: list[int] = []

    def set_device(self, index: int, /) -> tuple[int]:
        if index == self.current_device:
            self.repeated.append(index)
        return super().set_device(index)


# The thread's note of the exception being handled, which an except block sets and its cleanup puts back.
_set_handled = ctypes.pythonapi.PyErr_SetExcInfo
_set_handled.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_set_handled.restype = None


def _forget_a_handled_exception_left_behind() -> None:
    """The tracer raises at every instruction, also inside an except block's own cleanup, where no signal
    lands: there the interpreter can be left noting the caught exception as still handled, and every
    exception this thread raises later takes it as its ``__context__``. Only the tracer does this; a test
    after this one must find the thread as a signal would have left it. Call it where nothing is handled."""
    if sys.exc_info()[1] is not None:
        _set_handled(None, None, None)


_capsule = ctypes.pythonapi.PyCapsule_New
_capsule.restype = ctypes.py_object
_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_GetDevice = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int))
_SetDevice = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)


class WatchedEntryPointRuntime(WatchedRuntime):
    """The watched runtime offering C entry points, as CudaRuntime does: the compiled core's C path."""

    __slots__ = ("_c_get_device", "_c_set_device")

    def __init__(self, device_count: int) -> None:
        super().__init__(device_count)

        def c_get_device(out: Any) -> int:
            code, index = self.get_device()
            if not code:
                out[0] = index
            return int(code)

        def c_set_device(index: int) -> int:
            return int(self.set_device(index)[0])

        _C_CALLBACKS.update((c_get_device.__code__, c_set_device.__code__))
        self._c_get_device = _GetDevice(c_get_device)
        self._c_set_device = _SetDevice(c_set_device)

    def c_entry_points(self) -> tuple[object, object]:
        return (
            _capsule(ctypes.cast(self._c_get_device, ctypes.c_void_p), GET_DEVICE_SIGNATURE, None),
            _capsule(ctypes.cast(self._c_set_device, ctypes.c_void_p), SET_DEVICE_SIGNATURE, None),
        )


@dataclass
class Held:
    """What the caller's code holds, in the order it got hold of it."""

    objects: list[object] = field(default_factory=list)

    def __call__(self, obj: object) -> Any:
        self.objects.append(obj)
        return obj

    def owing(self) -> list[Any]:
        guards: list[Any] = []
        for held in self.objects:
            obj = held._value if isinstance(held, Ok) else held
            if isinstance(obj, (DeviceGuard, device)) and not getattr(obj, "_restored", True):
                guards.append(obj)
        return guards


Scenario = Callable[[WatchedRuntime, Held], None]


def _with_guard(rt: WatchedRuntime, hold: Held, index: int) -> None:
    result = hold(DeviceGuard.create(index, runtime=rt))
    match result:
        case Ok(guard):
            with guard:
                pass
        case Err(error):
            assert isinstance(error, guard_lib.GuardError)


def already_current(rt: WatchedRuntime, hold: Held) -> None:
    _with_guard(rt, hold, 0)


def switch(rt: WatchedRuntime, hold: Held) -> None:
    _with_guard(rt, hold, 1)


def device_switch(rt: WatchedRuntime, hold: Held) -> None:
    borrow = device(1, runtime=rt)
    with borrow:
        # Held only once entered: a with statement whose __enter__ raised never calls __exit__.
        hold(borrow)


def device_already_current(rt: WatchedRuntime, hold: Held) -> None:
    borrow = device(0, runtime=rt)
    with borrow:
        hold(borrow)


def failed_switch_that_moved(rt: WatchedRuntime, hold: Held) -> None:
    rt.fail_next("set_device", cuda_errors.LAUNCH_FAILURE, moves_to=1)
    _with_guard(rt, hold, 1)


def failed_switch_that_did_not_move(rt: WatchedRuntime, hold: Held) -> None:
    _with_guard(rt, hold, 7)


def device_failed_switch_that_moved(rt: WatchedRuntime, hold: Held) -> None:
    rt.fail_next("set_device", cuda_errors.LAUNCH_FAILURE, moves_to=1)
    borrow = device(1, runtime=rt)
    with pytest.raises(guard_lib.GuardError), borrow:
        hold(borrow)
        raise AssertionError("the body ran on a refused borrow")


def device_failed_switch_and_failed_restore(rt: WatchedRuntime, hold: Held) -> None:
    rt.fail_next("set_device", cuda_errors.LAUNCH_FAILURE, moves_to=1)
    rt.fail_next("set_device", cuda_errors.LAUNCH_FAILURE)
    borrow = device(1, runtime=rt)
    with pytest.raises(guard_lib.GuardError), borrow:
        hold(borrow)
        raise AssertionError("the body ran on a refused borrow")


def failed_switch_unreadable_after(rt: WatchedRuntime, hold: Held) -> None:
    rt.fail_next("set_device", cuda_errors.LAUNCH_FAILURE, moves_to=1)
    rt.fail_next("get_device", cuda_errors.LAUNCH_FAILURE)
    rt.fail_next("get_device", cuda_errors.LAUNCH_FAILURE)
    # The first read is the guard's own, before the switch: the guard refuses; nothing moved.
    _with_guard(rt, hold, 1)


def failed_restore(rt: WatchedRuntime, hold: Held) -> None:
    result = hold(DeviceGuard.create(1, runtime=rt))
    guard = result.unwrap()
    with guard:
        rt.fail_next("set_device", cuda_errors.LAUNCH_FAILURE)


def take(rt: WatchedRuntime, hold: Held) -> None:
    guard = hold(hold(DeviceGuard.create(1, runtime=rt)).unwrap())
    with guard:
        taker = hold(guard.take())
        with taker:
            pass


def nested(rt: WatchedRuntime, hold: Held) -> None:
    outer = hold(hold(DeviceGuard.create(1, runtime=rt)).unwrap())
    with outer:
        borrow = device(2, runtime=rt)
        with borrow:
            hold(borrow)
            inner = hold(hold(DeviceGuard.create(3, runtime=rt)).unwrap())
            with inner:
                pass
        assert rt.current_device == 1


def switch_raises_after_effect(rt: WatchedRuntime, hold: Held) -> None:
    rt.raise_next("set_device", KeyboardInterrupt("from the runtime"))
    _with_guard(rt, hold, 1)


def restore_raises_after_effect(rt: WatchedRuntime, hold: Held) -> None:
    borrow = device(1, runtime=rt)
    with borrow:
        hold(borrow)
        rt.raise_next("set_device", KeyboardInterrupt("from the runtime"))


def device_switch_raises_after_effect(rt: WatchedRuntime, hold: Held) -> None:
    rt.raise_next("set_device", KeyboardInterrupt("from the runtime"))
    borrow = device(1, runtime=rt)
    with borrow:
        hold(borrow)
        raise AssertionError("the body ran after an interrupted enter")


def read_raises(rt: WatchedRuntime, hold: Held) -> None:
    rt.raise_next("get_device", KeyboardInterrupt("from the runtime"))
    _with_guard(rt, hold, 1)


def stream_guard(rt: WatchedRuntime, hold: Held) -> None:
    with CallerStreamGuard("outer"):
        try:
            with CallerStreamGuard("inner"):
                assert get_caller_stream() == "inner"
        finally:
            # interrupted or not, leaving the inner guard gives the outer selection back
            if get_caller_stream() != "outer":
                raise AssertionError(f"the outer stream was lost: {get_caller_stream()!r}")


def result_inspected(rt: WatchedRuntime, hold: Held) -> None:
    result = hold(DeviceGuard.create(1, runtime=rt))
    assert result.is_ok()
    assert not result.is_err()
    guard = result.value
    with guard:
        pass
    refused = hold(DeviceGuard.create(9, runtime=rt))
    assert refused.is_err()
    assert not refused.is_ok()
    assert refused.error.device_index == 9
    with pytest.raises(guard_lib.GuardError):
        refused.unwrap()
    assert repr(result).startswith("Ok(")
    assert repr(refused).startswith("Err(")


def decorated(rt: WatchedRuntime, hold: Held) -> None:
    @device(1, runtime=rt)
    def work() -> int:
        assert rt.current_device == 1
        return 7

    @device(2, runtime=rt)
    def fails() -> None:
        raise ValueError("the backend failed")

    assert work() == 7
    with pytest.raises(ValueError, match="the backend failed"):
        fails()


def decorated_failed_switch_that_moved(rt: WatchedRuntime, hold: Held) -> None:
    @device(1, runtime=rt)
    def work() -> None:
        raise AssertionError("the body ran on a refused borrow")

    rt.fail_next("set_device", cuda_errors.LAUNCH_FAILURE, moves_to=1)
    with pytest.raises(guard_lib.GuardError):
        work()


def shared_device_held_elsewhere(rt: WatchedRuntime, hold: Held) -> None:
    # Another thread holds this device object's borrow, so this thread's with is a borrow of its own.
    shared = device(1, runtime=rt)
    entered, release = threading.Event(), threading.Event()

    def holder() -> None:
        with shared:
            entered.set()
            release.wait(10)

    other = threading.Thread(target=holder)
    other.start()
    try:
        entered.wait(10)
        with shared as mine:
            hold(mine)
    finally:
        # Under the compiled core the simulated runtime's Python is interrupted too, and can be left
        # holding its lock on this thread: the holder's exit must not wait on a lock nobody will release.
        rt._lock = threading.RLock()
        release.set()
        other.join()


SCENARIOS: dict[str, Scenario] = {
    f.__name__: f
    for f in (
        already_current,
        switch,
        device_switch,
        device_already_current,
        failed_switch_that_moved,
        failed_switch_that_did_not_move,
        device_failed_switch_that_moved,
        device_failed_switch_and_failed_restore,
        failed_switch_unreadable_after,
        failed_restore,
        take,
        nested,
        switch_raises_after_effect,
        device_switch_raises_after_effect,
        restore_raises_after_effect,
        read_raises,
        stream_guard,
        result_inspected,
        decorated,
        decorated_failed_switch_that_moved,
        shared_device_held_elsewhere,
    )
}


@dataclass
class Outcome:
    device: int
    stream: object
    repeated: list[int]
    owing: int
    problems: list[str]
    instructions: int
    fired: bool


def _run(scenario: Scenario, at: int, runtime: type[WatchedRuntime] = WatchedRuntime) -> Outcome:
    rt = runtime(device_count=4)
    hold = Held()
    # One asynchronous exception a run: once the tracer's lands, a raise the runtime still holds won't.
    interrupter = Interrupter(at, on_fire=rt.clear_faults)
    unraisable: list[str] = []
    previous_hook = sys.unraisablehook
    sys.unraisablehook = lambda u: unraisable.append(f"{u.exc_type.__name__}: {u.exc_value} in {u.object!r}")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            raised = False
            try:
                with interrupter.active():
                    scenario(rt, hold)
            except KeyboardInterrupt:
                raised = True
            _forget_a_handled_exception_left_behind()
            rt.clear_faults()
            owing = hold.owing()
            settled_by_the_caller = rt.current_device
            if settled_by_the_caller != 0:
                # Left on a borrowed device: a guard the caller holds must still owe it. Close them all,
                # innermost first, as the caller's recovery would.
                for guard in reversed(owing):
                    guard.close()
            owed = len(owing)
            # A result the caller holds and never looked at may warn; one it never received must not.
            unchecked_held = sum(
                1 for obj in hold.objects if isinstance(obj, (Ok, Err)) and not getattr(obj, "_checked", True)
            )
            hold.objects.clear()
            owing.clear()
            # Results dropped in a traceback's cycle are finalised here, under this recorder.
            gc.collect()
    finally:
        sys.unraisablehook = previous_hook
    problems = list(unraisable)
    if interrupter.fired and not raised:
        problems.append("the interrupt was swallowed: the caller never saw its KeyboardInterrupt")
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    unchecked = [str(w.message) for w in caught if issubclass(w.category, guard_lib.UncheckedResultWarning)]
    if len(unchecked) > unchecked_held:
        problems += unchecked
    if len(unclosed) > owed:
        # A guard that owed a restore was lost without the caller ever holding it.
        problems += unclosed
    return Outcome(
        device=rt.current_device,
        stream=get_caller_stream(),
        repeated=rt.repeated,
        owing=owed,
        problems=problems,
        instructions=interrupter.count,
        fired=interrupter.fired,
    )


@pytest.fixture(autouse=True)
def _collect_only_what_a_run_made(frozen_heap: None) -> None:
    # Each run ends with a collection: what the tests before left is finalised now, not inside a run, then
    # frozen with the rest of the process (until the module ends), so a run's collection walks its own.
    gc.collect()
    gc.freeze()


@pytest.mark.parametrize("name", SCENARIOS)
def test_an_interrupt_at_any_instruction_leaves_no_device_moved_that_nobody_owes(name: str) -> None:
    _sweep(name, WatchedRuntime)


# A C function returns a code and cannot raise: the scenarios whose runtime raises have no C path.
_C_PATH_SCENARIOS = [name for name in SCENARIOS if "raises" not in name]


@pytest.mark.parametrize("name", _C_PATH_SCENARIOS)
def test_an_interrupt_on_the_c_path_leaves_no_device_moved_that_nobody_owes(name: str) -> None:
    # The compiled core calls this runtime through its C entry points and settles through the protocol.
    _sweep(name, WatchedEntryPointRuntime)


def _sweep(name: str, runtime: type[WatchedRuntime]) -> None:
    scenario = SCENARIOS[name]
    untraced = _run(scenario, -1, runtime)
    # Python 3.12 switches opcode events on for a code object from its next call on: one traced run
    # first, so that every counted run sees the same instructions.
    _run(scenario, 0, runtime)
    clean = _run(scenario, 0, runtime)
    assert (untraced.device, untraced.problems, untraced.owing) == (clean.device, clean.problems, clean.owing)
    assert clean.problems == []
    assert clean.repeated == []
    assert clean.owing == 0
    total = clean.instructions
    # The compiled core's C path runs no Python where nothing fails: there may be nothing to interrupt.
    c_path = _COMPILED and runtime is WatchedEntryPointRuntime
    assert total > 10 or c_path, f"{name}: the tracer saw only {total} instructions in guard_lib"
    failures: list[str] = []
    for at in range(1, total + 1):
        outcome = _run(scenario, at, runtime)
        if not outcome.fired:
            continue
        where = f"{name}: interrupt before instruction {at} of {total}"
        # The caller's device, or where a failed restore leaves the uninterrupted run too.
        if outcome.device not in {0, clean.device}:
            failures.append(f"{where}: thread left on device {outcome.device}, expected {clean.device}")
        if outcome.stream is not None:
            failures.append(f"{where}: caller stream left as {outcome.stream!r}")
        if outcome.repeated:
            failures.append(f"{where}: a restore was repeated (selected {outcome.repeated} again)")
        failures += [f"{where}: {problem}" for problem in outcome.problems]
    assert not failures, "\n".join(failures[:20]) + f"\n({len(failures)} in all)"


def test_the_tracer_interrupts_every_instruction_it_counts() -> None:
    # The sweep above is only as good as its tracer: each N up to the clean count must fire once.
    clean = _run(switch, at=0)
    fired = [_run(switch, at).fired for at in range(1, clean.instructions + 1)]
    assert all(fired)
    assert not _run(switch, at=clean.instructions + 1).fired


def test_an_unrecovered_guard_is_caught_by_the_check() -> None:
    # A guard interrupted before the caller's with block ends still owes, and the recovery pays it.
    rt = WatchedRuntime(device_count=2)
    guard = DeviceGuard.create(1, runtime=rt).unwrap()
    hold = Held([guard])
    assert hold.owing() == [guard]
    guard.close()
    assert hold.owing() == []
    assert rt.current_device == 0


def test_finalisers_tolerate_objects_whose_init_never_ran(recwarn: pytest.WarningsRecorder) -> None:
    unraisable: list[object] = []
    previous_hook = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        # The Python guard is made by object's allocator (its own __new__ refuses); the compiled one's
        # __new__ refuses too, so it is the one a refused create made and dropped, whose selection never
        # began. Ok and Err allocate with their own __new__ in both implementations.
        if _COMPILED:
            assert DeviceGuard.create(-1, runtime=SimulatedRuntime(1)).is_err()
        else:
            guard = object.__new__(DeviceGuard)
            del guard
        ok = Ok.__new__(Ok)
        del ok
        err = Err.__new__(Err)
        del err
    finally:
        sys.unraisablehook = previous_hook
    assert unraisable == []
    assert len(recwarn) == 0


def _devices_read(borrow: device) -> tuple[int | None, int | None]:
    """``original_device`` and ``current_device``, each None where there is none to read yet."""
    read: list[int | None] = []
    for name in ("original_device", "current_device"):
        try:
            read.append(getattr(borrow, name))
        except AttributeError:
            read.append(None)
    return read[0], read[1]


@pytest.mark.parametrize("index", [0, 1], ids=["already-current", "switch"])
def test_an_interrupted_entry_leaves_both_devices_from_one_entry_or_neither(index: int) -> None:
    # The pair describes one entry whole: wherever an interrupt lands in __enter__, a borrow the caller
    # kept shows both devices of the entry it began, or neither, never one of them.
    entered = _devices_read(device(index, runtime=WatchedRuntime(2)).__enter__())
    assert entered == (0, index)
    with Interrupter(0, on_fire=lambda: None).active():  # Python 3.12: opcode events from the next call on
        device(index, runtime=WatchedRuntime(2)).__enter__()
    seen = set()
    at = 0
    while True:
        at += 1
        rt = WatchedRuntime(2)
        borrow = device(index, runtime=rt)
        interrupter = Interrupter(at, on_fire=lambda: None)
        try:
            with interrupter.active():
                borrow.__enter__()
        except KeyboardInterrupt:
            pass
        _forget_a_handled_exception_left_behind()
        if not interrupter.fired:
            break
        seen.add(_devices_read(borrow))
    assert seen <= {(None, None), entered}, seen
    assert at > 5 or _COMPILED  # the core runs no Python where nothing fails

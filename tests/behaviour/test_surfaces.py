"""Surfaces pinned whole: every runtime operation under every fault, every public method from a thread
that does not own the guard (both ways), the public classes' hierarchy and signatures, the error-code
tables against cuda-python's, and what a program with no logging set up prints."""

from __future__ import annotations

import inspect
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

import guard_lib
from guard_lib import (
    CallerStreamGuard,
    DeviceGuard,
    GuardError,
    GuardTypeError,
    Ok,
    UncheckedResultWarning,
    cuda_errors,
    device,
)
from guard_lib.runtime import RUNTIME_ENV, SimulatedRuntime, runtime_from_spec
from guard_lib.simulated import OPS

from .support import refusal

LAUNCH_FAILURE = cuda_errors.LAUNCH_FAILURE

# --- every runtime operation with every fault -----------------------------------------------------


def _fault(sim: SimulatedRuntime, op: str, fault: str) -> None:
    if fault == "fail":
        sim.fail_next(op, LAUNCH_FAILURE)
    elif fault == "fail-and-move":
        sim.fail_next(op, LAUNCH_FAILURE, moves_to=3)
    else:
        sim.raise_next(op, KeyboardInterrupt(op))


@pytest.mark.parametrize("fault", ["fail", "raise"])
def test_the_first_read_failing_selects_nothing(fault: str) -> None:
    sim = SimulatedRuntime(device_count=4)
    _fault(sim, "get_device", fault)
    if fault == "fail":
        error = refusal(DeviceGuard.create(1, runtime=sim))
        assert error.code == LAUNCH_FAILURE
        assert sim.peek_at_last_error() == (0,)
    else:
        with pytest.raises(KeyboardInterrupt):
            DeviceGuard.create(1, runtime=sim)
    assert sim.calls == [("get_device", ())]
    assert sim.current_device == 0


@pytest.mark.parametrize(
    ("fault", "calls"),
    [
        # A refusal that did not move the thread is not "restored": no context on the caller's device.
        ("fail", [("get_device", ()), ("set_device", (1,)), ("get_device", ())]),
        (
            "fail-and-move",
            [("get_device", ()), ("set_device", (1,)), ("get_device", ()), ("set_device", (0,))],
        ),
        # The switch took effect and then an interrupt arrived: put back at once.
        ("raise", [("get_device", ()), ("set_device", (1,)), ("get_device", ()), ("set_device", (0,))]),
    ],
)
@pytest.mark.parametrize("entry", ["create", "device"])
def test_the_switch_failing_leaves_the_callers_device(fault: str, calls: list[Any], entry: str) -> None:
    sim = SimulatedRuntime(device_count=4)
    _fault(sim, "set_device", fault)
    expected: type[BaseException] = KeyboardInterrupt if fault == "raise" else GuardError
    with pytest.raises(expected):
        if entry == "create":
            DeviceGuard.create(1, runtime=sim).unwrap()
        else:
            device(1, runtime=sim).__enter__()
    assert sim.calls == calls
    assert sim.current_device == 0
    assert sim.peek_at_last_error() == (0,)


@pytest.mark.parametrize(
    ("fault", "left_on", "logged"),
    [("fail", 1, True), ("fail-and-move", 3, True), ("raise", 0, False)],
)
@pytest.mark.parametrize("entry", ["create", "device"])
def test_the_restore_failing(
    fault: str, left_on: int, logged: bool, entry: str, caplog: pytest.LogCaptureFixture
) -> None:
    sim = SimulatedRuntime(device_count=4)
    borrow: Any = DeviceGuard.create(1, runtime=sim).unwrap() if entry == "create" else device(1, runtime=sim)
    borrow.__enter__()
    sim.calls.clear()
    _fault(sim, "set_device", fault)
    if fault == "raise":
        with pytest.raises(KeyboardInterrupt):
            borrow.__exit__(None, None, None)
        # The restore had taken effect: it is not repeated.
        assert sim.calls == [("set_device", (0,)), ("get_device", ())]
    else:
        borrow.__exit__(None, None, None)
        assert sim.calls == [("set_device", (0,))]
    assert sim.current_device == left_on
    assert bool(caplog.records) is logged
    # Reported in the log, then cleared, so the next backend's first call does not inherit it.
    assert sim.peek_at_last_error() == (0,)
    sim.calls.clear()
    borrow.__exit__(None, None, None)
    assert sim.calls == []


@pytest.mark.parametrize("fault", ["fail", "raise"])
def test_the_read_after_a_failed_switch_failing_puts_the_thread_back(fault: str) -> None:
    sim = SimulatedRuntime(device_count=4)
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=1)
    reads = 0

    def get_device() -> tuple[int, int | None]:
        nonlocal reads
        reads += 1
        if reads == 2:  # the guard's own first read succeeds; the one after the failed switch does not
            _fault(sim, "get_device", fault)
        return sim.get_device()

    runtime: Any = _Reads(sim, get_device)
    if fault == "fail":
        assert refusal(DeviceGuard.create(1, runtime=runtime)).code == LAUNCH_FAILURE
    else:
        with pytest.raises(KeyboardInterrupt):
            DeviceGuard.create(1, runtime=runtime)
    assert sim.current_device == 0
    assert sim.calls.count(("set_device", (0,))) == 1


class _Reads:
    """A runtime that hands every call to ``sim`` but reads the device through ``get_device``."""

    def __init__(self, sim: SimulatedRuntime, get_device: Callable[[], tuple[int, int | None]]) -> None:
        self._sim = sim
        self.get_device = get_device

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sim, name)


@pytest.mark.parametrize("fault", ["fail", "raise"])
def test_a_guard_never_asks_for_the_device_count(fault: str) -> None:
    sim = SimulatedRuntime(device_count=4)
    _fault(sim, "get_device_count", fault)
    with device(1, runtime=sim):
        pass
    assert ("get_device_count", ()) not in sim.calls
    # The fault is still waiting for the first caller that does ask.
    if fault == "fail":
        assert sim.get_device_count() == (LAUNCH_FAILURE, None)
    else:
        with pytest.raises(KeyboardInterrupt):
            sim.get_device_count()


# --- every public method from a thread that does not own the guard, both ways ---------------------

MISUSES: dict[str, Callable[[Any], object]] = {
    "close": lambda b: b.close(),
    "__exit__": lambda b: b.__exit__(None, None, None),
    # take() on a guard, and entering it; a device entered on another thread is that thread's own borrow
    # (test_ownership.py), so only the guard refuses these two
    "take": lambda b: b.take() if isinstance(b, DeviceGuard) else b.close(),
    "__enter__": lambda b: b.__enter__() if isinstance(b, DeviceGuard) else b.close(),
}


def _on_thread(call: Callable[[], object]) -> BaseException | None:
    caught: list[BaseException | None] = [None]

    def run() -> None:
        try:
            call()
        except BaseException as error:
            caught[0] = error

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    return caught[0]


@pytest.mark.parametrize("method", MISUSES)
@pytest.mark.parametrize("kind", ["guard", "device"])
def test_a_borrow_made_here_refuses_another_thread(method: str, kind: str) -> None:
    sim = SimulatedRuntime(device_count=4)
    borrow: Any = DeviceGuard.create(1, runtime=sim).unwrap() if kind == "guard" else device(1, runtime=sim)
    borrow.__enter__()
    elsewhere: list[tuple[int, list[Any]]] = []

    def misuse() -> None:
        try:
            MISUSES[method](borrow)
        finally:
            elsewhere.append((sim.current_device, list(sim.calls)))

    error = _on_thread(misuse)
    assert isinstance(error, GuardError), error
    assert elsewhere == [(0, [])]  # the other thread's device was neither read nor moved
    assert sim.current_device == 1  # and this one still owes its restore
    borrow.__exit__(None, None, None)
    assert sim.current_device == 0


@pytest.mark.parametrize("method", MISUSES)
@pytest.mark.parametrize("kind", ["guard", "device"])
def test_a_borrow_made_elsewhere_refuses_this_thread(method: str, kind: str) -> None:
    sim = SimulatedRuntime(device_count=4)
    made = threading.Event()
    done = threading.Event()
    box: list[Any] = []
    worker_device: list[int] = []

    def owner() -> None:
        borrow: Any = (
            DeviceGuard.create(2, runtime=sim).unwrap() if kind == "guard" else device(2, runtime=sim)
        )
        borrow.__enter__()
        box.append(borrow)
        made.set()
        done.wait(10)
        worker_device.append(sim.current_device)
        borrow.__exit__(None, None, None)
        worker_device.append(sim.current_device)

    worker = threading.Thread(target=owner)
    worker.start()
    made.wait(10)
    sim.calls.clear()
    with pytest.raises(GuardError, match=r"(belongs to|only) the thread that created it"):
        MISUSES[method](box[0])
    assert sim.current_device == 0
    assert sim.calls == []
    done.set()
    worker.join()
    assert worker_device == [2, 0]


def test_the_thread_check_names_what_went_wrong() -> None:
    sim = SimulatedRuntime(device_count=4)
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    error = _on_thread(guard.take)
    assert str(error) == (
        "cannot take over a DeviceGuard for CUDA device 1 from another thread: "
        "only the thread that created it can restore its device"
    )
    assert isinstance(error, GuardError)
    assert error.device_index == 1
    guard.close()


def test_a_caller_stream_guard_is_per_thread_both_ways() -> None:
    guard = CallerStreamGuard("mine")
    with guard:
        seen: list[object] = []
        _on_thread(lambda: seen.append(guard_lib.get_caller_stream()))
        assert seen == [None]
        # Exiting it from another thread would reset a context variable of another context.
        error = _on_thread(lambda: guard.__exit__(None, None, None))
        assert isinstance(error, GuardError)
        assert str(error) == "this CallerStreamGuard was entered in another thread or task; exit it there"
        assert isinstance(error, GuardError)
        assert error.device_index is None
        assert guard_lib.get_caller_stream() == "mine"
    assert guard_lib.get_caller_stream() is None


# --- the public classes ---------------------------------------------------------------------------


def test_public_exception_and_warning_hierarchy() -> None:
    assert GuardError.__mro__ == (GuardError, Exception, BaseException, object)
    assert GuardTypeError.__mro__ == (GuardTypeError, GuardError, TypeError, Exception, BaseException, object)
    assert UncheckedResultWarning.__mro__ == (
        UncheckedResultWarning,
        RuntimeWarning,
        Warning,
        Exception,
        BaseException,
        object,
    )
    assert [c.__name__ for c in DeviceGuard.__mro__] == ["DeviceGuard", "_Borrow", "object"]
    assert [c.__name__ for c in device.__mro__] == ["device", "_Borrow", "object"]
    assert CallerStreamGuard.__mro__ == (CallerStreamGuard, object)
    assert [c.__name__ for c in Ok.__mro__][:2] == ["Ok", "_Outcome"]
    assert [c.__name__ for c in guard_lib.Err.__mro__] == ["Err", "_Outcome", "object"]


@pytest.mark.parametrize(
    ("function", "keyword_only"),
    [
        (DeviceGuard.create, ["runtime"]),
        (device, ["runtime"]),
        (GuardError.__init__, ["device_index", "code", "code_name"]),
        (SimulatedRuntime.fail_next, ["moves_to"]),
    ],
)
def test_options_are_keyword_only(function: Callable[..., object], keyword_only: list[str]) -> None:
    parameters = inspect.signature(function).parameters.values()
    assert [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY] == keyword_only


def test_device_is_made_alike_by_every_form_of_call() -> None:
    sim = SimulatedRuntime(device_count=4)
    options: dict[str, Any] = {"runtime": sim}
    made = (device(2, runtime=sim), device(device_index=2, runtime=sim), device(*[2], **options))
    for borrow in made:
        with borrow:
            assert sim.current_device == 2
        assert sim.current_device == 0
    for refused in ({}, {"device_index": 1, "extra": 1}):
        with pytest.raises(TypeError, match="__init__"):
            device(**refused)  # type: ignore[arg-type]


def test_options_passed_by_position_are_refused() -> None:
    sim = SimulatedRuntime()
    with pytest.raises(TypeError):
        DeviceGuard.create(0, sim)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        device(0, sim)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        GuardError("x", 1)  # type: ignore[call-arg]


def test_slots_keep_borrows_small_and_closed_to_new_attributes() -> None:
    sim = SimulatedRuntime()
    guard = DeviceGuard.create(0, runtime=sim).unwrap()
    with pytest.raises(AttributeError):
        guard.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        device(0).extra = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        CallerStreamGuard(None).extra = 1  # type: ignore[attr-defined]
    guard.close()


@pytest.mark.parametrize(
    "spec",
    [
        "simulatee",
        "simulatedx",
        "zzz",
        "tuda",
        "cudax",
        "cuda:",
        "simulated:0",
        "simulated:-1",
        "simulated:1.5",
    ],
)
def test_specs_that_sort_near_the_names_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match=f"{RUNTIME_ENV}={spec!r} names no runtime"):
        runtime_from_spec(spec)


# --- the error-code tables ------------------------------------------------------------------------


def test_every_error_name_is_cuda_pythons() -> None:
    from cuda.bindings.runtime import cudaError_t

    for code, name in cuda_errors.ERROR_NAMES.items():
        assert cudaError_t(code).name == name, code
    assert {cudaError_t(code).name for code in cuda_errors.NO_CUDA_CODES} == {
        "cudaErrorInitializationError",
        "cudaErrorStubLibrary",
        "cudaErrorInsufficientDriver",
        "cudaErrorNoDevice",
    }
    assert len(cuda_errors.ERROR_NAMES) == 12
    for constant in (
        "SUCCESS",
        "INVALID_VALUE",
        "INSUFFICIENT_DRIVER",
        "NO_DEVICE",
        "INVALID_DEVICE",
        "LAUNCH_FAILURE",
    ):
        code = getattr(cuda_errors, constant)
        assert cuda_errors.ERROR_NAMES[code] == cudaError_t(code).name


def test_error_name_of_an_unknown_code_carries_the_number() -> None:
    assert cuda_errors.error_name(12345) == "cudaError(12345)"
    assert cuda_errors.error_name(True) == "cudaErrorInvalidValue"


def test_simulated_ops_are_the_three_the_guard_can_meet() -> None:
    assert OPS == ("get_device", "set_device", "get_device_count")


# --- a program with no logging set up --------------------------------------------------------------

_PROGRAM = """
from guard_lib import DeviceGuard, cuda_errors
from guard_lib.runtime import SimulatedRuntime
sim = SimulatedRuntime(device_count=2)
with DeviceGuard.create(1, runtime=sim).unwrap():
    FAIL
print("done on device", sim.current_device)
"""


@pytest.mark.parametrize("fail", [True, False])
def test_a_program_without_logging_set_up_is_told_of_a_failed_restore(fail: bool) -> None:
    line = 'sim.fail_next("set_device", cuda_errors.LAUNCH_FAILURE)' if fail else "pass"
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM.replace("FAIL", line)], capture_output=True, text=True, check=True
    )
    if fail:
        assert done.stderr == (
            "could not restore CUDA device 0 after selecting device 1: cudaErrorLaunchFailure; "
            "this thread may still be on device 1\n"
        )
        assert done.stdout == "done on device 1\n"
    else:
        assert done.stderr == ""
        assert done.stdout == "done on device 0\n"


def test_a_failed_switch_that_moved_the_thread_down_is_put_back() -> None:
    # "moved" means any other device, lower ones included
    sim = SimulatedRuntime(device_count=4)
    (code,) = sim.set_device(2)
    assert code == 0
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=1)
    assert refusal(DeviceGuard.create(3, runtime=sim)).code == LAUNCH_FAILURE
    assert sim.current_device == 2


@pytest.mark.parametrize("moves_to", [None, 1])
def test_a_failing_simulated_selection_leaves_its_error_pending(moves_to: int | None) -> None:
    sim = SimulatedRuntime(device_count=4)
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=moves_to)
    assert sim.set_device(2) == (LAUNCH_FAILURE,)
    assert sim.peek_at_last_error() == (LAUNCH_FAILURE,)
    assert sim.get_last_error() == (LAUNCH_FAILURE,)
    assert sim.peek_at_last_error() == (0,)


def test_a_type_refusal_names_no_device() -> None:
    error = refusal(DeviceGuard.create("1", runtime=SimulatedRuntime()))  # type: ignore[arg-type]
    assert isinstance(error, GuardTypeError)
    assert error.device_index is None


class _EnumCodes(SimulatedRuntime):
    """Answers with cuda-python's own cudaError_t members, as CudaRuntime does, instead of ints."""

    __slots__ = ()

    def get_device(self) -> tuple[Any, int | None]:
        from cuda.bindings.runtime import cudaError_t

        code, index = super().get_device()
        return cudaError_t(code), index


@pytest.mark.parametrize(("code", "message"), [(100, "no CUDA driver or device was found"), (719, "")])
def test_an_error_code_from_the_bindings_comes_back_a_plain_int(code: int, message: str) -> None:
    sim = _EnumCodes()
    sim.fail_next("get_device", code)
    error = refusal(DeviceGuard.create(1, runtime=sim))
    assert type(error.code) is int
    assert error.code == code
    assert message in str(error)

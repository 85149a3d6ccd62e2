"""Behaviours that the sweep's newer operators (swapped statements, widened handlers, swapped variables)
showed no test pinned. Each holds for both implementations."""

from __future__ import annotations

import gc
import os
import sys
import typing
import warnings
from contextvars import ContextVar, Token
from pathlib import Path
from typing import Any

import pytest

import guard_lib
from guard_lib import (
    CallerStreamGuard,
    DeviceGuard,
    caller_stream,
    cuda_errors,
    get_caller_stream,
    implementation,
    stream_handle,
)
from guard_lib.runtime import CudaRuntime, SimulatedRuntime

from .support import refusal

# Tests that interrupt the reference at one of its lines: the core has no lines, and mutmut's trampolines
# move the reference's (the sweep runs them on its mutants).
_AT_THE_REFERENCES_LINES = pytest.mark.skipif(
    guard_lib.IMPLEMENTATION == "compiled" or "MUTANT_UNDER_TEST" in os.environ,
    reason="instants between the reference's lines, where mutmut's trampolines have not moved them",
)


def _line_of(module: Any, statement: str) -> int:
    """The number of the line of ``module``'s source that holds ``statement`` alone."""
    lines = Path(module.__file__).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.strip() == statement)


class _UnreadableOnceMoved(SimulatedRuntime):
    """Once a selection has been tried, the thread's device cannot be read either."""

    __slots__ = ("tried",)

    def get_device(self) -> tuple[int, Any]:
        if getattr(self, "tried", False):
            self.calls.append(("get_device", ()))
            return self._fail(cuda_errors.LAUNCH_FAILURE), None
        return super().get_device()

    def set_device(self, index: int) -> tuple[int]:
        self.tried = True
        return super().set_device(index)


def test_a_restore_that_fails_where_the_device_cannot_be_read_still_clears_the_error() -> None:
    # The error a failed switch leaves pending is cleared even when the settling can tell nothing else.
    rt = _UnreadableOnceMoved(device_count=2)
    rt.fail_next("set_device", cuda_errors.LAUNCH_FAILURE)
    rt.fail_next("set_device", cuda_errors.LAUNCH_FAILURE)
    error = refusal(DeviceGuard.create(1, runtime=rt))
    assert str(error) == "cannot select CUDA device 1: cudaErrorLaunchFailure"
    assert rt.peek_at_last_error() == (cuda_errors.SUCCESS,)


class _IntHandle(int):
    """An int handle whose ``__cuda_stream__`` is only good while its owner lives."""

    @property
    def __cuda_stream__(self) -> Any:
        raise RuntimeError("the owning stream was destroyed")


def test_an_int_is_taken_as_a_handle_without_asking_it_anything_else() -> None:
    assert stream_handle(_IntHandle(7)) == 7


def test_a_refused_device_count_leaves_the_runtime_as_it_was() -> None:
    rt = SimulatedRuntime(device_count=2)
    with pytest.raises(ValueError, match="device_count must be an int >= 0, got -1"):
        rt.__init__(-1)  # type: ignore[misc]
    assert rt.device_count == 2
    assert rt.set_device(1) == (cuda_errors.SUCCESS,)


class _AlarmAfterReset:
    """The caller-stream variable, with an exception (a signal handler's) landing just after a reset."""

    def __init__(self, real: ContextVar[Any]) -> None:
        self.real = real
        self.alarms = 1

    def get(self) -> Any:
        return self.real.get()

    def set(self, value: Any) -> Token[Any]:
        return self.real.set(value)

    def reset(self, token: Token[Any]) -> None:
        self.real.reset(token)
        if self.alarms:
            self.alarms -= 1
            raise TimeoutError("alarm")


def test_an_exception_landing_in_exit_comes_through_as_itself_with_the_stream_undone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    guard = CallerStreamGuard("s")
    guard.__enter__()
    monkeypatch.setattr(caller_stream, "_CALLER_STREAM", _AlarmAfterReset(caller_stream._CALLER_STREAM))
    with pytest.raises(TimeoutError, match="alarm"):
        guard.__exit__(None, None, None)
    assert get_caller_stream() is None
    with guard:
        assert get_caller_stream() == "s"
    assert get_caller_stream() is None


def test_result_names_the_ok_and_err_that_create_returns() -> None:
    ok, err = typing.get_args(guard_lib.Result)
    assert typing.get_origin(ok) is guard_lib.Ok
    assert err is guard_lib.Err
    outcome = DeviceGuard.create(1, runtime=SimulatedRuntime(2))
    assert isinstance(outcome, (guard_lib.Ok, guard_lib.Err))
    outcome.unwrap().close()


def test_a_failed_import_leaves_none_of_guard_lib_behind() -> None:
    import subprocess

    program = (
        "import os, sys\n"
        "os.environ['GUARD_LIB_IMPL'] = 'bogus'\n"
        "try:\n    import guard_lib\nexcept ImportError:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('guard_lib')))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_failed_import_in_this_process_leaves_none_of_guard_lib_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The same, in this interpreter, where a mutant served from memory is what gets imported again.
    import importlib

    loaded = [name for name in sys.modules if name == "guard_lib" or name.startswith("guard_lib.")]
    for name in loaded:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setenv("GUARD_LIB_IMPL", "bogus")
    try:
        with pytest.raises(ImportError):
            importlib.import_module("guard_lib")
        left = sorted(name for name in sys.modules if name.startswith("guard_lib"))
    finally:
        for name in [n for n in sys.modules if n == "guard_lib" or n.startswith("guard_lib.")]:
            del sys.modules[name]
    assert left == []


def test_in_mutmuts_copy_the_core_is_not_even_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    # mutmut's copy takes the reference before it looks for the core: one implementation in the process.
    # In this process, so that a mutant served from memory is what runs.
    imported: list[str] = []
    monkeypatch.setattr(implementation, "import_module", imported.append)
    where = str(Path("somewhere", "mutants", "guard_lib", "implementation.py"))
    choice, _, core = implementation._choose({"MUTANT_UNDER_TEST": "x"}, where)
    assert (choice, core, imported) == ("python", None, [])


@pytest.mark.parametrize("raised", [RuntimeError, KeyboardInterrupt])
def test_a_bindings_package_that_fails_to_load_comes_through_as_itself(
    raised: type[BaseException], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only a missing package is the GuardError "cuda-bindings is not installed"; a broken one says why.
    bindings = tmp_path / "cuda" / "bindings"
    bindings.mkdir(parents=True)
    (tmp_path / "cuda" / "__init__.py").write_text("")
    (bindings / "__init__.py").write_text("")
    (bindings / "runtime.py").write_text(f"raise {raised.__name__}('while loading the bindings')\n")

    def cuda_modules() -> list[str]:
        return [n for n in sys.modules if n == "cuda" or n.startswith("cuda.")]

    real = cuda_modules()
    for name in real:
        monkeypatch.delitem(sys.modules, name)  # put back when the test ends
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(raised, match="while loading the bindings"):
            CudaRuntime()
    finally:
        for name in set(cuda_modules()) - set(real):  # the stand-ins must not outlive the test
            del sys.modules[name]


@pytest.mark.parametrize(
    ("written", "read"),
    [
        (b"failed\n", ("failed", "failed")),  # no reason: the kind stands for it
        (b"\n\nfailed\n   no compiler  \n\n", ("failed", "no compiler")),  # blank space around both
        (b"failed\n\xff\xfe not utf-8\n", UnicodeDecodeError),  # only a note that cannot be opened is none
    ],
    ids=["kind-alone", "blank-space", "not-utf-8"],
)
def test_how_a_build_note_is_read(
    written: bytes, read: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = tmp_path / "note.txt"
    note.write_bytes(written)
    monkeypatch.setattr(implementation, "_NOTE", str(note))
    if isinstance(read, tuple):
        assert implementation._build_note() == read
    else:
        with pytest.raises(UnicodeDecodeError):
            implementation._build_note()


def test_a_pytest_that_fails_to_load_is_not_reported_as_missing(tmp_path: Path) -> None:
    import os
    import subprocess

    (tmp_path / "pytest.py").write_text("raise RuntimeError('pytest is broken: incompatible pluggy')\n")
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()])}
    done = subprocess.run(
        [sys.executable, "-c", "import guard_lib.testing"],
        capture_output=True,
        text=True,
        env=environ,
        check=False,
    )
    assert done.returncode == 1
    assert "RuntimeError: pytest is broken: incompatible pluggy" in done.stderr
    assert "needs pytest" not in done.stderr


class _BrokenPytest:
    """A finder under which ``import pytest`` fails while loading, as a pytest with a broken pluggy does."""

    def find_spec(self, name: str, path: object, target: object = None) -> None:
        if name == "pytest":
            raise RuntimeError("pytest is broken: incompatible pluggy")


def test_a_pytest_that_fails_to_load_in_this_process_comes_through_as_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The same, in this interpreter, where a mutant served from memory is what gets imported again.
    import importlib

    raises = pytest.raises  # pytest is out of sys.modules while the plugin loads
    monkeypatch.delitem(sys.modules, "guard_lib.testing", raising=False)
    monkeypatch.delitem(sys.modules, "pytest")
    monkeypatch.setattr(sys, "meta_path", [_BrokenPytest(), *sys.meta_path])
    try:
        with raises(RuntimeError, match="pytest is broken"):
            importlib.import_module("guard_lib.testing")
    finally:
        sys.modules.pop("guard_lib.testing", None)


@_AT_THE_REFERENCES_LINES
def test_take_interrupted_twice_in_its_handler_leaves_the_held_guard_owing() -> None:
    # An interrupt just after the giving guard stops owing, and another before its handler's second
    # statement: at every instant a guard the caller holds owes the restore.
    from guard_lib import device_guard

    handler = _line_of(device_guard, "if not taker._restored:")
    slot = device_guard._Borrow.__dict__["_restored"]
    armed = [False]

    def second(frame: Any, event: str, arg: object) -> Any:
        if event == "line" and frame.f_lineno == handler + 2:
            sys.settrace(before)
            raise KeyboardInterrupt("second")
        return second

    class Interrupted(DeviceGuard):
        __slots__ = ()

        @property
        def _restored(self) -> bool:
            return bool(slot.__get__(self, type(self)))

        @_restored.setter
        def _restored(self, value: bool) -> None:
            slot.__set__(self, value)
            if value is True and armed[0]:
                armed[0] = False
                sys.settrace(lambda *a: None)
                frame = sys._getframe(1)
                frame.f_trace_lines = True
                frame.f_trace = second
                raise KeyboardInterrupt("first")

    rt = SimulatedRuntime(2)
    guard = Interrupted.create(1, runtime=rt).unwrap()
    before = sys.gettrace()
    armed[0] = True
    with warnings.catch_warnings():
        # the taker, never handed over, still owes too: it warns when collected, as any dropped guard does
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            with pytest.raises(KeyboardInterrupt, match="second"):
                guard.take()
        finally:
            sys.settrace(before)
        gc.collect()
    assert rt.current_device == 1
    guard.close()
    assert rt.current_device == 0


def test_a_function_that_is_both_a_coroutine_and_a_generator_is_refused_as_a_coroutine() -> None:
    # Python 3.12's inspect.markcoroutinefunction makes such functions; the flags say the same anywhere.
    import inspect

    def stream() -> Any:
        yield 1

    stream.__code__ = stream.__code__.replace(co_flags=stream.__code__.co_flags | inspect.CO_COROUTINE)
    assert inspect.iscoroutinefunction(stream)
    assert inspect.isgeneratorfunction(stream)
    with pytest.raises(TypeError, match="a coroutine function: the borrow would be held across await"):
        guard_lib.device(0, runtime=SimulatedRuntime(2))(stream)


class _Unbound:
    """A lazy proxy, not callable, whose attributes cannot be read until it is bound."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"proxy is not bound (looked up {name})")

    def __repr__(self) -> str:
        return "<Unbound proxy>"


def test_what_is_not_callable_is_refused_before_anything_else_is_asked_of_it() -> None:
    # From Python 3.12 inspect's tests read attributes, which such a proxy refuses.
    with pytest.raises(TypeError, match=r"decorates a function, not <Unbound proxy>"):
        guard_lib.device(0, runtime=SimulatedRuntime(2))(_Unbound())  # type: ignore[arg-type]


@_AT_THE_REFERENCES_LINES
def test_a_result_create_never_handed_over_stays_quiet_when_its_settling_is_interrupted_too() -> None:
    # An interrupt just before create returns its Result, and another from the runtime while create's
    # handler settles: the Result nobody received is marked checked before anything else can raise.
    from guard_lib import device_guard

    target = _line_of(device_guard, "return outcome")
    create = device_guard.DeviceGuard.__dict__["create"].__func__.__code__
    rt = SimulatedRuntime(2)

    def local(frame: Any, event: str, arg: object) -> Any:
        if event == "line" and frame.f_lineno == target:
            sys.settrace(before)
            frame.f_trace = None
            rt.raise_next("get_device", KeyboardInterrupt("second"))
            raise KeyboardInterrupt("first")
        return local

    def tracer(frame: Any, event: str, arg: object) -> Any:
        return local if frame.f_code is create else None

    before = sys.gettrace()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sys.settrace(tracer)
        try:
            with pytest.raises(KeyboardInterrupt, match="second"):
                DeviceGuard.create(1, runtime=rt)
        finally:
            sys.settrace(before)
        gc.collect()
    # the guard, interrupted while it settled, still owes and says so when collected; its Result does not
    assert sorted(w.category.__name__ for w in caught) == ["ResourceWarning"]


_SIMULATED_CALLS: dict[str, tuple[str, Any]] = {
    "read that fails": ("get_device", lambda rt: rt.fail_next("get_device", 999)),
    "count that fails": ("get_device_count", lambda rt: rt.fail_next("get_device_count", 999)),
    "switch that fails": ("set_device", lambda rt: rt.fail_next("set_device", 999)),
    "switch that fails and moves": ("set_device", lambda rt: rt.fail_next("set_device", 999, moves_to=1)),
    "switch": ("set_device", lambda rt: None),
    "switch that raises after its effect": (
        "set_device",
        lambda rt: rt.raise_next("set_device", RuntimeError("after")),
    ),
}

_CALL: dict[str, Any] = {
    "get_device": lambda rt: rt.get_device(),
    "get_device_count": lambda rt: rt.get_device_count(),
    "set_device": lambda rt: rt.set_device(1),
}


def _interrupted_call(rt: SimulatedRuntime, op: str, at: int) -> bool:
    """Call ``op`` with an interrupt before its ``at``-th instruction in the simulated runtime; True if it
    landed, False if the call finished first."""
    from guard_lib import simulated

    here = simulated.__file__
    count = [0]

    def local(frame: Any, event: str, arg: object) -> Any:
        if event == "opcode":
            count[0] += 1
            if count[0] == at:
                raise KeyboardInterrupt(f"instruction {at}")
        return local

    def tracer(frame: Any, event: str, arg: object) -> Any:
        if frame.f_code.co_filename != here:
            return None
        frame.f_trace = local  # first: Python 3.12 sends opcode events only to a frame with a tracer
        frame.f_trace_opcodes = True
        return local

    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        _CALL[op](rt)
    except KeyboardInterrupt:
        return True
    except RuntimeError:
        pass
    finally:
        sys.settrace(before)
    return False


@pytest.mark.parametrize("name", sorted(_SIMULATED_CALLS))
def test_an_interrupt_anywhere_in_a_simulated_call_keeps_its_log_faults_and_contexts_true(name: str) -> None:
    # The simulated runtime stands for C calls, but it is Python: wherever an interrupt lands in one of its
    # calls, a fault is never used up by a call its log does not show, and a context is recorded only on
    # a device the thread has landed on.
    op, arrange = _SIMULATED_CALLS[name]
    _interrupted_call(SimulatedRuntime(2), op, 0)  # Python 3.12 sends opcode events from a code's 2nd run
    at = 0
    while True:
        at += 1
        rt = SimulatedRuntime(2)
        arrange(rt)
        if not _interrupted_call(rt, op, at):
            break
        logged = sum(1 for called, _ in rt.calls if called == op)
        assert rt.contexts <= {rt.current_device}, (at, rt.contexts, rt.current_device)
        try:
            retried = _CALL[op](rt)[0]
        except RuntimeError:
            retried = 999
        fault_used_up = name != "switch" and retried != 999
        assert logged >= fault_used_up, (at, logged, rt.calls)
    assert at > 5  # the calls were interrupted at every instruction they have


def test_a_borrow_whose_read_failed_keeps_no_hold_on_the_runtime() -> None:
    # A backend keeps its `device(i)` for the life of its engine; a refused entry must not keep the
    # runtime it was refused on (a whole process's default, put in place only for a while) alive.
    import weakref

    from guard_lib import GuardError, device
    from guard_lib.runtime import use_runtime

    borrow = device(1)
    rt = SimulatedRuntime(2)
    rt.fail_next("get_device", cuda_errors.LAUNCH_FAILURE)
    with use_runtime(rt), pytest.raises(GuardError, match="cannot read the current CUDA device"):
        with borrow:
            pass
    gone = weakref.ref(rt)
    del rt
    gc.collect()
    assert gone() is None


@pytest.mark.skipif(
    "MUTANT_UNDER_TEST" in os.environ, reason="mutmut's copy takes the reference without looking for the core"
)
def test_a_core_whose_build_failed_is_warned_of_when_the_choice_is_made_at_import(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The module's own import makes the choice, in this interpreter (where a mutant served from memory is
    # what gets imported again): everything the choice calls is defined by then.
    import builtins
    import importlib
    import io
    import logging

    real_open = builtins.open

    def note_says_failed(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file).endswith(f"_core_not_built.{sys.implementation.cache_tag}.txt"):
            return io.StringIO("failed\nno C compiler was found\n")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(guard_lib, "implementation", implementation)
    monkeypatch.delitem(sys.modules, "guard_lib.implementation")
    monkeypatch.setitem(sys.modules, "guard_lib._core", None)  # the core cannot be imported
    monkeypatch.setenv("GUARD_LIB_IMPL", "auto")
    monkeypatch.setattr(builtins, "open", note_says_failed)
    try:
        with caplog.at_level(logging.WARNING, logger="guard_lib"):
            chosen = importlib.import_module("guard_lib.implementation")
    finally:
        sys.modules.pop("guard_lib.implementation", None)
    assert chosen is not implementation
    assert chosen.REASON == "the compiled core is not built (no C compiler was found)"
    assert [r.getMessage().split(": ")[0] for r in caplog.records] == [
        "guard_lib runs its Python implementation (the same behaviour, slower)"
    ]

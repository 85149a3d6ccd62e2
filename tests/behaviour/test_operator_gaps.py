"""Contracts that only a change of an except clause, a statement order or an argument would break.

Each test states one contract: which exceptions a function turns into something else and which it lets
through, which of two checks speaks first, what an interrupt at a given instant leaves behind.
"""

from __future__ import annotations

import gc
import linecache
import os
import re
import subprocess
import sys
import threading
import typing
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest

import guard_lib
from guard_lib import (
    CallerStreamGuard,
    DeviceGuard,
    Err,
    GuardError,
    Ok,
    UncheckedResultWarning,
    cuda_errors,
    get_caller_stream,
    implementation,
)
from guard_lib.runtime import CudaRuntime, SimulatedRuntime
from guard_lib.testing import assert_leaves_device

# --- helpers -----------------------------------------------------------------------------------------


@contextmanager
def _interrupt(module: str, function: str, before: str | int) -> Iterator[None]:
    """Raise KeyboardInterrupt once in ``function`` of ``guard_lib/<module>.py``, as a signal landing there
    would: before the first line starting with ``before`` (a str), or before its ``before``-th line."""
    fired = False

    def local(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal fired
        if event != "line" or fired:
            return local
        lines[frame] = lines.get(frame, 0) + 1
        text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
        if text.startswith(before) if isinstance(before, str) else lines[frame] == before:
            fired = True
            raise KeyboardInterrupt(text)
        return local

    # In mutmut's copy the function's body runs under mutmut's names for it (x_f__mutmut_orig, one per
    # mutant, xǁClassǁf__mutmut_3 for a method), called from a trampoline that keeps the name.
    body = re.compile(rf"{re.escape(function)}|x(?:_|ǁ\w+ǁ){re.escape(function)}__mutmut_(?:orig|\d+)")

    def global_(frame: FrameType, event: str, arg: object) -> Any:
        code = frame.f_code
        if body.fullmatch(code.co_name) and code.co_filename.endswith(
            os.path.join("guard_lib", f"{module}.py")
        ):
            return local
        return None

    lines: dict[FrameType, int] = {}
    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        yield
    finally:
        sys.settrace(previous)
    assert fired, f"{module}.{function} never reached {before!r}"


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter, the way a process that has not imported guard_lib starts."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
    )


class _Index:
    """An integer-like index, as numpy's integers are: it offers ``__index__`` and nothing else."""

    def __init__(self, value: int) -> None:
        self._value = value

    def __index__(self) -> int:
        return self._value


class _IndexRaises:
    def __index__(self) -> int:
        raise ValueError("no index today")


class _NoNames(SimulatedRuntime):
    """A runtime whose error names cannot be had."""

    def error_name(self, code: int, /) -> str:
        raise RuntimeError("no names")


class _Unreadable:
    """A runtime other than the simulated one whose device cannot be read."""

    def get_device(self) -> tuple[int, Any]:
        return cuda_errors.NO_DEVICE, None

    def set_device(self, index: int, /) -> tuple[int]:
        return (cuda_errors.NO_DEVICE,)

    def get_device_count(self) -> tuple[int, Any]:
        return cuda_errors.NO_DEVICE, None

    def get_last_error(self) -> tuple[int]:
        return (cuda_errors.SUCCESS,)

    def peek_at_last_error(self) -> tuple[int]:
        return (cuda_errors.SUCCESS,)

    def error_name(self, code: int, /) -> str:
        return "cudaErrorNoDevice"


# --- the index -----------------------------------------------------------------------------------------


def test_an_index_whose_conversion_fails_otherwise_than_with_type_error_raises_that_error() -> None:
    with pytest.raises(ValueError, match="no index today"):
        DeviceGuard.create(_IndexRaises(), runtime=SimulatedRuntime())  # type: ignore[arg-type]


def test_an_object_with_only_index_selects_the_device_it_stands_for() -> None:
    rt = SimulatedRuntime()
    outcome = DeviceGuard.create(_Index(1), runtime=rt)  # type: ignore[arg-type]
    assert isinstance(outcome, Ok)
    with outcome.unwrap() as guard:
        assert rt.current_device == 1
        assert guard.current_device == 1
    assert rt.current_device == 0


def test_a_negative_index_object_is_refused_in_terms_of_its_int() -> None:
    outcome = DeviceGuard.create(_Index(-1), runtime=SimulatedRuntime())  # type: ignore[arg-type]
    assert isinstance(outcome, Err)
    assert "cannot select CUDA device -1:" in str(outcome.error)
    assert type(outcome.error.device_index) is int
    assert outcome.error.device_index == -1


# --- choosing the implementation --------------------------------------------------------------------------


def test_a_core_that_fails_to_import_otherwise_than_with_import_error_is_not_passed_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def failing(name: str) -> None:
        raise RuntimeError("the core's module init failed")

    monkeypatch.setattr(implementation, "import_module", failing)
    with pytest.raises(RuntimeError, match="module init failed"):
        implementation._choose({"GUARD_LIB_IMPL": "auto"}, implementation.__file__)


def test_the_implementation_setting_is_read_without_surrounding_blanks() -> None:
    chosen = implementation._choose({"GUARD_LIB_IMPL": " python "}, implementation.__file__)
    assert chosen[:2] == ("python", "GUARD_LIB_IMPL=python")


def test_the_python_implementation_never_imports_the_core() -> None:
    done = _python(
        "import sys, guard_lib; print(guard_lib.IMPLEMENTATION, 'guard_lib._core' in sys.modules)",
        GUARD_LIB_IMPL="python",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["python", "False"]


# --- the runtime ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raised", [KeyboardInterrupt, RuntimeError])
def test_cuda_error_name_falls_back_only_for_an_unknown_code(raised: type[BaseException]) -> None:
    try:
        runtime = CudaRuntime()
    except GuardError as error:
        pytest.skip(str(error))

    class Code(int):
        fired = False

        def __int__(self) -> int:
            if not Code.fired:
                Code.fired = True
                raise raised("while converting")
            return int.__int__(self)

    with pytest.raises(raised, match="while converting"):
        runtime.error_name(Code(cuda_errors.INVALID_DEVICE))


# --- reporting a failed call ------------------------------------------------------------------------------


def test_a_refusal_clears_the_pending_error_before_naming_it() -> None:
    rt = _NoNames()
    rt.fail_next("get_device", cuda_errors.INVALID_DEVICE)
    with pytest.raises(RuntimeError, match="no names"):
        DeviceGuard.create(0, runtime=rt)
    assert rt.peek_at_last_error() == (cuda_errors.SUCCESS,)


def test_a_failed_restore_clears_the_pending_error_before_naming_it() -> None:
    rt = _NoNames()
    guard = DeviceGuard.create(1, runtime=rt).unwrap()
    rt.fail_next("set_device", cuda_errors.INVALID_DEVICE)
    with pytest.raises(RuntimeError, match="no names"):
        guard.close()
    assert rt.peek_at_last_error() == (cuda_errors.SUCCESS,)


# --- take -------------------------------------------------------------------------------------------------


def test_taking_a_closed_guard_from_another_thread_says_it_was_closed() -> None:
    guard = DeviceGuard.create(1, runtime=SimulatedRuntime()).unwrap()
    guard.close()
    refusals: list[BaseException] = []

    def take() -> None:
        try:
            guard.take()
        except GuardError as error:
            refusals.append(error)

    thread = threading.Thread(target=take)
    thread.start()
    thread.join()
    assert len(refusals) == 1
    assert "closed or taken" in str(refusals[0])


# --- the simulated runtime's faults ---------------------------------------------------------------------


def test_fail_next_names_an_unknown_op_before_looking_at_the_code() -> None:
    with pytest.raises(ValueError, match="unknown op 'bogus'"):
        SimulatedRuntime().fail_next("bogus", 0)


def test_fail_next_refuses_a_success_code_before_looking_at_moves_to() -> None:
    with pytest.raises(ValueError, match="code must be"):
        SimulatedRuntime().fail_next("get_device", 0, moves_to=1)


def test_a_refused_fail_next_queues_nothing() -> None:
    rt = SimulatedRuntime()
    with pytest.raises(ValueError, match="only set_device"):
        rt.fail_next("get_device", cuda_errors.INVALID_DEVICE, moves_to=1)
    assert rt.get_device() == (cuda_errors.SUCCESS, 0)


def test_raise_next_names_an_unknown_op_before_looking_at_the_exception() -> None:
    with pytest.raises(ValueError, match="unknown op 'bogus'"):
        SimulatedRuntime().raise_next("bogus", "x")  # type: ignore[arg-type]


def test_a_refused_raise_next_queues_nothing() -> None:
    rt = SimulatedRuntime()
    with pytest.raises(TypeError, match="BaseException instance"):
        rt.raise_next("get_device", "x")  # type: ignore[arg-type]
    assert rt.get_device() == (cuda_errors.SUCCESS, 0)


# --- the pytest plugin ----------------------------------------------------------------------------------

_BROKEN_PYTEST = """
import importlib.abc, importlib.util, sys
sys.modules.pop("pytest", None)
class Broken(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name == "pytest" else None
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        raise RuntimeError("pytest is broken")
sys.meta_path.insert(0, Broken())
try:
    import guard_lib.testing
except BaseException as error:
    print(type(error).__name__, error)
"""


def test_the_plugin_lets_a_broken_pytest_fail_its_import() -> None:
    done = _python(_BROKEN_PYTEST)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "RuntimeError pytest is broken"


def test_an_unreadable_device_is_named_before_the_hint() -> None:
    with pytest.raises(AssertionError) as caught, assert_leaves_device(runtime=_Unreadable()):
        pass
    assert str(caught.value).startswith(
        "assert_leaves_device: cannot read the device before the block: cudaErrorNoDevice; "
        "no CUDA device answered"
    )


def test_leaving_an_assert_leaves_device_never_entered_fails_the_assertion() -> None:
    with pytest.raises(AssertionError):
        assert_leaves_device().__exit__(None, None, None)


# --- CallerStreamGuard under interrupts ---------------------------------------------------------------


def test_a_caller_stream_guard_interrupted_as_it_enters_can_be_entered_again() -> None:
    guard = CallerStreamGuard("s")
    with pytest.raises(KeyboardInterrupt), _interrupt("caller_stream", "__enter__", "return self"):
        guard.__enter__()
    assert get_caller_stream() is None
    with guard:
        assert get_caller_stream() == "s"
    assert get_caller_stream() is None


def test_a_caller_stream_guard_interrupted_as_it_exits_can_be_entered_again() -> None:
    guard = CallerStreamGuard("s")
    guard.__enter__()
    with pytest.raises(KeyboardInterrupt), _interrupt("caller_stream", "__exit__", "self._token = None"):
        guard.__exit__(None, None, None)
    assert get_caller_stream() is None
    with guard:
        assert get_caller_stream() == "s"
    assert get_caller_stream() is None


# --- Ok, Err and Result -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "argument"), [(Ok, 5), (Err, GuardError("refused", device_index=None))], ids=["Ok", "Err"]
)
def test_an_outcome_interrupted_in_its_init_is_dropped_silently(
    cls: type[Ok[int] | Err], argument: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if guard_lib.IMPLEMENTATION == "compiled":
        pytest.skip("the compiled Ok and Err set their fields in C: no instant between them to interrupt")
    unraisable: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(KeyboardInterrupt), _interrupt("result", "__init__", 2):
            cls(argument)
        gc.collect()
    assert unraisable == []
    assert [w for w in seen if w.category is UncheckedResultWarning] == []


def test_result_is_the_union_of_the_ok_and_err_in_use() -> None:
    ok, err = typing.get_args(guard_lib.Result)
    assert typing.get_origin(ok) is guard_lib.Ok
    assert err is guard_lib.Err

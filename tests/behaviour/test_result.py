"""Result, Ok and Err: the caller has to look, and a failure cannot be dropped unseen."""

from __future__ import annotations

import gc
import sys
import types
import typing
import warnings
from collections.abc import Callable
from typing import Any

import pytest

import guard_lib
from guard_lib import Err, GuardError, Ok, UncheckedResultWarning


def _err() -> Err:
    return Err(GuardError("cannot select CUDA device 9: cudaErrorInvalidDevice", device_index=9))


def test_ok_answers_and_unwraps() -> None:
    ok = Ok(5)
    assert ok.is_ok() is True
    assert ok.is_err() is False
    assert ok.unwrap() == 5
    assert ok.value == 5
    assert repr(ok) == "Ok(5)"


def test_err_answers_and_unwrap_raises_its_error() -> None:
    err = _err()
    assert err.is_err() is True
    assert err.is_ok() is False
    error = err.error
    with pytest.raises(GuardError) as info:
        err.unwrap()
    assert info.value is error
    assert repr(err).startswith("Err(GuardError(")


@pytest.mark.parametrize(
    "check",
    [
        lambda r: r.is_ok(),
        lambda r: r.is_err(),
        lambda r: r.value if isinstance(r, Ok) else r.error,
    ],
    ids=["is_ok", "is_err", "value-or-error"],
)
@pytest.mark.parametrize("make", [lambda: Ok(1), _err], ids=["ok", "err"])
def test_any_check_silences_the_warning(
    make: object, check: object, recwarn: pytest.WarningsRecorder
) -> None:
    result = make()  # type: ignore[operator]
    check(result)  # type: ignore[operator]
    del result
    gc.collect()
    assert recwarn.list == []


@pytest.mark.parametrize("make", [lambda: Ok(1), _err], ids=["ok", "err"])
def test_checked_reads_and_writes_the_look_owed(make: object) -> None:
    # `_checked` is the field DeviceGuard.create sets; both implementations answer it the same.
    result = make()  # type: ignore[operator]
    assert result._checked is False
    result._checked = True
    assert result._checked is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        del result
        gc.collect()
    result = make()  # type: ignore[operator]
    result._checked = True
    result._checked = False
    with pytest.warns(UncheckedResultWarning, match="dropped without being checked"):
        del result
        gc.collect()


def test_unwrap_counts_as_checking(recwarn: pytest.WarningsRecorder) -> None:
    Ok(1).unwrap()
    with pytest.raises(GuardError):
        _err().unwrap()
    gc.collect()
    assert recwarn.list == []


@pytest.mark.parametrize("make", [lambda: Ok(1), _err], ids=["ok", "err"])
def test_unchecked_result_warns_when_dropped(make: object) -> None:
    with pytest.warns(UncheckedResultWarning, match="dropped without being checked"):
        make()  # type: ignore[operator]
        gc.collect()


def test_match_binds_value_and_error() -> None:
    seen: list[object] = []
    for result in (Ok("guard"), _err()):
        match result:
            case Ok(value):
                seen.append(value)
            case Err(error):
                seen.append(error.device_index)
    assert seen == ["guard", 9]


def test_guard_error_carries_its_fields() -> None:
    error = GuardError("boom", device_index=3, code=101, code_name="cudaErrorInvalidDevice")
    assert (str(error), error.device_index, error.code, error.code_name) == (
        "boom",
        3,
        101,
        "cudaErrorInvalidDevice",
    )


def test_the_result_alias_names_the_ok_and_err_that_create_returns() -> None:
    # Where the core serves Ok and Err, an alias made before they were taken from it names types that
    # create never returns, and a type checker's narrowing, or isinstance on its arguments, misses.
    ok, err = typing.get_args(guard_lib.Result)
    assert typing.get_origin(ok) is Ok
    assert err is Err


def _interrupting_at(code: types.CodeType, instant: int) -> Callable[[types.FrameType, str, Any], Any]:
    """A tracer that raises KeyboardInterrupt before the ``instant``-th instruction run in ``code``."""
    seen = 0

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        nonlocal seen
        if event == "opcode":
            seen += 1
            if seen > instant:
                raise KeyboardInterrupt
        return local

    def calls(frame: types.FrameType, event: str, arg: Any) -> Any:
        if frame.f_code is not code:
            return None
        frame.f_trace = local  # first: Python 3.12 sends opcode events only to a frame with a tracer
        frame.f_trace_opcodes = True
        return local

    return calls


@pytest.mark.parametrize("kind", ["Ok", "Err"])
def test_an_outcome_interrupted_while_it_is_made_is_finalised_without_an_error(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    # Its finaliser runs on whatever __init__ had stored: it may warn about a whole outcome, never fail on
    # half of one (which it would, reading the value for its message, were the flag stored first).
    cls: Any = Ok if kind == "Ok" else Err
    value = 1 if kind == "Ok" else GuardError("cannot select CUDA device 9", device_index=9)
    init = cls.__init__
    if not isinstance(init, types.FunctionType):
        pytest.skip("the compiled core makes its outcomes in C, where no instruction can be interrupted")
    failures: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", failures.append)
    instants = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncheckedResultWarning)
        # Some Pythons (3.12.1, 3.13.0) switch opcode events on for a code object from its next call on:
        # one traced call first, so that the counted calls see every instruction.
        previous = sys.gettrace()
        sys.settrace(_interrupting_at(init.__code__, sys.maxsize))
        try:
            cls(value)
        finally:
            sys.settrace(previous)
        while True:
            previous = sys.gettrace()
            sys.settrace(_interrupting_at(init.__code__, instants))
            try:
                made = cls(value)
            except KeyboardInterrupt:
                instants += 1
                continue
            finally:
                sys.settrace(previous)
            break
        del made
        gc.collect()
    assert instants > 2
    assert failures == []

"""CallerStreamGuard and get_caller_stream: per thread, per task, and the previous selection comes back."""

from __future__ import annotations

import asyncio
import copy
import pickle
import threading

import numpy as np
import pytest

from guard_lib import CallerStreamGuard, GuardError, get_caller_stream, stream_handle


def test_none_when_no_guard_is_active() -> None:
    assert get_caller_stream() is None


def test_nested_guards_restore_the_previous_selection() -> None:
    outer, inner = object(), object()
    with CallerStreamGuard(outer) as guard:
        assert guard.stream is outer
        assert get_caller_stream() is outer
        with CallerStreamGuard(inner):
            assert get_caller_stream() is inner
        assert get_caller_stream() is outer
    assert get_caller_stream() is None


def test_previous_selection_comes_back_after_an_exception() -> None:
    outer = object()
    with CallerStreamGuard(outer):
        with pytest.raises(KeyboardInterrupt), CallerStreamGuard(object()):
            raise KeyboardInterrupt
        assert get_caller_stream() is outer


def test_selection_is_per_thread() -> None:
    mine = object()
    barrier = threading.Barrier(2, timeout=10)
    seen: list[object] = []

    def other() -> None:
        barrier.wait()  # the main thread's guard is active now
        seen.append(get_caller_stream())
        with CallerStreamGuard("theirs"):
            barrier.wait()
            barrier.wait()  # the main thread looked while this guard was active

    worker = threading.Thread(target=other)
    worker.start()
    with CallerStreamGuard(mine):
        barrier.wait()
        barrier.wait()
        looked = get_caller_stream()
        barrier.wait()
    worker.join()
    # Judged once both threads are through: a failed look must not leave the other waiting on the barrier.
    assert looked is mine
    assert seen == [None]


def test_selection_is_per_asyncio_task() -> None:
    # Both tasks read while both of their guards are active, so a selection shared between tasks
    # would show up as one task seeing the other's stream.
    async def task(name: str, inside: dict[str, asyncio.Event], read: dict[str, asyncio.Event]) -> object:
        other = "b" if name == "a" else "a"
        with CallerStreamGuard(name):
            inside[name].set()
            await inside[other].wait()
            seen = get_caller_stream()
            read[name].set()
            await read[other].wait()
        return seen

    async def main() -> list[object]:
        inside = {"a": asyncio.Event(), "b": asyncio.Event()}
        read = {"a": asyncio.Event(), "b": asyncio.Event()}
        return list(await asyncio.gather(task("a", inside, read), task("b", inside, read)))

    assert asyncio.run(main()) == ["a", "b"]
    assert get_caller_stream() is None


def test_not_reentrant_while_active_but_reusable_after() -> None:
    guard = CallerStreamGuard("s")
    with guard:
        with pytest.raises(GuardError, match="already active"), guard:
            pass
        assert get_caller_stream() == "s"
    assert get_caller_stream() is None
    with guard:
        assert get_caller_stream() == "s"


def test_exit_without_enter_is_an_error() -> None:
    with pytest.raises(GuardError, match="without being entered"):
        CallerStreamGuard("s").__exit__(None, None, None)


@pytest.mark.parametrize("duplicate", [copy.copy, copy.deepcopy, pickle.dumps])
def test_cannot_be_copied_or_moved(duplicate: object) -> None:
    with pytest.raises(TypeError, match="cannot be"):
        duplicate(CallerStreamGuard("s"))  # type: ignore[operator]


class _ProtocolStream:
    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


class _LegacyStream:
    __cuda_stream__ = (0, 0xBEEF)


def test_stream_handle_reads_the_cuda_stream_protocol() -> None:
    assert stream_handle(_ProtocolStream(0xABC)) == 0xABC
    assert stream_handle(_LegacyStream()) == 0xBEEF
    assert stream_handle(0) == 0
    assert stream_handle(0x1234) == 0x1234
    # a handle offered as another integer type (numpy's, ctypes') comes back as a plain int
    handle = stream_handle(_ProtocolStream(np.uint64(0xABC)))
    assert handle == 0xABC
    assert type(handle) is int


@pytest.mark.parametrize("stream", [object(), None, True, "0x1"])
def test_stream_handle_refuses_what_is_not_a_stream(stream: object) -> None:
    with pytest.raises(TypeError, match="is not a CUDA stream"):
        stream_handle(stream)


def test_stream_is_carried_unchanged() -> None:
    stream = _ProtocolStream(7)
    with CallerStreamGuard(stream):
        assert get_caller_stream() is stream
        assert stream_handle(get_caller_stream()) == 7

"""``SimulatedRuntime``: a CUDA runtime in memory, for tests on machines with any number of GPUs, or none.

It keeps what the real runtime keeps per thread (the current device and the last error), answers with
CUDA's error codes, logs each thread's calls, and fails on request, including the failure that matters
most to a guard: a ``set_device`` that reports an error and still moves the calling thread, as
``cudaSetDevice`` can once an error is pending on the device.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Final

from . import cuda_errors

__all__ = ["OPS", "SimulatedRuntime"]

OPS: Final = ("get_device", "set_device", "get_device_count")

Call = tuple[str, tuple[int, ...]]


class _Fault:
    __slots__ = ("code", "moves_to", "raises")

    def __init__(self, code: int, moves_to: int | None, raises: BaseException | None = None) -> None:
        self.code = code
        self.moves_to = moves_to
        self.raises = raises


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.device = 0
        self.last_error = cuda_errors.SUCCESS
        self.calls: list[Call] = []


class SimulatedRuntime:
    """A ``DeviceRuntime`` with ``device_count`` devices; every thread starts on device 0. With none, every
    call fails with ``cudaErrorNoDevice``, as CUDA's do on a machine without a device.

    ``calls`` is the calling thread's log of ``(op, args)``. ``fail_next(op, code)`` makes the next call
    of ``op``, on whichever thread comes first, fail with ``code``; ``moves_to`` makes a failing
    ``set_device`` move the thread all the same. ``raise_next(op, exc)`` lets the next call take effect
    and then raise, as an interrupt arriving just after the C call returns would. ``contexts`` holds the
    devices that have a primary context: none at first, as in a fresh process, and each device a
    selection lands on, since ``cudaSetDevice`` creates the context from CUDA 12 on.
    """

    __slots__ = ("__weakref__", "_device_count", "_faults", "_lock", "_state", "contexts")

    def __init__(self, device_count: int = 2) -> None:
        if type(device_count) is not int or device_count < 0:
            raise ValueError(f"device_count must be an int >= 0, got {device_count!r}")
        self._device_count = device_count
        self._state = _ThreadState()
        self._faults: dict[str, deque[_Fault]] = {op: deque() for op in OPS}
        # Reentrant: a signal handler that lands while this thread holds it may queue or clear faults.
        self._lock = threading.RLock()
        self.contexts: set[int] = set()

    @property
    def device_count(self) -> int:
        return self._device_count

    @property
    def calls(self) -> list[Call]:
        """The calling thread's calls, oldest first; clear it to start a fresh log."""
        return self._state.calls

    @property
    def current_device(self) -> int:
        """The calling thread's current device, read without logging a call."""
        return self._state.device

    def fail_next(self, op: str, code: int, *, moves_to: int | None = None) -> None:
        """Make the next ``op`` fail with ``code`` (and, for ``set_device``, still move to ``moves_to``)."""
        if op not in self._faults:
            raise ValueError(f"fail_next: unknown op {op!r}; expected one of {', '.join(OPS)}")
        if not code:
            raise ValueError("fail_next: code must be a CUDA error code, not cudaSuccess (0)")
        if moves_to is not None and op != "set_device":
            raise ValueError("fail_next: only set_device can move the thread (moves_to)")
        with self._lock:
            self._faults[op].append(_Fault(code, moves_to))

    def raise_next(self, op: str, exception: BaseException) -> None:
        """Make the next ``op`` take effect as usual and then raise ``exception``, as a signal handler
        running just after a C call returns would."""
        if op not in self._faults:
            raise ValueError(f"raise_next: unknown op {op!r}; expected one of {', '.join(OPS)}")
        if not isinstance(exception, BaseException):
            raise TypeError(f"raise_next: exception must be a BaseException instance, got {exception!r}")
        with self._lock:
            self._faults[op].append(_Fault(cuda_errors.SUCCESS, None, exception))

    def clear_faults(self) -> None:
        """Drop every fault that ``fail_next`` or ``raise_next`` queued and no call has met yet."""
        with self._lock:
            for queue in self._faults.values():
                queue.clear()

    def _fault(self, op: str) -> _Fault | None:
        queue = self._faults[op]
        with self._lock:
            return queue.popleft() if queue else None

    def _fail(self, code: int) -> int:
        self._state.last_error = code
        return code

    def get_device(self) -> tuple[int, int | None]:
        state = self._state
        state.calls.append(("get_device", ()))
        fault = self._fault("get_device")
        if fault is not None:
            if fault.raises is not None:
                raise fault.raises
            # Like cuda-python, a failed query answers no value at all rather than a plausible one.
            return self._fail(fault.code), None
        if not self._device_count:
            return self._fail(cuda_errors.NO_DEVICE), None
        return cuda_errors.SUCCESS, state.device

    def set_device(self, index: int, /) -> tuple[int]:
        state = self._state
        state.calls.append(("set_device", (index,)))
        fault = self._fault("set_device")
        if fault is not None and fault.raises is not None:
            self._select(index)
            raise fault.raises
        if fault is not None:
            if fault.moves_to is not None:
                state.device = fault.moves_to
                self.contexts.add(fault.moves_to)
            return (self._fail(fault.code),)
        return (self._select(index),)

    def _select(self, index: int) -> int:
        if not 0 <= index < self._device_count:
            return self._fail(cuda_errors.INVALID_DEVICE if self._device_count else cuda_errors.NO_DEVICE)
        self._state.device = index
        self.contexts.add(index)
        return cuda_errors.SUCCESS

    def get_device_count(self) -> tuple[int, int | None]:
        self._state.calls.append(("get_device_count", ()))
        fault = self._fault("get_device_count")
        if fault is not None:
            if fault.raises is not None:
                raise fault.raises
            return self._fail(fault.code), None
        if not self._device_count:
            return self._fail(cuda_errors.NO_DEVICE), 0
        return cuda_errors.SUCCESS, self._device_count

    def get_last_error(self) -> tuple[int]:
        state = self._state
        code, state.last_error = state.last_error, cuda_errors.SUCCESS
        return (code,)

    def peek_at_last_error(self) -> tuple[int]:
        return (self._state.last_error,)

    def error_name(self, code: int, /) -> str:
        return cuda_errors.error_name(code)

    def __repr__(self) -> str:
        return f"SimulatedRuntime(device_count={self._device_count})"

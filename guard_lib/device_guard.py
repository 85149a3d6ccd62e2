"""``DeviceGuard``: borrow a CUDA device and put the caller's device back.

Several backends can run in one process with their engines on different devices. Each must leave the
thread's current device as it found it, or the next backend inherits a selection it never made. Kernel
launches follow the stream they are given, but allocation follows the current device, so a backend that
allocates has to select a device even when the caller chose the stream.
"""

from __future__ import annotations

import logging
import operator
import warnings
from threading import get_ident
from typing import Any, TypeVar

from . import cuda_errors
from .errors import GuardError, GuardTypeError
from .result import Err, Ok, Result
from .runtime import DeviceRuntime, get_runtime

__all__ = ["DeviceGuard", "device"]

logger = logging.getLogger("guard_lib")

_B = TypeVar("_B", bound="_Borrow")

# Bound at import: a finaliser that runs at interpreter shutdown may find module globals already cleared.
_warn = warnings.warn


def _as_int(device_index: object) -> int | GuardTypeError:
    """A device index that is not a plain int, as one; or the refusal of what is not an integer."""
    if isinstance(device_index, bool):
        # bool is an int to Python, but True as a device is a bug in the caller, not device 1.
        return _type_error(device_index)
    try:
        return operator.index(device_index)  # type: ignore[arg-type]
    except TypeError:
        return _type_error(device_index)


def _type_error(device_index: object) -> GuardTypeError:
    return GuardTypeError(
        f"cannot select CUDA device {device_index!r}: a device index is an int, "
        f"not {type(device_index).__name__}",
        device_index=None,
    )


def _cuda_error(runtime: DeviceRuntime, what: str, index: int, code: int) -> GuardError:
    # The refusal travels in the Err; leave no error pending for the next backend to trip over.
    runtime.get_last_error()
    name = runtime.error_name(code)
    if int(code) in cuda_errors.NO_CUDA_CODES:
        message = f"{what}: no CUDA driver or device was found ({name})"
    else:
        message = f"{what}: {name}"
    return GuardError(message, device_index=index, code=int(code), code_name=name)


def _restore(runtime: DeviceRuntime, original: int, selected: int) -> None:
    (code,) = runtime.set_device(original)
    if code:
        logger.error(
            "could not restore CUDA device %d after selecting device %d: %s; "
            "this thread may still be on device %d",
            original,
            selected,
            runtime.error_name(code),
            selected,
        )


class _Borrow:
    """What ``DeviceGuard`` and ``device`` share: the selection, and the restore that undoes it."""

    __slots__ = ("_current", "_index", "_original", "_requested_runtime", "_restored", "_runtime", "_thread")
    _index: object
    _requested_runtime: DeviceRuntime | None
    _runtime: DeviceRuntime
    _original: int
    _current: int
    _thread: int
    _restored: bool

    def _enter(self: _B) -> _B:
        """Select ``_index`` on this thread and record what to restore; raise GuardError if refused.

        ``device`` uses it as its ``__enter__`` as it stands, so a ``with`` block costs no extra call.
        """
        if not self._restored:
            raise GuardError(
                f"guard_lib.device({self._index!r}) is already entered; it is not reentrant",
                device_index=self._current,
            )
        requested = self._index
        if type(requested) is int:
            index = requested
        else:
            converted = _as_int(requested)
            if isinstance(converted, GuardError):
                raise converted
            index = converted
        if index < 0:
            # Refused rather than passed on: some runtimes read a negative index as "leave the device
            # alone", which would hand the caller a guard that selected nothing.
            raise GuardError(f"cannot select CUDA device {index}: a device index is >= 0", device_index=index)
        runtime = self._requested_runtime
        if runtime is None:
            runtime = get_runtime()
        code, original = runtime.get_device()
        if code:
            raise _cuda_error(runtime, "cannot read the current CUDA device", index, code)
        if index != original:
            (code,) = runtime.set_device(index)
            if code:
                # The switch's result decides nothing: a failed selection can still move the thread once
                # an error is pending on the device, so look where the thread is. Restoring only when it
                # moved, or cannot be read, also keeps a refusal from creating a context on the caller's
                # device, which cudaSetDevice does from CUDA 12 on.
                read, now = runtime.get_device()
                if read or now != original:
                    _restore(runtime, original, index)
                raise _cuda_error(runtime, f"cannot select CUDA device {index}", index, code)
        self._runtime = runtime
        self._original = original
        self._current = index
        self._thread = get_ident()
        self._restored = False
        return self

    @property
    def original_device(self) -> int:
        """The device that was current before the selection, which ``close`` restores."""
        return self._original

    @property
    def current_device(self) -> int:
        """The device that was selected."""
        return self._current

    def close(self, *_exc_info: object) -> None:
        """Restore the caller's device. Closing again, or closing a guard taken over, does nothing.

        Also the ``__exit__`` of both context managers, so leaving a ``with`` block costs one call.
        """
        if self._restored:
            return
        if self._thread != get_ident():
            raise GuardError(
                f"a DeviceGuard for CUDA device {self._current} belongs to the thread that created it; "
                "CUDA's current device is per thread, so it cannot be restored from another",
                device_index=self._current,
            )
        self._restored = True
        if self._current != self._original:
            _restore(self._runtime, self._original, self._current)

    __exit__ = close

    def __copy__(self) -> Any:
        raise TypeError(f"a {type(self).__name__} cannot be copied: DeviceGuard.take() hands a borrow over")

    def __deepcopy__(self, memo: object) -> Any:
        raise TypeError(f"a {type(self).__name__} cannot be copied: DeviceGuard.take() hands a borrow over")

    def __reduce__(self) -> Any:
        raise TypeError(f"a {type(self).__name__} cannot be pickled: it holds a thread's device selection")


class DeviceGuard(_Borrow):
    """A borrowed CUDA device: selected by ``create``, the caller's device restored by ``close``.

    Use it as a context manager. A guard belongs to the thread that created it, because CUDA's current
    device is per thread. ``take()`` hands the borrow to a new guard; only that one restores.
    """

    __slots__ = ()

    def __new__(cls, *args: object, **kwargs: object) -> DeviceGuard:
        raise TypeError("DeviceGuard cannot be constructed directly: use DeviceGuard.create(index)")

    @classmethod
    def create(cls, device_index: int, *, runtime: DeviceRuntime | None = None) -> Result[DeviceGuard]:
        """Select ``device_index`` on this thread and return a guard that restores the caller's device.

        Never raises for a CUDA failure or a refused index: those come back as ``Err(GuardError)``.
        """
        guard = object.__new__(cls)
        guard._index = device_index
        guard._requested_runtime = runtime
        guard._restored = True  # until something is selected, there is nothing to owe
        try:
            guard._enter()
        except GuardError as error:
            return Err(error)
        return Ok(guard)

    def take(self) -> DeviceGuard:
        """Hand the borrow to a new guard, which alone restores; this one is left looking restored."""
        if self._restored:
            raise GuardError(
                f"cannot take over a DeviceGuard for CUDA device {self._current}: it was closed or taken",
                device_index=self._current,
            )
        taker = object.__new__(DeviceGuard)
        taker._runtime = self._runtime
        taker._original = self._original
        taker._current = self._current
        taker._thread = self._thread
        taker._restored = False
        # Without this, both guards would put the device back, the second undoing whatever the thread
        # selected in between.
        self._restored = True
        return taker

    def __enter__(self) -> DeviceGuard:
        return self

    def __repr__(self) -> str:
        state = "restored" if self._restored else "open"
        return f"<DeviceGuard device {self._current} (restores {self._original}), {state}>"

    # mutmut would put its trampoline between the collector and this finaliser, moving the frame the
    # warning points at; the critical harness mutates it instead.
    def __del__(self) -> None:  # pragma: no mutate block
        # No restore here: the collector may run this on any thread, and restoring there would move that
        # thread's device instead of the owner's.
        if not self._restored:
            _warn(
                f"DeviceGuard for CUDA device {self._current} was garbage-collected without close(); "
                f"device {self._original} was never restored",
                ResourceWarning,
                stacklevel=2,
                source=self,
            )


class device(_Borrow):
    """``with guard_lib.device(i) as borrow:`` selects device ``i`` and restores the caller's on exit.

    For callers who prefer exceptions: entering raises GuardError where ``DeviceGuard.create`` returns
    an Err. The selection happens on entering, not on construction; once exited, it can be entered
    again. ``borrow.original_device`` and ``borrow.current_device`` are there once entered.
    """

    __slots__ = ()

    def __init__(self, device_index: int, *, runtime: DeviceRuntime | None = None) -> None:
        self._index = device_index
        self._requested_runtime = runtime
        self._restored = True

    __enter__ = _Borrow._enter

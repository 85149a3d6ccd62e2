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
from types import TracebackType
from typing import Any

from . import cuda_errors
from .errors import GuardError, GuardTypeError
from .result import Err, Ok, Result
from .runtime import DeviceRuntime, get_runtime

__all__ = ["DeviceGuard", "device"]

logger = logging.getLogger("guard_lib")

# Bound at import: a finaliser that runs at interpreter shutdown may find module globals already cleared.
_warn = warnings.warn


def _index_of(device_index: object) -> int | GuardError:
    """The device index as a plain int, or the error refusing it, decided before any CUDA call."""
    if type(device_index) is int:
        index = device_index
    elif isinstance(device_index, bool):
        # bool is an int to Python, but True as a device is a bug in the caller, not device 1.
        return _type_error(device_index)
    else:
        try:
            index = operator.index(device_index)  # type: ignore[arg-type]
        except TypeError:
            return _type_error(device_index)
    if index < 0:
        # Refused rather than passed on: some runtimes read a negative index as "leave the device alone",
        # which would hand the caller a guard that selected nothing.
        return GuardError(f"cannot select CUDA device {index}: a device index is >= 0", device_index=index)
    return index


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
    reason = "no CUDA driver or device was found" if int(code) in cuda_errors.NO_CUDA_CODES else name
    message = f"{what}: {reason}" if reason == name else f"{what}: {reason} ({name})"
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


class DeviceGuard:
    """A borrowed CUDA device: selected by ``create``, the caller's device restored by ``close``.

    Use it as a context manager. A guard belongs to the thread that created it, because CUDA's current
    device is per thread. ``take()`` hands the borrow to a new guard; only that one restores.
    """

    __slots__ = ("_current", "_original", "_restored", "_runtime", "_thread")
    _runtime: DeviceRuntime
    _original: int
    _current: int
    _thread: int
    _restored: bool

    def __new__(cls, *args: object, **kwargs: object) -> DeviceGuard:
        raise TypeError("DeviceGuard cannot be constructed directly: use DeviceGuard.create(index)")

    @classmethod
    def _new(cls, runtime: DeviceRuntime, original: int, current: int, thread: int) -> DeviceGuard:
        guard = object.__new__(cls)
        guard._runtime = runtime
        guard._original = original
        guard._current = current
        guard._thread = thread
        guard._restored = False
        return guard

    @classmethod
    def _open(cls, device_index: object, runtime: DeviceRuntime | None) -> DeviceGuard | GuardError:
        index = _index_of(device_index)
        if isinstance(index, GuardError):
            return index
        if runtime is None:
            runtime = get_runtime()
        code, original = runtime.get_device()
        if code:
            return _cuda_error(runtime, "cannot read the current CUDA device", index, code)
        if index != original:
            (code,) = runtime.set_device(index)
            if code:
                # Put the caller's device back because of what was asked for, not because the switch
                # reported success: a failed selection can still move the thread once an error is pending.
                _restore(runtime, original, index)
                return _cuda_error(runtime, f"cannot select CUDA device {index}", index, code)
        return cls._new(runtime, original, index, get_ident())

    @classmethod
    def create(cls, device_index: int, *, runtime: DeviceRuntime | None = None) -> Result[DeviceGuard]:
        """Select ``device_index`` on this thread and return a guard that restores the caller's device.

        Never raises for a CUDA failure or a refused index: those come back as ``Err(GuardError)``.
        """
        opened = cls._open(device_index, runtime)
        if isinstance(opened, GuardError):
            return Err(opened)
        return Ok(opened)

    @property
    def original_device(self) -> int:
        """The device that was current before the guard, which ``close`` restores."""
        return self._original

    @property
    def current_device(self) -> int:
        """The device the guard selected."""
        return self._current

    def close(self) -> None:
        """Restore the caller's device. Closing again, or closing a guard taken over, does nothing."""
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

    def take(self) -> DeviceGuard:
        """Hand the borrow to a new guard, which alone restores; this one is left looking restored."""
        if self._restored:
            raise GuardError(
                f"cannot take over a DeviceGuard for CUDA device {self._current}: it was closed or taken",
                device_index=self._current,
            )
        taker = self._new(self._runtime, self._original, self._current, self._thread)
        # Without this, both guards would put the device back, the second undoing whatever the thread
        # selected in between.
        self._restored = True
        return taker

    def __enter__(self) -> DeviceGuard:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "restored" if self._restored else "open"
        return f"<DeviceGuard device {self._current} (restores {self._original}), {state}>"

    def __del__(self) -> None:
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

    def __copy__(self) -> Any:
        raise TypeError("a DeviceGuard cannot be copied: use take() to hand the borrow over")

    def __deepcopy__(self, memo: object) -> Any:
        raise TypeError("a DeviceGuard cannot be copied: use take() to hand the borrow over")

    def __reduce__(self) -> Any:
        raise TypeError("a DeviceGuard cannot be pickled: it holds a thread's device selection")


class device:
    """``with guard_lib.device(i):`` selects device ``i`` and restores the caller's on exit.

    For callers who prefer exceptions: entering raises GuardError where ``DeviceGuard.create`` would
    return an Err. The selection happens on entering, not on construction.
    """

    __slots__ = ("_guard", "_index", "_runtime")

    def __init__(self, device_index: int, *, runtime: DeviceRuntime | None = None) -> None:
        self._index = device_index
        self._runtime = runtime
        self._guard: DeviceGuard | None = None

    def __enter__(self) -> DeviceGuard:
        if self._guard is not None:
            raise GuardError(
                f"guard_lib.device({self._index!r}) is already entered; it is not reentrant",
                device_index=self._guard._current,
            )
        opened = DeviceGuard._open(self._index, self._runtime)
        if isinstance(opened, GuardError):
            raise opened
        self._guard = opened
        return opened

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        guard = self._guard
        if guard is not None:
            self._guard = None
            guard.close()

"""What both implementations of the guard share: reading a device index, the refusals and their
messages, the restore and its log, and what the decorator refuses.

The compiled core calls these where the reference does, so both say the same words and make the same
runtime calls on every path that is not the hot one. Nothing here asks which implementation is in use.
"""

from __future__ import annotations

import inspect
import logging
import operator
from collections.abc import Callable

from . import cuda_errors
from .errors import GuardError, GuardTypeError
from .runtime import DeviceRuntime

__all__ = [
    "as_int",
    "closed_guard",
    "cuda_error",
    "logger",
    "not_owner",
    "refuse_undecoratable",
    "restore",
    "restore_failed",
    "type_error",
]

logger = logging.getLogger("guard_lib")


def as_int(device_index: object) -> int | GuardTypeError:
    """A device index that is not a plain int, as one; or the refusal of what is not an integer."""
    if isinstance(device_index, bool):
        # bool is an int to Python, but True as a device is a bug in the caller, not device 1.
        return type_error(device_index)
    try:
        return operator.index(device_index)  # type: ignore[arg-type]
    except TypeError:
        return type_error(device_index)


def type_error(device_index: object) -> GuardTypeError:
    return GuardTypeError(
        f"cannot select CUDA device {device_index!r}: a device index is an int, "
        f"not {type(device_index).__name__}",
        device_index=None,
    )


def not_owner(current: int, action: str) -> GuardError:
    """The refusal of a thread that does not own a borrow: ``action`` is what it tried ("entered", ...)."""
    return GuardError(
        f"a DeviceGuard for CUDA device {current} belongs to the thread that created it; "
        f"CUDA's current device is per thread, so it cannot be {action} from another",
        device_index=current,
    )


def closed_guard(current: int) -> GuardError:
    # Entering a guard that owes nothing would run the body on whatever device the thread is on.
    return GuardError(
        f"this DeviceGuard for CUDA device {current} was closed or taken, so it selects no device: "
        "create another",
        device_index=current,
    )


def cuda_error(runtime: DeviceRuntime, what: str, index: int, code: int) -> GuardError:
    # The refusal travels in the Err; leave no error pending for the next backend to trip over.
    runtime.get_last_error()
    name = runtime.error_name(code)
    if int(code) in cuda_errors.NO_CUDA_CODES:
        message = f"{what}: no CUDA driver or device was found ({name})"
    else:
        message = f"{what}: {name}"
    return GuardError(message, device_index=index, code=int(code), code_name=name)


def restore(runtime: DeviceRuntime, original: int, selected: int, found: int | None) -> None:
    """Select ``original`` again after asking for ``selected``; the thread was last seen on ``found``
    (None: its device could not be read)."""
    (code,) = runtime.set_device(original)
    if code:
        restore_failed(runtime, original, selected, found, code)


def restore_failed(
    runtime: DeviceRuntime, original: int, selected: int, found: int | None, code: int
) -> None:
    # Like a refusal, a failed restore is reported here; the next backend must not trip over it.
    runtime.get_last_error()
    # A failed switch can move the thread elsewhere than asked, so the log says where it was found; and
    # an unreadable device must not cost the log, which is all the caller will learn of the failure.
    if found is None:
        logger.error(
            "could not restore CUDA device %d after selecting device %d: %s; "
            "the device this thread is on could not be read",
            original,
            selected,
            runtime.error_name(code),
        )
        return
    logger.error(
        "could not restore CUDA device %d after selecting device %d: %s; "
        "this thread may still be on device %d",
        original,
        selected,
        runtime.error_name(code),
        found,
    )


def refuse_undecoratable(index: object, function: Callable[..., object]) -> None:
    """Raise the TypeError for what ``@guard_lib.device(index)`` cannot decorate (both implementations)."""
    if not callable(function):
        raise TypeError(f"guard_lib.device({index!r}) decorates a function, not {function!r}")
    if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
        # The device is per thread and every task on it shares it: a borrow held across an await
        # moves the device under every other task that runs meanwhile.
        raise TypeError(
            f"guard_lib.device cannot decorate {function.__qualname__}, a coroutine function: the "
            "borrow would be held across await; borrow inside it, between awaits"
        )
    if inspect.isgeneratorfunction(function):
        raise TypeError(
            f"guard_lib.device cannot decorate {function.__qualname__}, a generator function: its "
            "body runs after the call returns, outside the borrow"
        )

"""guard_lib: borrow a CUDA device and put the caller's device back, shared by every backend in a process.

    result = DeviceGuard.create(engine_device)
    match result:
        case Ok(guard):
            with guard:
                ...  # allocate and launch on engine_device
        case Err(error):
            ...  # nothing was selected; error says why

``guard_lib.device(i)`` does the same for callers who prefer exceptions.
"""

from __future__ import annotations

from . import runtime
from .caller_stream import CallerStreamGuard, get_caller_stream, stream_handle
from .device_guard import DeviceGuard, device
from .errors import GuardError, GuardTypeError, UncheckedResultWarning
from .result import Err, Ok, Result

__all__ = [
    "CallerStreamGuard",
    "DeviceGuard",
    "Err",
    "GuardError",
    "GuardTypeError",
    "Ok",
    "Result",
    "UncheckedResultWarning",
    "device",
    "get_caller_stream",
    "runtime",
    "stream_handle",
]

__version__ = "0.1.0"

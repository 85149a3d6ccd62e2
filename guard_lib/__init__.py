"""guard_lib: borrow a CUDA device and put the caller's device back, shared by every backend in a process.

    result = DeviceGuard.create(engine_device)
    match result:
        case Ok(guard):
            with guard:
                ...  # allocate and launch on engine_device
        case Err(error):
            ...  # nothing was selected; error says why

``guard_lib.device(i)`` does the same for callers who prefer exceptions. ``IMPLEMENTATION`` says whether
the compiled core or the Python reference (``device_guard``) serves them (``implementation`` says why).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import implementation, runtime
from .caller_stream import CallerStreamGuard, get_caller_stream, stream_handle
from .errors import GuardError, GuardTypeError, UncheckedResultWarning
from .implementation import CORE as _CORE
from .implementation import IMPLEMENTATION
from .result import Err, Ok, Result

if TYPE_CHECKING or _CORE is None:
    # One API: the compiled classes type as the reference's.
    from .device_guard import DeviceGuard, device
else:
    DeviceGuard, device = _CORE.DeviceGuard, _CORE.device

__all__ = [
    "IMPLEMENTATION",
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
    "implementation",
    "runtime",
    "stream_handle",
]

__version__ = "0.1.0"

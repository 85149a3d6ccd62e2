"""The seam between a guard and the CUDA runtime it drives.

A guard needs four questions answered: which device is current, select another, how many are there, and
what an error code is called. ``DeviceRuntime`` states them in the shapes of ``cuda.bindings.runtime``
(a tuple whose first item is the error code) so that ``CudaRuntime`` can hand the bindings' own functions
to the guard, with nothing of ours between the guard and the driver on the hot path.
``SimulatedRuntime`` answers the same questions for tests, with faults on demand.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Protocol, runtime_checkable

from . import cuda_errors
from .errors import GuardError
from .simulated import SimulatedRuntime

__all__ = [
    "RUNTIME_ENV",
    "CudaRuntime",
    "DeviceRuntime",
    "RuntimeChoice",
    "SimulatedRuntime",
    "get_runtime",
    "runtime_from_spec",
    "use_runtime",
]

RUNTIME_ENV = "GUARD_LIB_RUNTIME"


@runtime_checkable
class DeviceRuntime(Protocol):
    """What a guard needs from a CUDA runtime. Codes are ``cudaError_t`` values; 0 is success."""

    def get_device(self) -> tuple[int, Any]:
        """``cudaGetDevice``: ``(code, index)``; the index is meaningless unless code is 0."""
        ...

    def set_device(self, index: int, /) -> tuple[int]:
        """``cudaSetDevice``: ``(code,)``."""
        ...

    def get_device_count(self) -> tuple[int, Any]:
        """``cudaGetDeviceCount``: ``(code, count)``."""
        ...

    def get_last_error(self) -> tuple[int]:
        """``cudaGetLastError``: returns the calling thread's last error and clears it."""
        ...

    def peek_at_last_error(self) -> tuple[int]:
        """``cudaPeekAtLastError``: the calling thread's last error, left in place."""
        ...

    def error_name(self, code: int, /) -> str:
        """The name of an error code, such as ``"cudaErrorInvalidDevice"``."""
        ...


# The modules whose absence means cuda-bindings is not installed, rather than installed and broken.
_BINDINGS_MODULES = frozenset({"cuda", "cuda.bindings", "cuda.bindings.runtime"})


def _bindings_missing(error: ImportError) -> str:
    missing = isinstance(error, ModuleNotFoundError) and error.name in _BINDINGS_MODULES
    what = "is not installed" if missing else f"cannot be imported ({error})"
    return (
        f"cannot use the CUDA runtime: cuda-bindings {what}; install it with pip install cuda-bindings "
        f"(tests without CUDA can set {RUNTIME_ENV}=simulated)"
    )


class CudaRuntime:
    """The real CUDA runtime, through ``cuda.bindings.runtime`` (the cuda-bindings package).

    Constructing one loads the bindings but makes no CUDA call; on a machine with no driver the calls
    answer with an error code (``cudaErrorInsufficientDriver`` or ``cudaErrorNoDevice``), which guards
    turn into an Err. Where cuda-bindings is not installed, constructing one raises GuardError, so a
    guard on the default runtime returns an Err that says so.
    """

    # Weakly referable, so that the compiled core can keep its entry points without keeping it alive.
    __slots__ = (
        "__weakref__",
        "_bindings",
        "get_device",
        "get_device_count",
        "get_last_error",
        "peek_at_last_error",
        "set_device",
    )

    def __init__(self) -> None:
        # Imported here, not at the top: a process that only ever simulates never loads the bindings.
        try:
            from cuda.bindings import runtime as bindings  # noqa: PLC0415
        except ImportError as error:
            # A GuardError, so that a guard on the default runtime returns its Err (or ``device`` raises
            # it) rather than an ImportError escaping from a call that promises a Result.
            raise GuardError(_bindings_missing(error), device_index=None) from error
        self._bindings = bindings
        self.get_device = bindings.cudaGetDevice
        self.set_device = bindings.cudaSetDevice
        self.get_device_count = bindings.cudaGetDeviceCount
        self.get_last_error = bindings.cudaGetLastError
        self.peek_at_last_error = bindings.cudaPeekAtLastError

    def c_entry_points(self) -> tuple[object, object] | None:
        """``cudaGetDevice`` and ``cudaSetDevice`` as the capsules cuda-bindings exports for C callers, so
        that the compiled core calls them with no Python in between; None where they cannot be had, or
        where ``get_device`` or ``set_device`` no longer is the bindings' own."""
        bindings = self._bindings
        if self.get_device is not bindings.cudaGetDevice or self.set_device is not bindings.cudaSetDevice:
            return None
        try:
            from cuda.bindings import cyruntime  # noqa: PLC0415

            capsules = cyruntime.__pyx_capi__
            return capsules["cudaGetDevice"], capsules["cudaSetDevice"]
        except (ImportError, AttributeError, KeyError):
            return None

    def error_name(self, code: int, /) -> str:
        try:
            return str(self._bindings.cudaError_t(int(code)).name)
        except ValueError:
            return cuda_errors.error_name(code)

    def __repr__(self) -> str:
        return "CudaRuntime()"


def runtime_from_spec(spec: str) -> DeviceRuntime:
    """Build the runtime a ``GUARD_LIB_RUNTIME`` value names: ``cuda``, ``simulated`` or ``simulated:N``."""
    name, sep, count = spec.strip().partition(":")
    if name == "cuda" and not sep:
        return CudaRuntime()
    if name == "simulated":
        if not sep:
            return SimulatedRuntime()
        if count.isdigit() and int(count) >= 1:
            return SimulatedRuntime(device_count=int(count))
    raise ValueError(
        f"{RUNTIME_ENV}={spec!r} names no runtime: use 'cuda', 'simulated' or 'simulated:N' with N >= 1"
    )


_default: DeviceRuntime | None = None
_default_lock = threading.Lock()


def get_runtime() -> DeviceRuntime:
    """The process's default runtime: ``CudaRuntime`` unless ``GUARD_LIB_RUNTIME`` or ``use_runtime`` says
    otherwise. Raises ValueError when ``GUARD_LIB_RUNTIME`` holds a value that names no runtime, and
    GuardError when the default is CUDA and cuda-bindings is not installed (asked again on the next call)."""
    if _default is None:
        return _init_default()
    return _default


def _init_default() -> DeviceRuntime:
    global _default
    with _default_lock:
        if _default is None:
            spec = os.environ.get(RUNTIME_ENV)
            _default = CudaRuntime() if spec is None else runtime_from_spec(spec)
        return _default


class RuntimeChoice:
    """What ``use_runtime`` returns: the default it replaced, put back by ``restore()`` or on leaving a
    ``with`` block; restoring again does nothing."""

    __slots__ = ("_previous", "_restored", "runtime")

    def __init__(self, runtime: DeviceRuntime, previous: DeviceRuntime | None) -> None:
        self.runtime = runtime
        # As it was, None included: an unbuilt default stays unbuilt, and is built from the environment
        # only when a guard first needs it.
        self._previous = previous
        self._restored = False

    def restore(self) -> None:
        """Put back the default that ``use_runtime`` replaced."""
        global _default
        with _default_lock:
            if not self._restored:
                _default = self._previous
                self._restored = True

    def __enter__(self) -> DeviceRuntime:
        return self.runtime

    def __exit__(self, *_exc_info: object) -> None:
        self.restore()

    def __repr__(self) -> str:
        state = "restored" if self._restored else "in use"
        return f"<RuntimeChoice {self.runtime!r}, {state}>"


def use_runtime(runtime: DeviceRuntime) -> RuntimeChoice:
    """Make ``runtime`` the process's default now; the returned ``RuntimeChoice`` puts the previous one
    back, by ``restore()`` or at the end of ``with use_runtime(runtime):``.

    A setter rather than a context manager alone, so that a call without ``with`` does what it says. The
    default is process-wide, not per thread, so threads started meanwhile see it too. Choices nest; they
    must be restored in the reverse order of making them.
    """
    global _default
    if not isinstance(runtime, DeviceRuntime):
        raise TypeError(f"use_runtime() needs a DeviceRuntime, got {type(runtime).__name__}")
    with _default_lock:
        choice = RuntimeChoice(runtime, _default)
        _default = runtime
    return choice

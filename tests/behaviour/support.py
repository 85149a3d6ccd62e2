"""Helpers shared by guard_lib's tests."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

from guard_lib import DeviceGuard, Err, GuardError, Result
from guard_lib.runtime import DeviceRuntime, SimulatedRuntime

_capsule = ctypes.pythonapi.PyCapsule_New
_capsule.restype = ctypes.py_object
_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_GetDevice = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int))
_SetDevice = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
# Module constants, so the names the capsules point at live as long as the process.
GET_DEVICE_SIGNATURE = b"cudaError_t (int *)"
SET_DEVICE_SIGNATURE = b"cudaError_t (int)"


class EntryPointRuntime(SimulatedRuntime):
    """A simulated runtime that also offers C entry points, as ``CudaRuntime`` does with cuda-python's.

    The compiled core calls a runtime through them when it offers them, so this one lets that path run
    where no GPU is. Each C call is logged in ``c_calls`` as well as in ``calls``.
    """

    __slots__ = ("_c_get_device", "_c_set_device", "c_calls", "during_c_switch")

    def __init__(self, device_count: int = 2) -> None:
        super().__init__(device_count)
        self.c_calls: list[str] = []
        # Runs inside the C set_device, before it switches: what a callback into Python could do there.
        self.during_c_switch: Callable[[], object] = lambda: None

        def get_device(out: ctypes._Pointer[ctypes.c_int]) -> int:
            self.c_calls.append("get_device")
            code, index = SimulatedRuntime.get_device(self)
            if not code:
                out[0] = index
            return int(code)

        def set_device(index: int) -> int:
            self.c_calls.append("set_device")
            self.during_c_switch()
            return int(SimulatedRuntime.set_device(self, index)[0])

        self._c_get_device = _GetDevice(get_device)
        self._c_set_device = _SetDevice(set_device)

    def c_entry_points(self) -> tuple[object, object]:
        return self.capsules(GET_DEVICE_SIGNATURE, SET_DEVICE_SIGNATURE)

    def capsules(self, get_name: bytes | None, set_name: bytes | None) -> tuple[object, object]:
        """This runtime's C functions as capsules under the names given (None: a capsule with no name)."""
        return (
            _capsule(ctypes.cast(self._c_get_device, ctypes.c_void_p), get_name, None),
            _capsule(ctypes.cast(self._c_set_device, ctypes.c_void_p), set_name, None),
        )

    def __repr__(self) -> str:
        return f"EntryPointRuntime(device_count={self.device_count})"


def current(runtime: DeviceRuntime) -> int:
    """The calling thread's device. Read from the simulated runtime without logging a call."""
    if isinstance(runtime, SimulatedRuntime):
        return runtime.current_device
    code, index = runtime.get_device()
    assert not code, runtime.error_name(code)
    return int(index)


def select(runtime: DeviceRuntime, index: int) -> None:
    """Select a device behind the guard's back, as another backend would."""
    (code,) = runtime.set_device(index)
    assert not code, runtime.error_name(code)


def device_count(runtime: DeviceRuntime) -> int:
    code, count = runtime.get_device_count()
    assert not code, runtime.error_name(code)
    return int(count)


def clear_calls(runtime: DeviceRuntime) -> None:
    if isinstance(runtime, SimulatedRuntime):
        runtime.calls.clear()


def refusal(result: Result[DeviceGuard]) -> GuardError:
    """The error of a result that must be an Err."""
    assert isinstance(result, Err), f"expected a refusal, got {result!r}"
    return result.error


class SlottedRuntime(EntryPointRuntime):
    """Holds its get_device and set_device in slots of its own, as CudaRuntime does, and offers C entry
    points."""

    __slots__ = ("get_device", "set_device")

    def __init__(self, device_count: int) -> None:
        super().__init__(device_count)
        self.get_device = functools.partial(SimulatedRuntime.get_device, self)  # type: ignore[method-assign]
        self.set_device = functools.partial(SimulatedRuntime.set_device, self)  # type: ignore[method-assign]

"""What the compiled core's caches once got wrong, and the reference always got right (issue 46).

Each case runs on both implementations: the reference defines the behaviour, and the core must match it
without writing past an object, calling freed code, ignoring a replaced method or keeping a runtime alive.
"""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import weakref
from pathlib import Path
from typing import Any

import pytest

import guard_lib
from guard_lib import DeviceGuard, device
from guard_lib import runtime as runtime_module
from guard_lib.runtime import SimulatedRuntime

from .support import GET_DEVICE_SIGNATURE, SET_DEVICE_SIGNATURE, EntryPointRuntime

COMPILED = guard_lib.IMPLEMENTATION == "compiled"
KINDS = ["get_device", "set_device"]


class _NoGuard:
    """A class object.__new__ makes, but no guard."""


@pytest.mark.skipif(
    "MUTANT_UNDER_TEST" in os.environ, reason="mutmut's trampoline looks the method up on the class given"
)
@pytest.mark.parametrize(
    ("given", "refusal"),
    [
        (float, r"^object\.__new__\(float\) is not safe"),
        (5, r"^object\.__new__\(X\): X is not a type object \(int\)$"),
        (_NoGuard, r"^DeviceGuard\.create\(\) makes a DeviceGuard, not <class '.*_NoGuard'>$"),
    ],
    ids=["a-builtin-class", "no-class", "a-plain-class"],
)
def test_create_given_what_is_no_guard_class_refuses_as_objects_allocation_does(
    given: object, refusal: str
) -> None:
    create: Any = DeviceGuard.__dict__["create"].__func__
    with pytest.raises(TypeError, match=refusal):
        create(given, 1, runtime=SimulatedRuntime(2))


_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_GetDevice = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int))
_SetDevice = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)


class _FreedWithItsCapsules(EntryPointRuntime):
    """Offers capsules whose destructors stand for freeing the functions they hold: each call made once
    they are gone is logged (the functions are kept, so that such a call is seen rather than crashing)."""

    __slots__ = ("after_free", "kept", "live")

    def __init__(self) -> None:
        super().__init__(2)
        self.after_free: list[str] = []
        self.live = 0
        self.kept: list[object] = []

    def c_entry_points(self) -> tuple[object, object]:
        def get_device(out: Any) -> int:
            if not self.live:
                self.after_free.append("get_device")
            return int(self._c_get_device(out))

        def set_device(index: int) -> int:
            if not self.live:
                self.after_free.append("set_device")
            return int(self._c_set_device(index))

        def freed(_capsule: int) -> None:
            self.live -= 1

        functions = [_GetDevice(get_device), _SetDevice(set_device)]
        destructor = _Destructor(freed)
        self.kept += [*functions, destructor]
        self.live += 2
        on_free = ctypes.cast(destructor, ctypes.c_void_p)
        get, set_ = (ctypes.cast(function, ctypes.c_void_p) for function in functions)
        return _new_capsule(get, GET_DEVICE_SIGNATURE, on_free), _new_capsule(
            set_, SET_DEVICE_SIGNATURE, on_free
        )


def test_entry_points_are_never_called_once_their_capsules_are_gone() -> None:
    rt = _FreedWithItsCapsules()
    for _ in range(3):
        with device(1, runtime=rt):
            assert rt.current_device == 1
        gc.collect()
    assert rt.current_device == 0
    assert rt.after_free == []
    assert bool(rt.c_calls) == COMPILED


class _Open(EntryPointRuntime):
    """Offers C entry points, with a ``__dict__`` of its own."""


@pytest.mark.parametrize("kind", KINDS)
def test_a_method_replaced_by_none_after_the_old_one_died_is_called(kind: str) -> None:
    rt = _Open(2)

    def own(*args: object) -> Any:
        return getattr(SimulatedRuntime, kind)(rt, *args)

    setattr(rt, kind, own)
    with device(1, runtime=rt):
        pass
    setattr(rt, kind, None)
    del own
    gc.collect()
    with pytest.raises(TypeError, match="'NoneType' object is not callable"), device(1, runtime=rt):
        pass
    assert rt.current_device == 0


def test_a_set_device_replaced_by_a_finaliser_while_entering_is_called_both_ways() -> None:
    rt = _Open(2)
    log: list[tuple[str, int]] = []

    def replacement(index: int) -> tuple[int]:
        log.append(("set_device", index))
        return SimulatedRuntime.set_device(rt, index)

    class Replacing(SimulatedRuntime):
        __slots__ = ()

        def __del__(self) -> None:
            rt.set_device = replacement  # type: ignore[method-assign]

    with device(1, runtime=rt):  # the core learns this runtime's entry points
        pass
    saved = runtime_module._default
    try:
        runtime_module._default = Replacing(2)
        borrow = device(1)
        with borrow:
            pass
        runtime_module._default = rt
        # Entering drops the previous runtime, which only the borrow held: its finaliser runs then.
        with borrow:
            assert rt.current_device == 1
    finally:
        runtime_module._default = saved
    assert log == [("set_device", 1), ("set_device", 0)]
    assert rt.current_device == 0


class _Unreferable:
    """A method standing in for the runtime's own: allows no weak reference, and holds the runtime."""

    __slots__ = ("kind", "runtime")

    def __init__(self, kind: str, runtime: SimulatedRuntime) -> None:
        self.kind, self.runtime = kind, runtime

    def __call__(self, *args: object) -> Any:
        return getattr(SimulatedRuntime, self.kind)(self.runtime, *args)


def _held_by_its_methods(rt: _Open) -> Any:
    """``rt`` with methods that allow no weak reference and hold it."""
    for kind in KINDS:
        setattr(rt, kind, _Unreferable(kind, rt))
    return rt


def test_a_runtime_whose_methods_hold_it_is_freed_once_dropped() -> None:
    rt = _held_by_its_methods(_Open(2))
    with device(1, runtime=rt):
        assert rt.current_device == 1
    DeviceGuard.create(1, runtime=rt).unwrap().close()
    dropped = weakref.ref(rt)
    del rt
    gc.collect()
    assert dropped() is None


class _Asked(_Open):
    """Counts the times it is asked for its C entry points."""

    def __init__(self, device_count: int) -> None:
        super().__init__(device_count)
        self.asked = 0

    def c_entry_points(self) -> tuple[object, object]:
        self.asked += 1
        return super().c_entry_points()


@pytest.mark.skipif(not COMPILED, reason="the reference never asks a runtime for C entry points")
def test_a_runtime_whose_methods_allow_no_weak_reference_is_called_through_c_by_one_borrow() -> None:
    # Held strongly, its methods would keep it alive: the borrow that asked holds them and calls through C;
    # later borrows call it from Python, and remember that it was asked rather than ask again.
    rt = _held_by_its_methods(_Asked(2))
    with device(1, runtime=rt):
        assert rt.current_device == 1
    assert (rt.asked, rt.c_calls) == (1, ["get_device", "set_device", "set_device"])
    rt.c_calls.clear()
    for _ in range(3):
        with device(1, runtime=rt):
            assert rt.current_device == 1
    assert (rt.asked, rt.c_calls, rt.current_device) == (1, [], 0)


_FIRST_BORROW_EVER = """
from guard_lib import device
from tests.behaviour.test_core_soundness import _Asked, _held_by_its_methods

rt = _held_by_its_methods(_Asked(2))
for _ in range(3):
    with device(1, runtime=rt):
        pass
print(rt.asked, rt.c_calls, rt.current_device)
"""


@pytest.mark.skipif(not COMPILED, reason="the reference never asks a runtime for C entry points")
def test_the_first_borrow_of_a_process_on_such_a_runtime_is_remembered_too() -> None:
    # In a fresh process the core remembers no runtime yet: what it learns from this one must still be kept.
    # This checkout's tests after whatever the path holds, so that guard_lib stays the one under test.
    paths = [*filter(None, [os.environ.get("PYTHONPATH")]), str(Path(__file__).resolve().parents[2])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_BORROW_EVER], env=env, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout.split(maxsplit=1)) == (
        0,
        ["1", "['get_device', 'set_device', 'set_device'] 0\n"],
    )


class _AnswersWhetherItHoldsTheGil(SimulatedRuntime):
    """Offers as its C set_device CPython's ``PyGILState_Check``, which answers 1 (an error code to the
    core) when the calling thread holds the GIL: a switch or restore made without releasing it fails."""

    __slots__ = ("_get",)

    def __init__(self) -> None:
        super().__init__(2)

        def get_device(out: Any) -> int:
            out[0] = 1
            return 0

        self._get = _GetDevice(get_device)

    def c_entry_points(self) -> tuple[object, object]:
        gil_check = ctypes.cast(ctypes.pythonapi.PyGILState_Check, ctypes.c_void_p)
        return _new_capsule(
            ctypes.cast(self._get, ctypes.c_void_p), GET_DEVICE_SIGNATURE, None
        ), _new_capsule(gil_check, SET_DEVICE_SIGNATURE, None)


@pytest.mark.skipif(not COMPILED, reason="the reference calls every runtime from Python, holding the GIL")
def test_the_c_switch_and_restore_release_the_gil(caplog: pytest.LogCaptureFixture) -> None:
    # A driver call can take long: other Python threads must run meanwhile.
    rt = _AnswersWhetherItHoldsTheGil()
    with caplog.at_level("ERROR", logger="guard_lib"), device(0, runtime=rt) as borrow:
        assert (borrow.original_device, borrow.current_device) == (1, 0)
    assert caplog.records == []

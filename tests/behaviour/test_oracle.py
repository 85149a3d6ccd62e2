"""The differential oracle: one random program, four worlds, the same observations at every step.

Each step runs one operation in four worlds, each with runtimes of its own: the reference
(``guard_lib.device_guard``) and the compiled core (``guard_lib._core``), each over plain simulated runtimes
(the Python protocol) and over simulated runtimes that also offer C entry points. The reference over plain
runtimes is the oracle. After every step the other three must show what it shows: the value returned or the
exception raised (type, message, attributes, cause and context), each runtime's device, call log, pending
error and contexts, the ``guard_lib`` logger's records, the warnings given (collected at a fixed point, so a
dropped guard or result warns in the step that dropped it), unraisable exceptions, and every object the
program holds (its type, repr, devices, state and attributes).

A difference is allowed only where ``oracle_differences.DELIBERATE`` names it; ``KNOWN_BUGS`` names the ones
still to be fixed, each with a reproducer below that must fail until the fix lands.
"""

from __future__ import annotations

import copy
import ctypes
import functools
import gc
import importlib
import importlib.util
import logging
import os
import pickle
import re
import sys
import threading
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MethodType, ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

import guard_lib
from guard_lib import GuardError, cuda_errors
from guard_lib.runtime import SimulatedRuntime, use_runtime

from .oracle_differences import DELIBERATE
from .support import EntryPointRuntime

IMPL_ENV = "GUARD_LIB_IMPL"
EXAMPLES_ENV = "GUARD_LIB_ORACLE_EXAMPLES"
# What the default run costs: fixed, and derandomized, so that every run checks the same programs.
DEFAULT_EXAMPLES = 100
STEPS = 30
DEVICES = 3
LOGGER = logging.getLogger("guard_lib")


def _load_core() -> ModuleType | None:
    try:
        return importlib.import_module("guard_lib._core")
    except ImportError:
        # Where the core is required, its absence is a failure of this module, not a skip.
        if os.environ.get(IMPL_ENV, "").strip() == "compiled":
            raise
        return None


CORE = _load_core()


def _executed_afresh(name: str) -> ModuleType:
    """guard_lib's module ``name`` executed again, apart from the one imported; the code is the one the import
    system serves (a mutation engine's, where one serves the module)."""
    spec = importlib.util.find_spec(f"guard_lib.{name}")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pure_reference() -> ModuleType:
    """The reference as it stands on its own: ``device_guard`` with the Python ``Ok`` and ``Err`` of
    ``guard_lib.result``, which the core's replace there (and so in the imported reference) where the core
    is in use. The oracle must not make its results with the classes it is checking."""
    chosen = guard_lib.implementation.CORE
    guard_lib.implementation.CORE = None
    try:
        results = _executed_afresh("result")
    finally:
        guard_lib.implementation.CORE = chosen
    reference = _executed_afresh("device_guard")
    vars(reference).update(Ok=results.Ok, Err=results.Err)
    return reference


REFERENCE = _pure_reference()


def _require_core() -> ModuleType:
    if CORE is None:
        pytest.skip("the compiled core is not built; the oracle compares it with the reference")
    return CORE


# --- differences still to be fixed ------------------------------------------------------------------------
#
# Each name is a difference between the core and the reference that is a bug in the core. While a name is
# here, the random programs leave out what provokes it (or, for the first, pass over exactly that value),
# and its reproducer in REPRODUCERS must fail; once the fix lands, remove the name and the reproducer passes.
KNOWN_BUGS: frozenset[str] = frozenset(
    {
        # @device(i) on a callable with no __qualname__ (a functools.partial): the wrapper keeps its own,
        # which is "device.__call__.<locals>.on_device" in the reference and "_on_device.<locals>.on_device"
        # in the core.
        "wrapper-qualname",
    }
)


class Mismatch(AssertionError):
    """A world observed differently from the oracle, and no listed difference explains it."""


class OracleInterrupt(BaseException):
    """An interrupt of the oracle's own: not an Exception, as a signal handler's KeyboardInterrupt is not."""


class OracleError(Exception):
    """An exception type no library knows."""


# --- what a device index can be ---------------------------------------------------------------------------


class Index:
    """An integer only through ``__index__``, as NumPy's scalars and other array libraries' are."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __index__(self) -> Any:
        return self.value

    def __repr__(self) -> str:
        return f"Index({self.value!r})"


class IndexRaising:
    """An index whose ``__index__`` raises something other than TypeError."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __index__(self) -> int:
        raise _exception_of(self.kind, "__index__ failed")

    def __repr__(self) -> str:
        return f"IndexRaising({self.kind!r})"


class IntSubclass(int):
    """An int that is not exactly an int."""


INDEXES: dict[str, Callable[[], object]] = {
    "0": lambda: 0,
    "1": lambda: 1,
    "2": lambda: 2,
    "3": lambda: 3,  # one past the last device
    "-1": lambda: -1,
    "-2": lambda: -2,
    "2**31-1": lambda: 2**31 - 1,
    "2**31": lambda: 2**31,
    "2**40": lambda: 2**40,
    "2**70": lambda: 2**70,
    "-2**70": lambda: -(2**70),
    "True": lambda: True,
    "False": lambda: False,
    "1.0": lambda: 1.0,
    "'1'": lambda: "1",
    "None": lambda: None,
    "b'1'": lambda: b"1",
    "Index(1)": lambda: Index(1),
    "Index(0)": lambda: Index(0),
    "Index(-1)": lambda: Index(-1),
    "Index(2**40)": lambda: Index(2**40),
    "Index('x')": lambda: Index("x"),
    "Index(True)": lambda: Index(True),
    "IndexRaising(value)": lambda: IndexRaising("value"),
    "IndexRaising(interrupt)": lambda: IndexRaising("interrupt"),
    "IntSubclass(1)": lambda: IntSubclass(1),
    "np.int64(1)": lambda: np.int64(1),
    "np.int32(2)": lambda: np.int32(2),
    "np.uint8(0)": lambda: np.uint8(0),
    "np.int64(-1)": lambda: np.int64(-1),
    "np.bool_(True)": lambda: np.bool_(True),
    "np.float64(1.0)": lambda: np.float64(1.0),
}
SMALL_INDEXES = ["0", "1", "2", "3"]


def _exception_of(kind: str, message: str) -> BaseException:
    """A fresh exception of one of the kinds a runtime, an index or a body can raise."""
    if kind == "guard":
        return GuardError(
            message, device_index=5, code=cuda_errors.LAUNCH_FAILURE, code_name="from a runtime"
        )
    made: dict[str, Callable[[str], BaseException]] = {
        "value": ValueError,
        "runtime": RuntimeError,
        "oracle": OracleError,
        "keyboard": KeyboardInterrupt,
        "interrupt": OracleInterrupt,
        "exit": SystemExit,
    }
    return made[kind](message)


EXCEPTION_KINDS = ["value", "runtime", "oracle", "guard", "keyboard", "interrupt", "exit"]


# --- runtimes ---------------------------------------------------------------------------------------------

_capsule = ctypes.pythonapi.PyCapsule_New
_capsule.restype = ctypes.py_object
_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_GetDevice = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int))
_SetDevice = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
# A module constant, so the name a capsule points at lives as long as the process.
MISNAMED_SIGNATURE = b"cudaError_t (long *)"
C_INT = range(-(2**31), 2**31)
# What a C function answers where the Python method's answer has no C form (never compared: see bypassed).
UNANSWERABLE = 999


def _c_int(value: object) -> bool:
    return type(value) is int and value in C_INT


class Quirky(SimulatedRuntime):
    """A simulated runtime whose Python methods misbehave on demand: ``arm(op, after, action)`` makes the
    call of ``op`` after the next ``after`` ones raise before taking effect, or answer a malformed value."""

    def __init__(self, device_count: int = DEVICES) -> None:
        super().__init__(device_count)
        self.armed: dict[str, list[Any]] = {}

    def arm(self, op: str, after: int, action: tuple[str, Any]) -> None:
        self.armed[op] = [after, action]

    def _quirk(self, op: str) -> tuple[str, Any] | None:
        slot = self.armed.get(op)
        if slot is None:
            return None
        if slot[0]:
            slot[0] -= 1
            return None
        del self.armed[op]
        action: tuple[str, Any] = slot[1]
        return action

    def clear_faults(self) -> None:
        super().clear_faults()
        self.armed.clear()

    @staticmethod
    def _act(action: tuple[str, Any]) -> Any:
        kind, what = action
        if kind == "raise":
            raise _exception_of(what, "the runtime failed")
        return what

    def get_device(self) -> Any:
        action = self._quirk("get_device")
        if action is None:
            return super().get_device()
        self.calls.append(("get_device", ()))
        return self._act(action)

    def set_device(self, index: int, /) -> Any:
        action = self._quirk("set_device")
        if action is None:
            return super().set_device(index)
        self.calls.append(("set_device", (index,)))
        return self._act(action)

    def get_last_error(self) -> Any:
        action = self._quirk("get_last_error")
        return super().get_last_error() if action is None else self._act(action)

    def error_name(self, code: int, /) -> Any:
        action = self._quirk("error_name")
        return super().error_name(code) if action is None else self._act(action)

    def __repr__(self) -> str:
        return f"Quirky(device_count={self.device_count})"


class EntryRuntime(EntryPointRuntime):
    """``EntryPointRuntime`` whose C functions answer what its Python methods answer, misbehaviour included,
    wherever a C function can say it. Where it cannot (the method raised, or answered no pair of C ints), the
    C function answers UNANSWERABLE and records it in ``bypassed``: the deliberate difference
    ``c-entry-points-answer-codes-only``."""

    def __init__(self, device_count: int = DEVICES) -> None:
        super().__init__(device_count)
        self.bypassed: list[str] = []

        def get_device(out: Any) -> int:
            self.c_calls.append("get_device")
            try:
                answer = self.get_device()
            except BaseException as error:
                return self._bypass(f"get_device raised {type(error).__name__}")
            if type(answer) is tuple and len(answer) == 2 and _c_int(answer[0]):
                if answer[0]:
                    return int(answer[0])
                if _c_int(answer[1]):
                    out[0] = answer[1]
                    return 0
            return self._bypass(f"get_device answered {answer!r}")

        def set_device(index: int) -> int:
            self.c_calls.append("set_device")
            try:
                answer = self.set_device(index)
            except BaseException as error:
                return self._bypass(f"set_device raised {type(error).__name__}")
            if type(answer) is tuple and len(answer) == 1 and _c_int(answer[0]):
                return int(answer[0])
            return self._bypass(f"set_device answered {answer!r}")

        self._c_get_device = _GetDevice(get_device)
        self._c_set_device = _SetDevice(set_device)

    def _bypass(self, what: str) -> int:
        self.bypassed.append(what)
        return UNANSWERABLE

    def __repr__(self) -> str:
        return f"EntryRuntime(device_count={self.device_count})"


class QuirkyEntry(Quirky, EntryRuntime):
    """A quirky runtime that also offers C entry points (which answer through its quirky methods)."""

    def __repr__(self) -> str:
        return f"QuirkyEntry(device_count={self.device_count})"


# Shapes of c_entry_points()'s answer, made of the two well-formed capsules (get, set) and the runtime.
OFFERS: dict[str, Callable[[Any, Any, Any], object]] = {
    "none": lambda get, set_, runtime: None,
    "int": lambda get, set_, runtime: 5,
    "one": lambda get, set_, runtime: (get,),
    "empty": lambda get, set_, runtime: (),
    "list": lambda get, set_, runtime: [get, set_],
    "three": lambda get, set_, runtime: (get, set_, get),
    "swapped": lambda get, set_, runtime: (set_, get),
    "get-none": lambda get, set_, runtime: (get, None),
    "none-set": lambda get, set_, runtime: (None, set_),
    "misnamed": lambda get, set_, runtime: (
        _capsule(ctypes.cast(runtime._c_get_device, ctypes.c_void_p), MISNAMED_SIGNATURE, None),
        set_,
    ),
    "text": lambda get, set_, runtime: "ab",
    "generator": lambda get, set_, runtime: (capsule for capsule in (get, set_)),
    "raises-runtime": lambda get, set_, runtime: _raise("runtime", "no entry points today"),
    "raises-interrupt": lambda get, set_, runtime: _raise("interrupt", "no entry points today"),
}


class OfferingRuntime(EntryRuntime):
    """Offers its C entry points in one of many shapes, well-formed or not (``offer``)."""

    def __init__(self, device_count: int, offer: str) -> None:
        super().__init__(device_count)
        self.offer = offer

    def c_entry_points(self) -> Any:
        get_device, set_device = EntryPointRuntime.c_entry_points(self)
        return OFFERS[self.offer](get_device, set_device, self)

    def __repr__(self) -> str:
        return f"OfferingRuntime({self.offer!r})"


class UncallableOffer(EntryRuntime):
    """``c_entry_points`` is there, but is not a method."""

    c_entry_points = 5  # type: ignore[assignment]


class NotARuntime:
    """Passed as ``runtime=``: it has none of a runtime's methods."""

    def __repr__(self) -> str:
        return "NotARuntime()"


# Offers the core must take (or, for the malformed ones, will take once it falls back as for None).
GOOD_OFFERS = ["none", "list", "three", "swapped", "get-none", "none-set", "misnamed", "text"]
MALFORMED_OFFERS = ["int", "one", "empty", "generator", "raises-runtime", "raises-interrupt", "uncallable"]
RUNTIME_KINDS = [
    "sim",
    "quirky",
    *(f"offer-{offer}" for offer in GOOD_OFFERS),
    *(f"offer-{offer}" for offer in MALFORMED_OFFERS if "malformed-entry-offers" not in KNOWN_BUGS),
]


def _make_runtime(kind: str, c_entry: bool) -> SimulatedRuntime:
    """A runtime of ``kind``: plain, it is called through the Python protocol; c_entry, it offers entry
    points (except what a kind's offer makes of them)."""
    if kind == "sim":
        return EntryRuntime() if c_entry else SimulatedRuntime(DEVICES)
    if kind == "quirky":
        return QuirkyEntry() if c_entry else Quirky()
    offer = kind.removeprefix("offer-")
    if not c_entry:
        return SimulatedRuntime(DEVICES)
    if offer == "uncallable":
        return UncallableOffer()
    return OfferingRuntime(DEVICES, offer)


# --- the two implementations, each with subclasses of its own ---------------------------------------------


@dataclass(frozen=True)
class Impl:
    name: str
    compiled: bool
    guards: dict[str, Any]
    devices: dict[str, Any]
    ok: type
    err: type


def _impl(name: str, module: Any, ok: type, err: type) -> Impl:
    guard_base, device_base = module.DeviceGuard, module.device

    class SlottedGuard(guard_base):  # type: ignore[misc, valid-type]
        __slots__ = ()

    class OpenGuard(guard_base):  # type: ignore[misc, valid-type]
        """A guard with a dictionary of its own, that counts its closes."""

        def close(self, *exc_info: object) -> Any:
            self.closes = getattr(self, "closes", 0) + 1
            return super().close(*exc_info)

    class ForbiddingGuard(guard_base):  # type: ignore[misc, valid-type]
        """Refuses direct construction, as DeviceGuard itself does."""

        __slots__ = ()

        def __new__(cls, *args: object, **kwargs: object) -> Any:
            raise TypeError(f"{cls.__name__} is made by create()")

    class TaggedDevice(device_base):  # type: ignore[misc, valid-type]
        """A device that counts its entries and exits around the base's."""

        def __init__(self, device_index: object, *, runtime: object = None) -> None:
            super().__init__(device_index, runtime=runtime)
            self.entered = 0
            self.exited = 0

        def __enter__(self) -> Any:
            borrow = super().__enter__()
            self.entered += 1
            return borrow

        def __exit__(self, *exc_info: object) -> Any:
            self.exited += 1
            return super().__exit__(*exc_info)

    class BareDevice(device_base):  # type: ignore[misc, valid-type]
        """Forgets to call device.__init__."""

        def __init__(self, device_index: object, *, runtime: object = None) -> None:
            self.index = device_index

    guards = {"DeviceGuard": guard_base, "SlottedGuard": SlottedGuard, "OpenGuard": OpenGuard}
    guards["ForbiddingGuard"] = ForbiddingGuard
    devices = {"device": device_base, "TaggedDevice": TaggedDevice, "BareDevice": BareDevice}
    return Impl(name, CORE is not None and module is CORE, guards, devices, ok, err)


GUARD_CLASSES = ["DeviceGuard", "SlottedGuard", "OpenGuard"]
if "create-calls-subclass-new" not in KNOWN_BUGS:
    GUARD_CLASSES.append("ForbiddingGuard")
DEVICE_CLASSES = ["device", "TaggedDevice"]
if "device-without-init" not in KNOWN_BUGS:
    DEVICE_CLASSES.append("BareDevice")


# --- what an observation holds ----------------------------------------------------------------------------

BORROW_TYPES: tuple[type, ...] = (REFERENCE._Borrow,) + ((CORE._Borrow,) if CORE is not None else ())
DEVICE_TYPES: tuple[type, ...] = (REFERENCE.device,) + ((CORE.device,) if CORE is not None else ())


@dataclass(frozen=True)
class Described:
    """A value already described (what another thread observed)."""

    description: object


def _is_result(value: object) -> bool:
    return type(value).__name__ in ("Ok", "Err") and hasattr(value, "_checked")


def _attribute(obj: object, name: str, world: World | None) -> object:
    try:
        return ("value", _describe(getattr(obj, name), world))
    except BaseException as error:  # what a caller reading it would meet
        return ("raises", type(error).__name__, str(error))


def _own_repr(value: object) -> str:
    # Where a class has no __repr__ of its own, the default's module and address say nothing of behaviour.
    return repr(value) if type(value).__repr__ is not object.__repr__ else "<default repr>"


def _borrow_fields(value: object, world: World | None) -> dict[str, object]:
    own = getattr(value, "__dict__", None)
    return {
        "type": type(value).__qualname__,
        "repr": _own_repr(value),
        "original_device": _attribute(value, "original_device", world),
        "current_device": _attribute(value, "current_device", world),
        "restored": _attribute(value, "_restored", world),
        "dict": None if own is None else tuple(sorted((k, _describe(v, world)) for k, v in own.items())),
    }


def _describe(value: object, world: World | None, depth: int = 0, top: bool = False) -> object:
    """A comparable description of what a caller holds: its type, repr and attributes; an object the world
    holds is named by its place, so that identity is compared too."""
    if depth > 5:
        return "..."
    if world is not None and not top and value is not None:
        for place, held in enumerate(world.handles):
            if held is value:
                return ("held", place)
        for place, runtime in enumerate(world.runtimes):
            if runtime is value:
                return ("runtime", place)
    if isinstance(value, Described):
        return value.description
    return _describe_value(value, world, depth)


def _describe_value(value: object, world: World | None, depth: int) -> object:  # noqa: PLR0911 - a table
    if value is None or type(value) in (bool, int, float, str, bytes):
        return (type(value).__name__, repr(value))
    if type(value) in (tuple, list):
        return (type(value).__name__, tuple(_describe(item, world, depth + 1) for item in value))  # type: ignore[attr-defined]
    if type(value) is dict:
        return ("dict", tuple(sorted((repr(k), _describe(v, world, depth + 1)) for k, v in value.items())))
    if isinstance(value, BaseException):
        return _describe_exception(value, world, depth)
    if _is_result(value):
        payload = value._value if type(value).__name__ == "Ok" else value._error  # type: ignore[attr-defined]
        return (type(value).__name__, value._checked, _describe(payload, world, depth + 1))  # type: ignore[attr-defined]
    if isinstance(value, BORROW_TYPES):
        return ("borrow", tuple(_borrow_fields(value, world).items()))
    if isinstance(value, MethodType):
        # As a bound method, whatever its function: in mutmut's copy that is a trampoline with __wrapped__.
        return ("callable", "method", getattr(value, "__qualname__", None))
    if callable(value) and hasattr(value, "__wrapped__"):
        return (
            "wrapper",
            type(value).__name__,
            getattr(value, "__name__", None),
            getattr(value, "__qualname__", None),
            getattr(value, "__doc__", None),
            getattr(value, "__module__", None),
            _describe(value.__wrapped__, world, depth + 1),
            # functools.wraps copies __type_params__ (Python 3.12 on): a Python function holds it in a slot
            # of its own, a compiled one in its __dict__. Its value is what a caller sees.
            _describe(getattr(value, "__type_params__", None), world, depth + 1),
            tuple(
                sorted(
                    k for k in getattr(value, "__dict__", {}) if k not in ("__wrapped__", "__type_params__")
                )
            ),
        )
    if callable(value):
        return ("callable", type(value).__qualname__, getattr(value, "__qualname__", None))
    return (type(value).__qualname__, _own_repr(value))


def _describe_exception(error: BaseException, world: World | None, depth: int) -> object:
    fields: list[tuple[str, object]] = [
        ("type", f"{type(error).__module__}.{type(error).__qualname__}"),
        ("message", str(error)),
        ("args", _describe(error.args, world, depth + 1)),
    ]
    if isinstance(error, GuardError):
        fields += [
            ("device_index", _describe(error.device_index, world, depth + 1)),
            ("code", _describe(error.code, world, depth + 1)),
            ("code_name", _describe(error.code_name, world, depth + 1)),
        ]
    if depth < 3:
        fields += [
            ("cause", _describe(error.__cause__, world, depth + 1)),
            (
                "context",
                None if error.__suppress_context__ else _describe(error.__context__, world, depth + 1),
            ),
        ]
    return ("exception", tuple(fields))


def _forget(error: BaseException | None) -> None:
    # A traceback holds the frames it passed through, and they the guards: let them go with the step.
    seen = 0
    while error is not None and seen < 8:
        error.__traceback__ = None
        error = error.__context__
        seen += 1


def _clear_frames(held: list[Any]) -> int:
    """Clear the frames of the tracebacks the held results' errors carry; how many tracebacks there were."""
    cleared = 0
    for value in held:
        error = value._error if _is_result(value) and type(value).__name__ == "Err" else None
        seen = 0
        while isinstance(error, BaseException) and seen < 8:
            if error.__traceback__ is not None:
                traceback.clear_frames(error.__traceback__)
                cleared += 1
            error = error.__context__
            seen += 1
    return cleared


class _Records(logging.Handler):
    def __init__(self, into: list[tuple[str, str]]) -> None:
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append((record.levelname, record.getMessage()))


# --- the worlds and the operations a program is made of ----------------------------------------------------


@dataclass
class World:
    name: str
    impl: Impl
    c_entry: bool
    runtimes: list[SimulatedRuntime] = field(default_factory=list)
    defaults: list[int] = field(default_factory=lambda: [0])
    handles: list[Any] = field(default_factory=list)
    detached: str | None = None

    def hold(self, value: object) -> Any:
        self.handles.append(value)
        return value

    def devices(self) -> tuple[int, ...]:
        return tuple(runtime.current_device for runtime in self.runtimes)

    def bypasses(self) -> int:
        return sum(len(getattr(runtime, "bypassed", ())) for runtime in self.runtimes)


@dataclass(frozen=True)
class Op:
    name: str
    params: tuple[tuple[str, Any], ...] = ()

    def __repr__(self) -> str:
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.params)})"

    def run(self, world: World) -> object:
        return OPERATIONS[self.name](world, **dict(self.params))


def op(name: str, **params: Any) -> Op:
    return Op(name, tuple(params.items()))


def _runtime_argument(world: World, runtime: object) -> dict[str, object]:
    if runtime == "default":
        return {}
    if runtime == "none":
        return {"runtime": None}
    if runtime == "bogus":
        return {"runtime": NotARuntime()}
    assert isinstance(runtime, int)
    return {"runtime": world.runtimes[runtime]}


def _op_new_runtime(world: World, *, kind: str) -> object:
    world.runtimes.append(_make_runtime(kind, world.c_entry))
    return None


def _op_push_default(world: World, *, r: int) -> object:
    world.defaults.append(r)
    return None


def _op_pop_default(world: World) -> object:
    return world.defaults.pop()


def _op_fail_next(world: World, *, r: int, op: str, code: int, moves_to: int | None) -> object:
    world.runtimes[r].fail_next(op, code, moves_to=moves_to)
    return None


def _op_raise_next(world: World, *, r: int, op: str, kind: str) -> object:
    world.runtimes[r].raise_next(op, _exception_of(kind, f"{op} interrupted after taking effect"))
    return None


def _op_arm(world: World, *, r: int, op: str, after: int, action: tuple[str, Any]) -> object:
    runtime = world.runtimes[r]
    assert isinstance(runtime, Quirky)
    runtime.arm(op, after, action)
    return None


def _op_select(world: World, *, r: int, index: int) -> object:
    return world.runtimes[r].set_device(index)


def _op_clear_faults(world: World, *, r: int) -> object:
    world.runtimes[r].clear_faults()
    return None


def _op_create(world: World, *, index: str, runtime: object, cls: str) -> object:
    return world.hold(world.impl.guards[cls].create(INDEXES[index](), **_runtime_argument(world, runtime)))


def _op_device(world: World, *, index: str, runtime: object, cls: str) -> object:
    return world.hold(world.impl.devices[cls](INDEXES[index](), **_runtime_argument(world, runtime)))


def _hold_borrows(world: World, value: object) -> object:
    if isinstance(value, BORROW_TYPES) or _is_result(value):
        world.hold(value)
    return value


def _matched(world: World, result: Any) -> object:
    ok, err = world.impl.ok, world.impl.err
    match result:
        case ok(value):  # type: ignore[misc]
            return ("Ok", _hold_borrows(world, value))
        case err(error):  # type: ignore[misc]
            return ("Err", error)
    return "neither"


CHECKS: dict[str, Callable[[World, Any], object]] = {
    "is_ok": lambda world, result: result.is_ok(),
    "is_err": lambda world, result: result.is_err(),
    "unwrap": lambda world, result: _hold_borrows(world, result.unwrap()),
    "value": lambda world, result: _hold_borrows(world, result.value),
    "error": lambda world, result: result.error,
    "repr": lambda world, result: repr(result),
    "match": _matched,
}


def _op_check(world: World, *, h: int, how: str) -> object:
    return CHECKS[how](world, world.handles[h])


def _op_enter(world: World, *, h: int) -> object:
    return world.handles[h].__enter__()


EXIT_ARGUMENTS: dict[str, Callable[[], tuple[object, ...]]] = {
    "clean": lambda: (None, None, None),
    "value": lambda: (ValueError, ValueError("the block failed"), None),
    "interrupt": lambda: (OracleInterrupt, OracleInterrupt("the block was interrupted"), None),
    "nothing": lambda: (),
}


def _op_exit(world: World, *, h: int, how: str) -> object:
    return world.handles[h].__exit__(*EXIT_ARGUMENTS[how]())


def _op_close(world: World, *, h: int) -> object:
    return world.handles[h].close()


def _op_take(world: World, *, h: int) -> object:
    return world.hold(world.handles[h].take())


def _op_read(world: World, *, h: int, attr: str) -> object:
    held = world.handles[h]
    return _own_repr(held) if attr == "repr" else getattr(held, attr)


def _raise(kind: str, message: str) -> object:
    raise _exception_of(kind, message)


def _nest_device(world: World, j: int, runtime: SimulatedRuntime | None) -> object:
    arguments = {} if runtime is None else {"runtime": runtime}
    with world.impl.devices["device"](j, **arguments) as inner:
        return (inner, world.devices())


def _nest_create(world: World, j: int, runtime: SimulatedRuntime) -> object:
    with world.impl.guards["DeviceGuard"].create(j, runtime=runtime).unwrap() as guard:
        return (guard, world.devices())


# What runs inside a with block or a decorated function: (world, the borrow, device j, runtime r).
Body = Callable[[World, Any, int, SimulatedRuntime], object]
BODY: dict[str, Body] = {
    "pass": lambda world, borrow, j, runtime: None,
    "devices": lambda world, borrow, j, runtime: world.devices(),
    "raise-value": lambda world, borrow, j, runtime: _raise("value", "the body failed"),
    "raise-interrupt": lambda world, borrow, j, runtime: _raise("interrupt", "the body was interrupted"),
    "raise-keyboard": lambda world, borrow, j, runtime: _raise("keyboard", "the body was interrupted"),
    "nest-device": lambda world, borrow, j, runtime: _nest_device(world, j, runtime),
    "nest-default": lambda world, borrow, j, runtime: _nest_device(world, j, None),
    "nest-create": lambda world, borrow, j, runtime: _nest_create(world, j, runtime),
    "select": lambda world, borrow, j, runtime: runtime.set_device(j),
    "fail-restore": lambda world, borrow, j, runtime: runtime.fail_next(
        "set_device", cuda_errors.LAUNCH_FAILURE
    ),
    "fail-restore-moving": lambda world, borrow, j, runtime: runtime.fail_next(
        "set_device", cuda_errors.LAUNCH_FAILURE, moves_to=j
    ),
    "interrupt-restore": lambda world, borrow, j, runtime: runtime.raise_next(
        "set_device", OracleInterrupt("the restore was interrupted")
    ),
    "close": lambda world, borrow, j, runtime: borrow.close(),
    "take": lambda world, borrow, j, runtime: world.hold(borrow.take()),
    "enter-again": lambda world, borrow, j, runtime: borrow.__enter__(),
}
# The bodies that make sense inside a with block of any borrow ("take" only of a guard).
BODIES = [name for name in BODY if name != "take"]


def _op_with(world: World, *, h: int, body: str, j: int, r: int) -> object:
    borrow = world.handles[h]
    with borrow as entered:
        return (entered, BODY[body](world, borrow, j, world.runtimes[r]))


class OracleMade:
    """A class, decorated: calling it makes one under the borrow."""

    def __init__(self, *args: object) -> None:
        self.args = args

    def __repr__(self) -> str:
        return f"OracleMade{self.args!r}"


async def oracle_coroutine(*args: object) -> None:
    """Would borrow across an await."""


def oracle_generator(*args: object) -> Iterator[int]:
    """Would borrow after returning."""
    yield 1


async def oracle_async_generator(*args: object) -> Any:
    """Both."""
    yield 1


def _lambda_of() -> Callable[..., object]:
    return lambda *args: ("lambda", args)


# What the program decorates besides a body of its own: what is refused, and callables of other kinds.
UNDECORATED: dict[str, Callable[[World], object]] = {
    "not-callable": lambda world: 5,
    "class": lambda world: OracleMade,
    "builtin": lambda world: len,
    "lambda": lambda world: _lambda_of(),
    "partial": lambda world: functools.partial(World.devices, world),
    "coroutine": lambda world: oracle_coroutine,
    "generator": lambda world: oracle_generator,
    "async-generator": lambda world: oracle_async_generator,
}


def _target(world: World, body: str, j: int, r: int) -> tuple[Any, list[Any]]:
    """What the program decorates, and a cell the decorated function is put in (for a body that calls it)."""
    cell: list[Any] = []
    if body in UNDECORATED:
        return UNDECORATED[body](world), cell

    def oracle_body(*args: Any, **kwargs: Any) -> object:
        """The body of a decorated function."""
        if body == "recurse":
            depth = args[0] if args else 0
            inner = cell[0](depth - 1) if depth > 0 else None
            return ("depth", depth, inner, world.devices())
        if body == "open-guard":
            return world.impl.guards["DeviceGuard"].create(j, runtime=world.runtimes[r])
        return (args, kwargs, BODY[body](world, None, j, world.runtimes[r]))

    return oracle_body, cell


DECORATED_BODIES = [
    "devices",
    "raise-value",
    "raise-interrupt",
    "nest-device",
    "nest-default",
    "nest-create",
    "select",
    "fail-restore",
    "fail-restore-moving",
    "interrupt-restore",
    "recurse",
    "open-guard",
]
UNDECORATABLE = [name for name in UNDECORATED if name != "partial" or "wrapper-qualname" not in KNOWN_BUGS]


def _op_decorate(world: World, *, index: str, runtime: object, cls: str, body: str, j: int, r: int) -> object:
    decorator = world.hold(world.impl.devices[cls](INDEXES[index](), **_runtime_argument(world, runtime)))
    target, cell = _target(world, body, j, r)
    decorated = world.hold(decorator(target))
    cell.append(decorated)
    return decorated


def _op_call(world: World, *, h: int, arg: int) -> object:
    return _hold_borrows(world, world.handles[h](arg))


def _op_keep_exit(world: World, *, h: int) -> object:
    borrow = world.handles[h]
    borrow.kept_exit = borrow.__exit__
    return None


def _op_drop(world: World, *, h: int) -> object:
    world.handles[h] = None
    return None


# Calls no method takes: (the DeviceGuard class, the device class, a runtime).
MISUSE: dict[str, Callable[[Any, Any, SimulatedRuntime], object]] = {
    "guard-init": lambda guard, device, rt: guard(1),
    "guard-new": lambda guard, device, rt: guard.__new__(guard),
    "device-no-index": lambda guard, device, rt: device(),
    "device-positional-runtime": lambda guard, device, rt: device(1, rt),
    "device-unknown-keyword": lambda guard, device, rt: device(1, runtme=rt),
    "create-no-index": lambda guard, device, rt: guard.create(),
    "create-positional-runtime": lambda guard, device, rt: guard.create(1, rt),
    "create-unknown-keyword": lambda guard, device, rt: guard.create(1, runtme=rt),
    "decorate-nothing": lambda guard, device, rt: device(1, runtime=rt)(),
}


def _op_misuse(world: World, *, what: str, r: int) -> object:
    made = MISUSE[what](world.impl.guards["DeviceGuard"], world.impl.devices["device"], world.runtimes[r])
    return _hold_borrows(world, made)


# What a caller may try on a borrow and is refused (or, for a made guard's __init__, ignored).
BORROW_MISUSE: dict[str, Callable[[Any], object]] = {
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "pickle": pickle.dumps,
    "close-keyword": lambda borrow: borrow.close(exc=None),
    "exit-keyword": lambda borrow: borrow.__exit__(exc=None),
    "enter-argument": lambda borrow: borrow.__enter__(1),
    "take-argument": lambda borrow: borrow.take(1),
    "guard-reinit": lambda borrow: borrow.__init__(2, runtime=None),
}


def _op_misuse_borrow(world: World, *, h: int, what: str) -> object:
    return BORROW_MISUSE[what](world.handles[h])


def _let_go(borrow: Any) -> None:
    # A borrow this thread still owed would outlive the thread, and the next thread given its recycled id
    # could restore it: make sure it is settled before the thread ends.
    for _ in range(3):
        try:
            if borrow._restored:
                return
            borrow.close()
        except BaseException:  # observed in the calls and logs all the same
            continue


def _thread_drop(world: World, h: int) -> object:
    world.handles[h] = None
    gc.collect()
    return None


def _thread_with(world: World, borrow: Any) -> object:
    try:
        with borrow as entered:
            return (entered, world.devices())
    finally:
        _let_go(borrow)


def _thread_enter_close(world: World, borrow: Any) -> object:
    try:
        borrow.__enter__()
        return (world.devices(), borrow.close())
    finally:
        _let_go(borrow)


def _thread_create_drop(world: World, j: int, r: int) -> object:
    # The result, and an open guard in it, are dropped on this thread when it returns.
    return world.impl.guards["DeviceGuard"].create(j, runtime=world.runtimes[r]).is_ok()


# What another thread does to what the program holds: (world, held place, device j, runtime r).
IN_THREAD: dict[str, Callable[[World, int, int, int], object]] = {
    "close": lambda world, h, j, r: world.handles[h].close(),
    "exit": lambda world, h, j, r: world.handles[h].__exit__(None, None, None),
    "take": lambda world, h, j, r: world.hold(world.handles[h].take()),
    "enter": lambda world, h, j, r: world.handles[h].__enter__(),
    "read": lambda world, h, j, r: _borrow_fields(world.handles[h], world),
    "drop": lambda world, h, j, r: _thread_drop(world, h),
    "check": lambda world, h, j, r: world.handles[h].is_ok(),
    "call": lambda world, h, j, r: world.handles[h](1),
    "with": lambda world, h, j, r: _thread_with(world, world.handles[h]),
    "enter-close": lambda world, h, j, r: _thread_enter_close(world, world.handles[h]),
    "create-drop": lambda world, h, j, r: _thread_create_drop(world, j, r),
}


def _op_thread(world: World, *, action: str, h: int, j: int, r: int) -> object:
    report: dict[str, object] = {}

    def run() -> None:
        try:
            value = IN_THREAD[action](world, h, j, r)
            report["outcome"] = ("returned", _describe(value, world))
            del value
        except BaseException as error:
            report["outcome"] = ("raised", _describe(error, world))
            _forget(error)
        report["runtimes"] = tuple(
            (runtime.current_device, _describe(tuple(runtime.calls), world), runtime.peek_at_last_error())
            for runtime in world.runtimes
        )
        gc.collect()

    thread = threading.Thread(target=run, name="oracle-other-thread")
    thread.start()
    thread.join()
    return Described(("on another thread", report["outcome"], report["runtimes"]))


def _op_release(world: World) -> object:
    world.handles.clear()
    return None


OPERATIONS: dict[str, Callable[..., object]] = {
    "new_runtime": _op_new_runtime,
    "push_default": _op_push_default,
    "pop_default": _op_pop_default,
    "fail_next": _op_fail_next,
    "raise_next": _op_raise_next,
    "arm": _op_arm,
    "select": _op_select,
    "clear_faults": _op_clear_faults,
    "create": _op_create,
    "device": _op_device,
    "check": _op_check,
    "enter": _op_enter,
    "exit": _op_exit,
    "close": _op_close,
    "take": _op_take,
    "read": _op_read,
    "with": _op_with,
    "decorate": _op_decorate,
    "call": _op_call,
    "keep_exit": _op_keep_exit,
    "drop": _op_drop,
    "misuse": _op_misuse,
    "misuse_borrow": _op_misuse_borrow,
    "thread": _op_thread,
    "release": _op_release,
}


# --- observing, comparing, and the listed differences ------------------------------------------------------

ORACLE = "reference+plain"
# What a difference may be explained by: a deliberate one, or a bug still to be fixed.
ALLOWED = frozenset(DELIBERATE) | KNOWN_BUGS
MISSING = ("missing",)


@dataclass
class Observed:
    values: dict[str, object]
    bypassed: bool


# CPython's and Cython's words for the same failure to unpack, reduced to one form (with the quotes a repr
# of either puts around it: the messages appear in args too).
_UNPACKING = (
    (re.compile(r"not enough values to unpack \(expected \d+, got (\d+)\)"), r"unpack: only \1"),
    (re.compile(r"need more than (\d+) values? to unpack"), r"unpack: only \1"),
    (re.compile(r"(['\"]?)cannot unpack non-iterable (\w+) object\1"), r"<unpack: \2 not iterable>"),
    (re.compile(r"(['\"]?)'(\w+)' object is not iterable\1"), r"<unpack: \2 not iterable>"),
    (re.compile(r"too many values to unpack \(expected (\d+)(, got \d+)?\)"), r"unpack: over \1"),
)
_QUALIFIED = re.compile(r"\bguard_lib\.(?:_core|device_guard)\.(\w+)")


def _unpacking(text: str) -> str:
    # Every message it rewrites says one of these two words: most strings are passed over unread.
    if "unpack" not in text and "iterable" not in text:
        return text
    for pattern, replacement in _UNPACKING:
        text = pattern.sub(replacement, text)
    return text


def _unqualified(text: str) -> str:
    # An extension type's C name carries its module: Python's messages about it say which. From 3.13 the
    # messages name a Python class by its module too, so the reference's own classes lose theirs alike.
    return _QUALIFIED.sub(r"\1", text) if "guard_lib." in text else text


def _rewritten(value: object, rewrite: Callable[[str], str]) -> object:
    if isinstance(value, str):
        return rewrite(value)
    if isinstance(value, tuple):
        return tuple(_rewritten(item, rewrite) for item in value)
    return value


def _as_python_function(value: object) -> object:
    # The core's decorated function, described as the reference's: the one field that may differ is its type.
    if isinstance(value, tuple):
        if len(value) > 1 and value[0] == "wrapper" and value[1] == "cython_function_or_method":
            value = ("wrapper", "function", *value[2:])
        return tuple(_as_python_function(item) for item in value)
    return value


# Python's and Cython's words for a call with arguments a function does not take.
_ARGUMENT_REFUSAL = re.compile(
    r"\(\) (?:missing \d+ required|takes |got an unexpected keyword argument|got multiple values for)"
)


def _argument_refusals_alike(value: object) -> object:
    # A TypeError refusing a call's arguments, described with its message and args left out.
    if isinstance(value, tuple):
        if len(value) == 2 and value[0] == "exception" and isinstance(value[1], tuple):
            fields = dict(value[1])
            if fields.get("type") == "builtins.TypeError" and _ARGUMENT_REFUSAL.search(
                str(fields["message"])
            ):
                fields.update(message="<arguments refused>", args="<arguments refused>")
                return ("exception", tuple(fields.items()))
        return tuple(_argument_refusals_alike(item) for item in value)
    return value


# How a listed difference is taken out of a pair of descriptions (the oracle's, the core's), by name.
REWRITES: dict[str, Callable[[object, object], tuple[object, object]]] = {
    "unpacking-messages": lambda oracle, seen: (_rewritten(oracle, _unpacking), _rewritten(seen, _unpacking)),
    "extension-type-names": lambda oracle, seen: (
        _rewritten(oracle, _unqualified),
        _rewritten(seen, _unqualified),
    ),
    "decorated-function-is-compiled": lambda oracle, seen: (oracle, _as_python_function(seen)),
    "argument-error-messages": lambda oracle, seen: (
        _argument_refusals_alike(oracle),
        _argument_refusals_alike(seen),
    ),
}
assert set(REWRITES) <= set(DELIBERATE)

_NONE = ("value", ("NoneType", "None"))
# Python 3.13 names the type by module and qualified name ('guard_lib.device_guard.device'), earlier
# ones by its name alone.
_UNSET = re.compile(r"^'[^']+' object has no attribute '_devices'$")


def _unset_attribute(oracle: Any, world: object) -> bool:
    """The reference's AttributeError for a device never entered, where the core answers None: read as a held
    object's attribute, or as what an operation returned."""
    if not isinstance(oracle, tuple) or len(oracle) < 2:
        return False
    if oracle[0] == "raises" and world == _NONE:
        return oracle[1] == "AttributeError" and bool(_UNSET.match(str(oracle[2])))
    if oracle[0] == "raised" and world == ("returned", _NONE[1]) and oracle[1][0] == "exception":
        fields = dict(oracle[1][1])
        return fields["type"] == "builtins.AttributeError" and bool(_UNSET.match(str(fields["message"])))
    return False


class Oracle:
    """The four worlds of one program, stepped together and compared after every step."""

    def __init__(self, core: ModuleType, allowed: frozenset[str] = ALLOWED) -> None:
        reference = _impl("reference", REFERENCE, REFERENCE.Ok, REFERENCE.Err)
        compiled = _impl("core", core, core.Ok, core.Err)
        self.worlds = [
            World(ORACLE, reference, c_entry=False),
            World("reference+c-entry", reference, c_entry=True),
            World("core+plain", compiled, c_entry=False),
            World("core+c-entry", compiled, c_entry=True),
        ]
        for world in self.worlds:
            # The default until the program says otherwise, and one that is not.
            world.runtimes += [_make_runtime("sim", world.c_entry), _make_runtime("sim", world.c_entry)]
        self.allowed = allowed
        self.program: list[Op] = []
        self.explained: Counter[str] = Counter()
        self.failed = False

    @property
    def reference(self) -> World:
        return self.worlds[0]

    def step(self, operation: Op) -> None:
        self.program.append(operation)
        seen = {
            world.name: self._observe(world, operation) for world in self.worlds if world.detached is None
        }
        self._compare(operation, seen)

    def finish(self) -> None:
        """Drop everything every world holds: what warns must warn alike. After a mismatch, only let go."""
        if self.failed:
            for world in self.worlds:
                if world.detached is None:
                    self._detach(world, "failed")
            return
        self.step(op("release"))

    def _observe(self, world: World, operation: Op) -> Observed:
        logs: list[tuple[str, str]] = []
        unraisable: list[tuple[str, str, str]] = []
        handler = _Records(logs)
        hook = sys.unraisablehook
        bypasses = world.bypasses()
        LOGGER.addHandler(handler)
        sys.unraisablehook = lambda u: unraisable.append(
            (u.exc_type.__name__, str(u.exc_value), str(u.err_msg))
        )
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with use_runtime(world.runtimes[world.defaults[-1]]):
                    try:
                        value = operation.run(world)
                        outcome: object = ("returned", _describe(value, world))
                        del value
                    except BaseException as error:
                        outcome = ("raised", _describe(error, world))
                        _forget(error)
                if "traceback-frames-hold-no-locals" in self.allowed and _clear_frames(world.handles):
                    self.explained["traceback-frames-hold-no-locals"] += 1
                gc.collect()
                values: dict[str, object] = {"outcome": outcome}
                for place, held in enumerate(world.handles):
                    if isinstance(held, BORROW_TYPES):
                        for name, fact in _borrow_fields(held, world).items():
                            values[f"held{place}.{name}"] = fact
                    else:
                        values[f"held{place}"] = _describe(held, world, top=True)
                values["warnings"] = tuple(sorted((w.category.__name__, str(w.message)) for w in caught))
        finally:
            sys.unraisablehook = hook
            LOGGER.removeHandler(handler)
        values["logs"] = tuple(logs)
        values["unraisable"] = tuple(unraisable)
        values["default"] = world.defaults[-1]
        for place, runtime in enumerate(world.runtimes):
            values[f"runtime{place}.device"] = runtime.current_device
            values[f"runtime{place}.calls"] = _describe(tuple(runtime.calls), world)
            values[f"runtime{place}.pending_error"] = runtime.peek_at_last_error()
            values[f"runtime{place}.contexts"] = tuple(sorted(map(repr, runtime.contexts)))
            runtime.calls.clear()
        return Observed(values, world.bypasses() != bypasses)

    def _detach(self, world: World, name: str) -> None:
        world.detached = name
        self.explained[name] += 1
        # Whatever it still holds is let go where no warning escapes, and never compared again.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hook, sys.unraisablehook = sys.unraisablehook, lambda u: None
            try:
                world.handles.clear()
                gc.collect()
            finally:
                sys.unraisablehook = hook

    def _explain(self, world: World, oracle: object, seen: object) -> list[str]:
        """The names of the listed differences that together account for this one (none if they do not)."""
        if not world.impl.compiled:
            return []
        if "device-attributes-before-enter" in self.allowed and _unset_attribute(oracle, seen):
            return ["device-attributes-before-enter"]
        used = []
        for name, rewrite in REWRITES.items():
            if name not in self.allowed:
                continue
            rewritten = rewrite(oracle, seen)
            if rewritten != (oracle, seen):
                oracle, seen = rewritten
                used.append(name)
                if oracle == seen:
                    return used
        return []

    def _compare(self, operation: Op, seen: dict[str, Observed]) -> None:
        expected = seen[ORACLE].values
        for world in self.worlds[1:]:
            if world.name not in seen:
                continue
            observed = seen[world.name]
            keys = sorted(set(expected) | set(observed.values))
            differing = [k for k in keys if expected.get(k, MISSING) != observed.values.get(k, MISSING)]
            if not differing:
                continue
            if (
                observed.bypassed
                and world.impl.compiled
                and "c-entry-points-answer-codes-only" in self.allowed
            ):
                self._detach(world, "c-entry-points-answer-codes-only")
                continue
            unexplained = []
            for key in differing:
                names = self._explain(world, expected.get(key, MISSING), observed.values.get(key, MISSING))
                if not names:
                    unexplained.append(key)
                self.explained.update(names)
            if unexplained:
                lines = [f"{world.name} differs from {ORACLE} after {operation!r}:"]
                for key in unexplained:
                    lines.append(f"  {key}:")
                    lines.append(f"    {ORACLE}: {expected.get(key, MISSING)!r}")
                    lines.append(f"    {world.name}: {observed.values.get(key, MISSING)!r}")
                lines.append("program: " + "; ".join(map(repr, self.program)))
                self.failed = True
                raise Mismatch("\n".join(lines))


@contextmanager
def _controlled() -> Iterator[None]:
    """Collection only at the oracle's fixed points, and cheap there: what exists before is frozen; the
    guard_lib logger open to every level."""
    enabled = gc.isenabled()
    level, disabled = LOGGER.level, LOGGER.disabled
    gc.collect()
    gc.disable()
    gc.freeze()
    LOGGER.setLevel(logging.DEBUG)
    LOGGER.disabled = False
    try:
        yield
    finally:
        LOGGER.setLevel(level)
        LOGGER.disabled = disabled
        gc.unfreeze()
        if enabled:
            gc.enable()


# --- the random programs ----------------------------------------------------------------------------------

CODES = [
    cuda_errors.LAUNCH_FAILURE,
    cuda_errors.INVALID_DEVICE,
    cuda_errors.NO_DEVICE,
    cuda_errors.INSUFFICIENT_DRIVER,
    cuda_errors.INVALID_VALUE,
    999,
    12345,
    -1,
    2**31,
]
GET_ANSWERS: list[object] = [
    (0, "x"),
    (0,),
    None,
    (0, 1, 2),
    (0, -1),
    (0, True),
    (0, 2**40),
    (0, 1.0),
    (0, None),
    ("0", 1),
    (None, 1),
    [0, 1],
    5,
    (cuda_errors.LAUNCH_FAILURE, 1),
]
SET_ANSWERS: list[object] = [(0, 0), (), None, 0, ("x",), (None,), [0], (True,), (2**40,)]
NAME_ANSWERS: list[object] = [None, 5, ""]
LAST_ERROR_ANSWERS: list[object] = [None, (cuda_errors.LAUNCH_FAILURE,), "x"]
RUNTIME_OPS = ["get_device", "set_device"]
ARGUMENT_MISUSES = [
    "device-no-index",
    "device-positional-runtime",
    "device-unknown-keyword",
    "create-no-index",
    "create-positional-runtime",
    "create-unknown-keyword",
    "decorate-nothing",
]
MISUSES = ["guard-init"]
if "guard-new-allowed" not in KNOWN_BUGS:
    MISUSES.append("guard-new")
if "argument-error-messages" not in KNOWN_BUGS:
    MISUSES += ARGUMENT_MISUSES
BORROW_MISUSES = ["copy", "deepcopy", "pickle"]
if "argument-error-messages" not in KNOWN_BUGS:
    BORROW_MISUSES += ["close-keyword", "exit-keyword", "enter-argument"]
GUARD_MISUSES = ["guard-reinit"]
if "argument-error-messages" not in KNOWN_BUGS:
    GUARD_MISUSES.append("take-argument")


def _answer() -> st.SearchStrategy[tuple[str, tuple[str, Any]]]:
    raising = st.tuples(
        st.sampled_from(["get_device", "set_device", "get_last_error", "error_name"]),
        st.tuples(st.just("raise"), st.sampled_from(EXCEPTION_KINDS)),
    )
    answering = st.one_of(
        st.tuples(st.just("get_device"), st.tuples(st.just("answer"), st.sampled_from(GET_ANSWERS))),
        st.tuples(st.just("set_device"), st.tuples(st.just("answer"), st.sampled_from(SET_ANSWERS))),
        st.tuples(st.just("error_name"), st.tuples(st.just("answer"), st.sampled_from(NAME_ANSWERS))),
        st.tuples(
            st.just("get_last_error"), st.tuples(st.just("answer"), st.sampled_from(LAST_ERROR_ANSWERS))
        ),
    )
    return st.one_of(raising, answering)


def _category(value: object) -> str:
    if value is None:
        return "none"
    if _is_result(value):
        return "result"
    if isinstance(value, BORROW_TYPES):
        return "device" if isinstance(value, DEVICE_TYPES) else "guard"
    if callable(value):
        return "function"
    return "other"


# What a step does, each as often as it is listed.
ACTIONS = (
    ["new_runtime"] * 3
    + ["default"] * 2
    + ["fail_next"] * 5
    + ["raise_next"] * 2
    + ["interrupted_settling"] * 3
    + ["failing_restore"] * 3
    + ["nested_take"] * 2
    + ["arm"] * 3
    + ["select"] * 2
    + ["clear_faults"]
    + ["create"] * 8
    + ["device"] * 5
    + ["decorate"] * 4
    + ["check"] * 4
    + ["enter"] * 4
    + ["exit"] * 3
    + ["close"] * 4
    + ["take"] * 4
    + ["read"] * 2
    + ["with"] * 8
    + ["call"] * 6
    + ["drop"] * 4
    + ["misuse"] * 2
    + ["thread"] * 8
)
# What each action needs the program to hold first; where it holds none, the step creates instead.
NEEDS: dict[str, tuple[str, ...]] = {
    "check": ("result",),
    "enter": ("guard", "device"),
    "exit": ("guard", "device"),
    "close": ("guard", "device"),
    "take": ("guard",),
    "read": ("guard", "device", "result"),
    "with": ("guard", "device"),
    "call": ("function",),
    "drop": ("guard", "device", "result", "function", "other"),
}
# Each as often as it is listed (the owner's checks matter most).
THREAD_ACTIONS = ["close", "close", "exit", "with", "with", "take", "enter", "read", "drop", "check", "call"]
THREAD_ACTIONS += ["enter-close", "create-drop"]
THREAD_NEEDS: dict[str, tuple[str, ...]] = {
    "close": ("guard", "device"),
    "exit": ("guard", "device"),
    "take": ("guard",),
    "enter": ("guard",),
    "read": ("guard",),
    "drop": ("guard", "device", "result", "function"),
    "check": ("result",),
    "call": ("function",),
    "with": ("guard", "device"),
    "enter-close": ("device",),
    "create-drop": (),
}
INDEX = st.one_of(st.sampled_from(SMALL_INDEXES), st.sampled_from(list(INDEXES)))
RUNTIME_CHOICES: list[int | str] = [0, 1, 2, 3, 4, 0, 1, 2, "default", "default", "none", "bogus"]
RUNTIME_CHOICE = st.sampled_from(RUNTIME_CHOICES)


class OracleMachine(RuleBasedStateMachine):
    """Random programs: each step draws one action, and only the arguments that action takes."""

    def __init__(self) -> None:
        super().__init__()
        # What the examples before left behind is frozen, so each step's collection looks only at this one.
        gc.collect()
        gc.freeze()
        self.oracle = Oracle(_require_core())

    @property
    def _world(self) -> World:
        return self.oracle.reference

    def _held(self, *categories: str) -> list[int]:
        return [i for i, value in enumerate(self._world.handles) if _category(value) in categories]

    def _pick(self, data: st.DataObject, *categories: str) -> int:
        # Never a local bound to what a world holds: it would outlive a drop in the oracle's world only.
        return data.draw(st.sampled_from(self._held(*categories)), label="held")

    def _r(self, data: st.DataObject) -> int:
        return data.draw(st.integers(0, len(self._world.runtimes) - 1), label="r")

    def _runtime(self, data: st.DataObject) -> int | str:
        choice = data.draw(RUNTIME_CHOICE, label="runtime")
        return choice % len(self._world.runtimes) if isinstance(choice, int) else choice

    def _is(self, place: int, category: str) -> bool:
        return _category(self._world.handles[place]) == category

    @rule(data=st.data())
    def step(self, data: st.DataObject) -> None:
        action = data.draw(st.sampled_from(ACTIONS), label="action")
        if action in NEEDS and not self._held(*NEEDS[action]):
            action = "create"
        getattr(self, f"_{action}")(data)

    def _new_runtime(self, data: st.DataObject) -> None:
        if len(self._world.runtimes) < 5:
            self.oracle.step(op("new_runtime", kind=data.draw(st.sampled_from(RUNTIME_KINDS), label="kind")))

    def _default(self, data: st.DataObject) -> None:
        defaults = self._world.defaults
        if len(defaults) > 1 and (len(defaults) >= 4 or data.draw(st.booleans(), label="pop")):
            self.oracle.step(op("pop_default"))
        else:
            self.oracle.step(op("push_default", r=self._r(data)))

    def _fail_next(self, data: st.DataObject) -> None:
        which = data.draw(st.sampled_from(RUNTIME_OPS), label="op")
        moves = None
        if which == "set_device":
            moves = data.draw(st.sampled_from([None, None, 0, 1, 2, 5]), label="moves_to")
        code = data.draw(st.sampled_from(CODES), label="code")
        self.oracle.step(op("fail_next", r=self._r(data), op=which, code=code, moves_to=moves))

    def _raise_next(self, data: st.DataObject) -> None:
        which = data.draw(st.sampled_from(RUNTIME_OPS), label="op")
        kind = data.draw(st.sampled_from(EXCEPTION_KINDS), label="kind")
        self.oracle.step(op("raise_next", r=self._r(data), op=which, kind=kind))

    def _arm(self, data: st.DataObject) -> None:
        quirky = [i for i, rt in enumerate(self._world.runtimes) if isinstance(rt, Quirky)]
        if not quirky:
            self.oracle.step(op("new_runtime", kind="quirky"))
            return
        target, action = data.draw(_answer(), label="quirk")
        r = data.draw(st.sampled_from(quirky), label="r")
        after = data.draw(st.integers(0, 3), label="after")
        self.oracle.step(op("arm", r=r, op=target, after=after, action=action))

    def _interrupted_settling(self, data: st.DataObject) -> None:
        # The failure path: a switch that fails and moves the thread, then an exception while the borrow
        # settles it, from the read that looks where the thread is or from the restore.
        quirky = [i for i, rt in enumerate(self._world.runtimes) if isinstance(rt, Quirky)]
        if not quirky:
            self.oracle.step(op("new_runtime", kind="quirky"))
            quirky = [len(self._world.runtimes) - 1]
        r = data.draw(st.sampled_from(quirky), label="r")
        self.oracle.step(op("clear_faults", r=r))
        moves_to = data.draw(st.sampled_from([0, 1, 2]), label="moves_to")
        # codes a C function can answer too, so that the C path meets the same failure
        code = data.draw(st.sampled_from([c for c in CODES if _c_int(c)]), label="code")
        self.oracle.step(op("fail_next", r=r, op="set_device", code=code, moves_to=moves_to))
        which = data.draw(st.sampled_from(RUNTIME_OPS), label="op")
        kind = data.draw(st.sampled_from(EXCEPTION_KINDS), label="kind")
        self.oracle.step(op("arm", r=r, op=which, after=1, action=("raise", kind)))
        # At once, a borrow that switches: the second read, or the restore, is the settling's.
        index = str((self._world.runtimes[r].current_device + 1) % DEVICES)
        held = len(self._world.handles)
        how = data.draw(st.sampled_from(["create", "device", "decorate"]), label="borrow")
        if how == "create":
            self.oracle.step(op("create", index=index, runtime=r, cls="DeviceGuard"))
        elif how == "device":
            self.oracle.step(op("device", index=index, runtime=r, cls="device"))
            self.oracle.step(op("enter", h=held))
        else:
            self.oracle.step(op("decorate", index=index, runtime=r, cls="device", body="devices", j=0, r=r))
            self.oracle.step(op("call", h=held + 1, arg=0))

    def _select(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, DEVICES), label="index")
        self.oracle.step(op("select", r=self._r(data), index=index))

    def _clear_faults(self, data: st.DataObject) -> None:
        self.oracle.step(op("clear_faults", r=self._r(data)))

    def _here(self, runtime: int | str) -> str:
        """The index of the device the thread is on in the runtime a borrow would use."""
        world = self._world
        r = runtime if isinstance(runtime, int) else world.defaults[-1]
        return str(world.runtimes[r].current_device % (DEVICES + 1))

    def _made(self, data: st.DataObject, classes: list[str]) -> dict[str, object]:
        index = data.draw(INDEX, label="index")
        runtime = self._runtime(data)
        if not data.draw(st.integers(0, 4), label="elsewhere"):
            index = self._here(runtime)  # a borrow of the device already current: nothing to switch
        return {"index": index, "runtime": runtime, "cls": data.draw(st.sampled_from(classes))}

    def _runtime_of(self, place: int) -> int | None:
        """Which of the oracle world's runtimes an entered borrow uses (None where it is no runtime there)."""
        used = getattr(self._world.handles[place], "_runtime", None)
        return next((r for r, rt in enumerate(self._world.runtimes) if rt is used), None)

    def _failing_restore(self, data: st.DataObject) -> None:
        # An open borrow whose restore fails, through its own runtime (moving the thread, or not).
        # A device whose __init__ never ran has no _restored: it owes nothing.
        handles = self._world.handles
        open_ = [p for p in self._held("guard", "device") if getattr(handles[p], "_restored", True) is False]
        runtimes = [self._runtime_of(p) for p in open_]
        places = [p for p, r in zip(open_, runtimes, strict=True) if r is not None]
        if not places:
            self._create(data)
            return
        place = data.draw(st.sampled_from(places), label="held")
        code = data.draw(st.sampled_from([c for c in CODES if _c_int(c)]), label="code")
        moves_to = data.draw(st.sampled_from([None, None, 0, 1, 2]), label="moves_to")
        r = self._runtime_of(place)
        self.oracle.step(op("fail_next", r=r, op="set_device", code=code, moves_to=moves_to))
        how = data.draw(st.sampled_from(["close", "exit", "thread"]), label="how")
        if how == "thread":
            self.oracle.step(op("thread", action="close", h=place, j=0, r=0))
        self.oracle.step(op("close", h=place) if how == "close" else op("exit", h=place, how="value"))

    def _nested_take(self, data: st.DataObject) -> None:
        # Two guards on one runtime, the inner one handed over: its taker restores the outer one's device.
        r = self._r(data)
        for _ in range(2):
            held = len(self._world.handles)
            index = data.draw(st.sampled_from(SMALL_INDEXES[:DEVICES]), label="index")
            self.oracle.step(op("create", index=index, runtime=r, cls="DeviceGuard"))
            self.oracle.step(op("check", h=held, how="unwrap"))
        inner = len(self._world.handles) - 1
        if self._is(inner, "guard"):
            self.oracle.step(op("take", h=inner))

    def _create(self, data: st.DataObject) -> None:
        held = len(self._world.handles)
        self.oracle.step(op("create", **self._made(data, GUARD_CLASSES)))
        if len(self._world.handles) > held and data.draw(st.integers(0, 3), label="unwrap"):
            self.oracle.step(op("check", h=held, how="unwrap"))

    def _device(self, data: st.DataObject) -> None:
        held = len(self._world.handles)
        self.oracle.step(op("device", **self._made(data, DEVICE_CLASSES)))
        if len(self._world.handles) > held and data.draw(st.booleans(), label="enter"):
            self.oracle.step(op("enter", h=held))

    def _decorate(self, data: st.DataObject) -> None:
        made = self._made(data, DEVICE_CLASSES)
        if data.draw(st.integers(0, 4), label="plain index"):
            made["index"] = data.draw(st.sampled_from(SMALL_INDEXES), label="index")
        body = data.draw(st.sampled_from(DECORATED_BODIES * 3 + UNDECORATABLE), label="body")
        j = data.draw(st.integers(0, DEVICES), label="j")
        self.oracle.step(op("decorate", **made, body=body, j=j, r=self._r(data)))

    def _check(self, data: st.DataObject) -> None:
        how = data.draw(st.sampled_from([*CHECKS, "unwrap"]), label="how")
        self.oracle.step(op("check", h=self._pick(data, "result"), how=how))

    def _enter(self, data: st.DataObject) -> None:
        self.oracle.step(op("enter", h=self._pick(data, *NEEDS["enter"])))

    def _close(self, data: st.DataObject) -> None:
        self.oracle.step(op("close", h=self._pick(data, *NEEDS["close"])))

    def _take(self, data: st.DataObject) -> None:
        self.oracle.step(op("take", h=self._pick(data, *NEEDS["take"])))

    def _exit(self, data: st.DataObject) -> None:
        how = data.draw(st.sampled_from(list(EXIT_ARGUMENTS)), label="how")
        self.oracle.step(op("exit", h=self._pick(data, *NEEDS["exit"]), how=how))

    def _read(self, data: st.DataObject) -> None:
        place = self._pick(data, *NEEDS["read"])
        attr = "repr"
        if not self._is(place, "result"):
            attr = data.draw(st.sampled_from(["original_device", "current_device", "_restored", "repr"]))
        self.oracle.step(op("read", h=place, attr=attr))

    def _with(self, data: st.DataObject) -> None:
        place = self._pick(data, *NEEDS["with"])
        body = data.draw(st.sampled_from([*BODIES, "take"]), label="body")
        if body == "take" and not self._is(place, "guard"):
            body = "nest-create"
        j = data.draw(st.integers(0, DEVICES), label="j")
        self.oracle.step(op("with", h=place, body=body, j=j, r=self._r(data)))

    def _call(self, data: st.DataObject) -> None:
        arg = data.draw(st.integers(0, 2), label="arg")
        self.oracle.step(op("call", h=self._pick(data, "function"), arg=arg))

    def _drop(self, data: st.DataObject) -> None:
        place = self._pick(data, *NEEDS["drop"])
        if (
            (self._is(place, "guard") or self._is(place, "device"))
            and "bound-exit-cycle" not in KNOWN_BUGS
            and hasattr(self._world.handles[place], "__dict__")
            and data.draw(st.booleans(), label="keep_exit")
        ):
            # The borrow keeps its own bound __exit__: a cycle only the collector can free.
            self.oracle.step(op("keep_exit", h=place))
        self.oracle.step(op("drop", h=place))

    def _misuse(self, data: st.DataObject) -> None:
        what = data.draw(st.sampled_from(MISUSES + BORROW_MISUSES + GUARD_MISUSES), label="misuse")
        wanted = ("guard",) if what in GUARD_MISUSES else ("guard", "device")
        if what in MISUSES or not self._held(*wanted):
            self.oracle.step(op("misuse", what=what if what in MISUSES else "guard-init", r=self._r(data)))
        else:
            self.oracle.step(op("misuse_borrow", h=self._pick(data, *wanted), what=what))

    def _thread(self, data: st.DataObject) -> None:
        what = data.draw(st.sampled_from(THREAD_ACTIONS), label="on another thread")
        wanted = THREAD_NEEDS[what]
        if wanted and not self._held(*wanted):
            what, wanted = "create-drop", ()
        place = self._pick(data, *wanted) if wanted else 0
        j = data.draw(st.integers(0, DEVICES), label="j")
        self.oracle.step(op("thread", action=what, h=place, j=j, r=self._r(data)))

    def teardown(self) -> None:
        self.oracle.finish()


def _settings() -> settings:
    examples = os.environ.get(EXAMPLES_ENV)
    common: dict[str, Any] = {
        "stateful_step_count": STEPS,
        "deadline": None,
        "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much],
    }
    if examples:
        # A long run explores: seeded by --hypothesis-seed where given, at random otherwise.
        return settings(max_examples=int(examples), **common)
    # No shrinking: a mismatch prints its whole program at once, rather than minutes later.
    return settings(
        max_examples=DEFAULT_EXAMPLES,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        **common,
    )


def test_every_world_is_observed_as_the_reference() -> None:
    _require_core()
    with _controlled():
        run_state_machine_as_test(OracleMachine, settings=_settings())


# --- the reproducers: known bugs, and the listed differences the oracle relies on --------------------------

REPRODUCERS: dict[str, list[Op]] = {
    "device-attributes-before-enter": [
        op("device", index="1", runtime=0, cls="device"),
        op("read", h=0, attr="original_device"),
    ],
    "guard-new-allowed": [op("misuse", what="guard-new", r=0)],
    "malformed-entry-offers": [
        step
        for r, offer in enumerate(MALFORMED_OFFERS, start=2)
        for step in (
            op("new_runtime", kind=f"offer-{offer}"),
            op("push_default", r=r),
            op("create", index="1", runtime="default", cls="DeviceGuard"),
            op("device", index="1", runtime=r, cls="device"),
            op("with", h=1, body="devices", j=0, r=r),
            op("release"),
            op("pop_default"),
        )
    ],
    "bound-exit-cycle": [
        op("create", index="1", runtime=0, cls="OpenGuard"),
        op("check", h=0, how="unwrap"),
        op("keep_exit", h=1),
        op("drop", h=1),
        op("drop", h=0),
    ],
    "create-calls-subclass-new": [op("create", index="1", runtime=0, cls="ForbiddingGuard")],
    "wrapper-qualname": [op("decorate", index="1", runtime=0, cls="device", body="partial", j=0, r=0)],
    # Fixed: the index a caller gives as an int subclass is read as the int it stands for.
    "int-subclass-index": [
        op("create", index="IntSubclass(1)", runtime=0, cls="DeviceGuard"),
        op("check", h=0, how="unwrap"),
        op("read", h=1, attr="current_device"),
        op("close", h=1),
        op("device", index="IntSubclass(1)", runtime=0, cls="device"),
        op("with", h=2, body="devices", j=0, r=0),
    ],
    "device-without-init": [
        op("device", index="1", runtime=0, cls="BareDevice"),
        op("with", h=0, body="devices", j=0, r=0),
        op("close", h=0),
    ],
}

# Programs where each listed difference shows: an entry the oracle relies on must still be needed.
DELIBERATE_SHOWN: dict[str, list[Op]] = {
    "argument-error-messages": [op("misuse", what=what, r=0) for what in ARGUMENT_MISUSES]
    + [op("create", index="1", runtime=0, cls="DeviceGuard"), op("check", h=0, how="unwrap")]
    + [op("misuse_borrow", h=1, what=what) for what in ("close-keyword", "exit-keyword", "enter-argument")]
    + [op("misuse_borrow", h=1, what="take-argument")],
    "c-entry-points-answer-codes-only": [
        op("raise_next", r=0, op="set_device", kind="keyboard"),
        op("create", index="1", runtime=0, cls="DeviceGuard"),
    ],
    "decorated-function-is-compiled": [
        op("decorate", index="1", runtime=0, cls="device", body="devices", j=0, r=0),
    ],
    "extension-type-names": [
        op("create", index="-1", runtime=0, cls="DeviceGuard"),
        op("check", h=0, how="value"),
    ],
    "traceback-frames-hold-no-locals": [
        # A runtime's GuardError each time the failed switch settles (the read of the first settling, the
        # restore of the second): create returns it in an Err, and the guard, still owing, is held only by
        # the frames of that error's traceback.
        op("new_runtime", kind="quirky"),
        op("fail_next", r=2, op="set_device", code=cuda_errors.LAUNCH_FAILURE, moves_to=1),
        op("arm", r=2, op="get_device", after=1, action=("raise", "guard")),
        op("arm", r=2, op="set_device", after=1, action=("raise", "guard")),
        op("create", index="1", runtime=2, cls="DeviceGuard"),
    ],
    "unpacking-messages": [
        op("new_runtime", kind="quirky"),
        op("arm", r=2, op="get_device", after=0, action=("answer", (0,))),
        op("device", index="1", runtime=2, cls="device"),
        op("enter", h=0),
    ],
}


def _run(program: list[Op], allowed: frozenset[str]) -> Oracle:
    oracle = Oracle(_require_core(), allowed)
    with _controlled():
        try:
            for step in program:
                oracle.step(step)
        finally:
            oracle.finish()
    return oracle


def test_every_known_bug_has_a_reproducer() -> None:
    assert set(KNOWN_BUGS) <= set(REPRODUCERS)
    assert not set(KNOWN_BUGS) & set(DELIBERATE)


@pytest.mark.parametrize("name", sorted(REPRODUCERS))
def test_known_bug_reproducer(name: str, request: pytest.FixtureRequest) -> None:
    if name in KNOWN_BUGS:
        request.applymarker(pytest.mark.xfail(raises=Mismatch, strict=True, reason=f"known bug: {name}"))
    # Every other listed difference allowed: the reproducer fails for its own bug or not at all.
    _run(REPRODUCERS[name], allowed=ALLOWED - {name})


@pytest.mark.parametrize("name", sorted(DELIBERATE_SHOWN))
def test_a_listed_difference_is_still_there(name: str) -> None:
    assert name in DELIBERATE
    with pytest.raises(Mismatch):
        _run(DELIBERATE_SHOWN[name], allowed=ALLOWED - {name})
    oracle = _run(DELIBERATE_SHOWN[name], allowed=ALLOWED)
    assert oracle.explained[name] > 0

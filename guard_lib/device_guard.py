"""``DeviceGuard``: borrow a CUDA device and put the caller's device back.

Several backends can run in one process with their engines on different devices. Each must leave the
thread's current device as it found it, or the next backend inherits a selection it never made. Kernel
launches follow the stream they are given, but allocation follows the current device, so a backend that
allocates has to select a device even when the caller chose the stream.
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from ._shared import as_int, closed_guard, cuda_error, not_owner, refuse_undecoratable, restore
from .errors import GuardError
from .result import Err, Ok, Result
from .runtime import DeviceRuntime, get_runtime

__all__ = ["DeviceGuard", "device"]

_B = TypeVar("_B", bound="_Borrow")
_P = ParamSpec("_P")
_R = TypeVar("_R")

# Bound at import: a finaliser that runs at interpreter shutdown may find module globals already cleared.
_warn = warnings.warn


class _Tokens(threading.local):
    # Each thread's own object, made on its first use and gone with the thread: a guard keeps the one of
    # the thread that created it. A thread id would not do: the system reuses it once the thread ends.
    def __init__(self) -> None:
        self.token = object()


_tokens = _Tokens()


class _Borrow:
    """What ``DeviceGuard`` and ``device`` share: the selection, and the restore that undoes it.

    Interrupts: a KeyboardInterrupt can land between any two instructions. The debt (``_restored`` false)
    is recorded before the switch, and every step that could leave the thread moved with nobody holding
    the debt settles it on any exception: it looks where the thread is and puts back only a moved one, so
    an interrupted restore is never repeated.
    """

    __slots__ = ("_devices", "_index", "_requested_runtime", "_restored", "_runtime", "_thread")
    _index: object
    _requested_runtime: DeviceRuntime | None
    _runtime: DeviceRuntime
    _devices: tuple[int, int]  # (original, current)
    _thread: object
    _restored: bool
    # A device's borrows for threads that entered it while another held it, by thread token; a guard
    # has none.
    _elsewhere: dict[object, device] | None = None

    def _enter(self: _B) -> _B:
        """Select ``_index`` on this thread and record what to restore; raise GuardError if refused.

        Only on a borrow that owes nothing: ``device.__enter__`` refuses one entered already.
        """
        requested = self._index
        if type(requested) is int:
            index = requested
        else:
            converted = as_int(requested)
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
            raise cuda_error(runtime, "cannot read the current CUDA device", index, code)
        self._runtime = runtime
        # One store for the pair: an interrupt anywhere leaves both properties describing the same entry.
        self._devices = (original, index)
        self._thread = _tokens.token
        if index == original:
            self._restored = False
            return self
        # Nobody else can pay a debt left here: a with statement whose __enter__ raised never calls
        # __exit__. So until the settling of a refusal has finished, a handler still to run settles: the
        # outer one pays what an interrupt in the inner one (its start, or its settling) left unpaid.
        # Settling looks where the thread is, so the second never repeats a restore the first made.
        try:
            try:
                # The restore is owed from the request, not from the switch's success: a failed
                # selection can still move the thread once an error is pending on the device.
                self._restored = False
                (code,) = runtime.set_device(index)
                if code:
                    raise cuda_error(runtime, f"cannot select CUDA device {index}", index, code)
                return self
            except BaseException:
                # Refused, or interrupted before the caller could hold the debt: pay it here. Settling
                # looks where the thread is rather than trusting the code, and puts back only a moved
                # thread, which also keeps a refusal from creating a context on the caller's device
                # (cudaSetDevice does that from CUDA 12 on).
                self._settle()
                raise
        except BaseException:
            self._settle()
            raise

    def _settle(self) -> None:
        """Pay the debt now: put back a thread that is not on the original device, then mark it paid.

        Only on the owning thread (``_settle_mine`` chooses): another thread's device is not this
        guard's to touch.
        """
        if self._restored:
            return
        runtime = self._runtime
        original, current = self._devices
        read, now = runtime.get_device()
        if read or now != original:
            restore(runtime, original, current, None if read else now)
        self._restored = True

    @property
    def original_device(self) -> int:
        """The device that was current before the selection, which ``close`` restores."""
        return self._devices[0]

    @property
    def current_device(self) -> int:
        """The device that was selected."""
        return self._devices[1]

    def close(self, *_exc_info: object) -> None:
        """Restore the caller's device. Closing again, or closing a guard taken over, does nothing.

        Also the ``__exit__`` of both context managers, so leaving a ``with`` block costs one call.
        """
        try:
            if self._restored or self._thread is not _tokens.token:
                elsewhere = self._elsewhere
                own = elsewhere.get(_tokens.token) if elsewhere else None
                if own is not None and not own._restored:
                    own.close()
                    # Closed first: an interrupt before this leaves a restored borrow, which counts as none.
                    del self._elsewhere[_tokens.token]  # type: ignore[union-attr]
                    return
                if self._restored:
                    return
                raise not_owner(self._devices[1], "restored")
            original, current = self._devices
            if current != original:
                restore(self._runtime, original, current, current)
            self._restored = True
        except BaseException:
            # Interrupted around the restore: finish it without repeating one that already happened.
            self._settle_mine()
            raise

    def _settle_mine(self) -> None:
        # Whichever borrow of this object the calling thread holds, if any.
        if not self._restored and self._thread is _tokens.token:
            self._settle()
        else:
            elsewhere = self._elsewhere
            own = elsewhere.get(_tokens.token) if elsewhere else None
            if own is not None:  # only an interrupt gets here
                own._settle()

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
        # A class object.__new__ makes, but no guard. (mutmut cannot call its copy of create on such a
        # class, so the catalogue mutates these lines: create-makes-a-plain-class.)
        if not isinstance(guard, DeviceGuard):  # pragma: no mutate
            raise TypeError(f"DeviceGuard.create() makes a DeviceGuard, not {cls!r}")  # pragma: no mutate
        guard._restored = True  # until something is selected, there is nothing to owe
        guard._index = device_index
        guard._requested_runtime = runtime
        outcome: Ok[DeviceGuard] | Err | None = None
        try:
            # The outcome is built here, field by field, rather than by its __init__: an interrupt
            # anywhere in between finds it in ``outcome`` and silences it, since nobody received it.
            try:
                guard._enter()
                outcome = Ok.__new__(Ok)
                outcome._value = guard
            except GuardError as error:
                outcome = Err.__new__(Err)
                outcome._error = error
            outcome._checked = False
            return outcome
        except BaseException:  # only an interrupt gets here
            # The caller never received the guard, so it cannot restore: do it here.
            if outcome is not None:
                outcome._checked = True
            guard._settle()
            raise

    def take(self) -> DeviceGuard:
        """Hand the borrow to a new guard, which alone restores; this one is left looking restored."""
        if self._restored:
            raise GuardError(
                f"cannot take over a DeviceGuard for CUDA device {self._devices[1]}: it was closed or taken",
                device_index=self._devices[1],
            )
        if self._thread is not _tokens.token:
            raise GuardError(
                f"cannot take over a DeviceGuard for CUDA device {self._devices[1]} from another thread: "
                "only the thread that created it can restore its device",
                device_index=self._devices[1],
            )
        taker = object.__new__(DeviceGuard)
        taker._restored = True
        taker._runtime = self._runtime
        taker._devices = self._devices
        taker._thread = self._thread
        try:
            # The taker owes before this one stops owing, so at no instant does nobody owe. Without the
            # second line both guards would put the device back, the second undoing whatever the thread
            # selected in between.
            taker._restored = False
            self._restored = True
            return taker
        except BaseException:  # only an interrupt gets here
            # The caller never received the taker: the debt stays with this guard.
            if not taker._restored:
                self._restored = False
                taker._restored = True
            raise

    def __enter__(self) -> DeviceGuard:
        # Refused before the body runs: it would run on whatever device this thread is on.
        if self._restored:
            raise closed_guard(self._devices[1])
        if self._thread is not _tokens.token:
            raise not_owner(self._devices[1], "entered")
        return self

    def __repr__(self) -> str:
        state = "restored" if self._restored else "open"
        original, current = self._devices
        return f"<DeviceGuard device {current} (restores {original}), {state}>"

    # mutmut would put its trampoline between the collector and this finaliser, moving the frame the
    # warning points at; the critical harness mutates it instead.
    def __del__(self) -> None:  # pragma: no mutate block
        # No restore here: the collector may run this on any thread, and restoring there would move that
        # thread's device instead of the owner's. A guard whose set-up was interrupted owes nothing.
        if not getattr(self, "_restored", True):
            _warn(
                f"DeviceGuard for CUDA device {self._devices[1]} was garbage-collected without close(); "
                f"device {self._devices[0]} was never restored",
                ResourceWarning,
                stacklevel=2,
                source=self,
            )


class device(_Borrow):
    """``with guard_lib.device(i) as borrow:`` selects device ``i`` and restores the caller's on exit.

    For callers who prefer exceptions: entering raises GuardError where ``DeviceGuard.create`` returns
    an Err. The selection happens on entering, not on construction; once exited, it can be entered
    again. ``borrow.original_device`` and ``borrow.current_device`` are there once entered.

    ``@guard_lib.device(i)`` decorates a function: every call runs on device ``i`` with a borrow of its
    own, so recursive calls and calls from several threads each restore their own caller's device.
    """

    __slots__ = ("_elsewhere",)

    def __init__(self, device_index: int, *, runtime: DeviceRuntime | None = None) -> None:
        self._index = device_index
        self._requested_runtime = runtime
        self._restored = True
        self._elsewhere = None

    def __enter__(self) -> device:
        free = self._restored
        token = _tokens.token
        elsewhere = self._elsewhere
        own = elsewhere.get(token) if elsewhere else None
        held = self if not free and self._thread is token else own
        if held is not None and not held._restored:
            raise GuardError(
                f"guard_lib.device({self._index!r}) is already entered; it is not reentrant",
                device_index=held._devices[1],
            )
        try:
            if free:
                return self._enter()
            return self._enter_elsewhere(token)
        except BaseException:
            # Interrupted on the way out: a with statement whose __enter__ raised never calls __exit__.
            self._settle_mine()
            raise

    def _enter_elsewhere(self, token: object) -> device:
        # Another thread holds this object's borrow, and only it can restore that one: this thread's
        # ``with`` gets a borrow of its own, which ``with ... as`` hands out and this thread's exit closes.
        index: Any = self._index
        borrow = device(index, runtime=self._requested_runtime)
        try:
            try:
                borrow._enter()
                if self._elsewhere is None:
                    self._elsewhere = {}
                self._elsewhere[token] = borrow
                return borrow
            except BaseException:
                # Refused or interrupted: __exit__ never runs for a with whose __enter__ raised. A borrow
                # left in the table restored counts as none.
                borrow._settle()
                raise
        except BaseException:
            borrow._settle()
            raise

    def __call__(self, function: Callable[_P, _R]) -> Callable[_P, _R]:
        refuse_undecoratable(self._index, function)
        # as given: each call's borrow refuses a bad index the way a ``with`` block would
        index: Any = self._index
        runtime = self._requested_runtime

        @functools.wraps(function)
        def on_device(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            borrow = device(index, runtime=runtime)
            entered = False
            try:
                try:
                    borrow._enter()
                    # Only now may close() restore: after an enter that raised, it would restore again
                    # without looking where the thread is.
                    entered = True
                    return function(*args, **kwargs)
                finally:
                    if entered:
                        borrow.close()
            except BaseException:
                # Interrupted on the way into close(), or _enter raised still owing (the runtime raised
                # through both of its settlings): nobody else holds this borrow, so pay it here.
                borrow._settle()
                raise

        return on_device

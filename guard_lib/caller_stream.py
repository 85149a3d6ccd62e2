"""The stream a caller asks backends to run on.

Kernel launches follow the stream they are given, so a caller that wants a backend's work on its own
stream says so with ``CallerStreamGuard``, and the backend asks ``get_caller_stream()``. The selection is
held in a context variable: each thread and each asyncio task sees only its own.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, Final

from .errors import GuardError

__all__ = ["CallerStreamGuard", "get_caller_stream", "stream_handle"]

_CALLER_STREAM: Final[ContextVar[Any]] = ContextVar("guard_lib.caller_stream", default=None)


def get_caller_stream() -> Any:
    """The stream selected by the innermost active ``CallerStreamGuard`` of this context, else None.

    The object is returned as it was given (a ``torch.cuda.Stream``, a CuPy or ``cuda.core`` stream, a
    raw handle); ``stream_handle`` turns it into a handle where that is needed.
    """
    return _CALLER_STREAM.get()


def stream_handle(stream: Any) -> int:
    """The raw ``cudaStream_t`` of a stream object, through the ``__cuda_stream__`` protocol.

    An int is taken as a handle already. Raises TypeError for an object that offers neither.
    """
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is None:
        raise TypeError(f"{type(stream).__name__} is not a CUDA stream: it has no __cuda_stream__")
    # The protocol is a method returning (version, handle); an attribute holding that tuple is taken too.
    _version, handle = protocol() if callable(protocol) else protocol
    return int(handle)


class CallerStreamGuard:
    """``with CallerStreamGuard(stream):`` makes ``stream`` the caller's stream until the block ends.

    On exit the previous selection of this context comes back. A guard cannot be copied or taken over,
    and cannot be entered again while it is active.
    """

    __slots__ = ("_stream", "_token")

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._token: Token[Any] | None = None

    @property
    def stream(self) -> Any:
        return self._stream

    def __enter__(self) -> CallerStreamGuard:
        if self._token is not None:
            raise GuardError(
                "this CallerStreamGuard is already active; it is not reentrant", device_index=None
            )
        previous = _CALLER_STREAM.get()
        try:
            self._token = _CALLER_STREAM.set(self._stream)
            return self
        except BaseException:  # only an interrupt gets here
            # Interrupted before the with block began, so __exit__ will never run: undo the selection,
            # whether or not its token was stored.
            token, self._token = self._token, None
            if token is None:
                _CALLER_STREAM.set(previous)
            else:
                _CALLER_STREAM.reset(token)
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            token = self._token
            if token is not None:
                _CALLER_STREAM.reset(token)
                self._token = None
        except ValueError:
            raise GuardError(
                "this CallerStreamGuard was entered in another thread or task; exit it there",
                device_index=None,
            ) from None
        except BaseException:  # only an interrupt gets here
            # Interrupted around the reset: finish it; a token already used refuses a second reset.
            token, self._token = self._token, None
            if token is not None:
                with contextlib.suppress(RuntimeError):
                    _CALLER_STREAM.reset(token)
            raise
        if token is None:
            raise GuardError("this CallerStreamGuard was exited without being entered", device_index=None)

    def __copy__(self) -> Any:
        raise TypeError("a CallerStreamGuard cannot be copied")

    def __deepcopy__(self, memo: object) -> Any:
        raise TypeError("a CallerStreamGuard cannot be copied")

    def __reduce__(self) -> Any:
        raise TypeError("a CallerStreamGuard cannot be pickled")

"""``Result``: the value of an operation that can fail, which the caller has to look at.

``DeviceGuard.create`` returns one instead of raising, so code that borrows a device has to say what it
does on failure. A Result that is dropped without ever being looked at warns: a failure cannot be ignored
by accident.
"""

from __future__ import annotations

import warnings
from typing import Generic, NoReturn, TypeAlias, TypeVar

from .errors import GuardError, UncheckedResultWarning
from .implementation import CORE as _CORE

__all__ = ["Err", "Ok", "Result"]

T = TypeVar("T")

# Bound at import: a finaliser that runs at interpreter shutdown may find module globals already cleared.
_warn = warnings.warn


class _Outcome:
    __slots__ = ("_checked",)
    _checked: bool

    # mutmut would put its trampoline between the collector and this finaliser, moving the frame the
    # warning points at; the critical harness mutates it instead.
    def __del__(self) -> None:  # pragma: no mutate block
        # An outcome whose __init__ was interrupted was never handed to anyone to check.
        if not getattr(self, "_checked", True):
            _warn(f"{self!r} was dropped without being checked", UncheckedResultWarning, stacklevel=2)


class Ok(_Outcome, Generic[T]):
    """The success of an operation, holding its value."""

    __slots__ = ("_value",)
    __match_args__ = ("value",)

    def __init__(self, value: T) -> None:
        self._value = value
        self._checked = False

    def _get_value(self) -> T:
        self._checked = True
        return self._value

    @property
    def value(self) -> T:
        """The value. Reading it counts as checking the result."""
        return self._get_value()

    def is_ok(self) -> bool:
        self._checked = True
        return True

    def is_err(self) -> bool:
        self._checked = True
        return False

    def unwrap(self) -> T:
        self._checked = True
        return self._value

    def __repr__(self) -> str:
        return f"Ok({self._value!r})"


class Err(_Outcome):
    """The failure of an operation, holding the GuardError that says why."""

    __slots__ = ("_error",)
    __match_args__ = ("error",)

    def __init__(self, error: GuardError) -> None:
        self._error = error
        self._checked = False

    def _get_error(self) -> GuardError:
        self._checked = True
        return self._error

    @property
    def error(self) -> GuardError:
        """The GuardError. Reading it counts as checking the result."""
        return self._get_error()

    def is_ok(self) -> bool:
        self._checked = True
        return False

    def is_err(self) -> bool:
        self._checked = True
        return True

    def unwrap(self) -> NoReturn:
        self._checked = True
        raise self._error

    def __repr__(self) -> str:
        return f"Err({self._error!r})"


# Where the compiled core serves DeviceGuard it serves Ok and Err too, so that `match` and isinstance see
# the one type that create returns. The classes above stay the reference, and the Python fallback.
if _CORE is not None:
    Ok, Err = _CORE.Ok, _CORE.Err  # type: ignore[misc]

Result: TypeAlias = Ok[T] | Err
"""``Ok[T]`` or ``Err``; ``match`` on it with ``case Ok(value):`` and ``case Err(error):``."""

"""The errors and warnings guard_lib reports."""

from __future__ import annotations

__all__ = ["GuardError", "GuardTypeError", "UncheckedResultWarning"]


class GuardError(Exception):
    """A device could not be borrowed, or a guard was used where it cannot act.

    ``code`` is the CUDA error code and ``code_name`` its name; both are None when guard_lib refused
    the request before making any CUDA call.
    """

    def __init__(
        self,
        message: str,
        *,
        device_index: int | None,
        code: int | None = None,
        code_name: str | None = None,
    ) -> None:
        super().__init__(message)
        self.device_index = device_index
        self.code = code
        self.code_name = code_name


class GuardTypeError(GuardError, TypeError):
    """The device index was not an integer (bool, float, str, None, ...)."""


class UncheckedResultWarning(RuntimeWarning):
    """A Result was dropped without ever being checked, so a failure could have gone unnoticed."""

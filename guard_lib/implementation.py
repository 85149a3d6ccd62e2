"""Which implementation of ``DeviceGuard`` and ``device`` this process uses: compiled or Python.

The compiled core (``guard_lib._core``, built from ``_core.pyx`` at install time) is used where it was
built; ``device_guard.py`` is the reference and the fallback. ``GUARD_LIB_IMPL`` chooses: ``python``
always takes the reference, ``compiled`` refuses to import without the core, and unset (or ``auto``)
takes the core where it is there. The choice is made once, at import.
"""

from __future__ import annotations

import logging
import os
from typing import Final, Literal

__all__ = ["IMPLEMENTATION", "IMPL_ENV", "REASON", "DeviceGuard", "device"]

IMPL_ENV: Final = "GUARD_LIB_IMPL"
_CHOICES = ("auto", "compiled", "python")

logger = logging.getLogger("guard_lib")


def _choose() -> tuple[Literal["compiled", "python"], str]:
    wanted = os.environ.get(IMPL_ENV, "auto").strip() or "auto"
    if wanted not in _CHOICES:
        raise ImportError(f"{IMPL_ENV}={wanted!r} names no implementation: use one of {', '.join(_CHOICES)}")
    if wanted == "python":
        return "python", f"{IMPL_ENV}=python"
    try:
        from . import _core  # noqa: F401, PLC0415
    except ImportError as error:
        if wanted == "compiled":
            raise ImportError(
                f"{IMPL_ENV}=compiled, but the compiled core cannot be imported: {error}"
            ) from error
        return "python", f"the compiled core is not built ({error})"
    return "compiled", "the compiled core is built" if wanted == "auto" else f"{IMPL_ENV}=compiled"


IMPLEMENTATION, REASON = _choose()
"""``"compiled"`` or ``"python"``, and why."""

if IMPLEMENTATION == "compiled":
    from ._core import DeviceGuard, device
else:
    from .device_guard import DeviceGuard, device
logger.debug("guard_lib uses its %s implementation: %s", IMPLEMENTATION, REASON)

"""Which implementation of ``DeviceGuard`` and ``device`` this process uses: compiled or Python.

The compiled core (``guard_lib._core``, built from ``_core.pyx`` at install time) is used where it was
built; ``device_guard.py`` is the reference and the fallback. ``GUARD_LIB_IMPL`` chooses: ``python``
always takes the reference, ``compiled`` refuses to import without the core, and unset (or ``auto``)
takes the core where it is there. The choice is made once, at import.
"""

from __future__ import annotations

import os
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Final, Literal

from . import device_guard

__all__ = ["IMPLEMENTATION", "IMPL_ENV", "REASON", "DeviceGuard", "device"]

IMPL_ENV: Final = "GUARD_LIB_IMPL"
_CHOICES = ("auto", "compiled", "python")


def _choose() -> tuple[Literal["compiled", "python"], str, ModuleType]:
    """The implementation ``GUARD_LIB_IMPL`` asks for, why, and the module that holds it."""
    wanted = os.environ.get(IMPL_ENV, "auto").strip() or "auto"
    if wanted not in _CHOICES:
        raise ImportError(f"{IMPL_ENV}={wanted!r} names no implementation: use one of {', '.join(_CHOICES)}")
    if wanted == "python":
        return "python", f"{IMPL_ENV}=python", device_guard
    try:
        # By its full name: inside the package's own import, ``from . import`` would blame a cycle.
        core = import_module(f"{__package__}._core")
    except ImportError as error:
        if wanted == "compiled":
            raise ImportError(
                f"{IMPL_ENV}=compiled, but the compiled core cannot be imported: {error}"
            ) from error
        return "python", f"the compiled core is not built ({error})", device_guard
    reason = "the compiled core is built" if wanted == "auto" else f"{IMPL_ENV}=compiled"
    return "compiled", reason, core


IMPLEMENTATION, REASON, _module = _choose()
"""``"compiled"`` or ``"python"``, and why."""

if TYPE_CHECKING:
    # One API: the compiled classes type as the reference's.
    from .device_guard import DeviceGuard, device
else:
    DeviceGuard, device = _module.DeviceGuard, _module.device

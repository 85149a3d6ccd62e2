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

__all__ = ["CORE", "IMPLEMENTATION", "IMPL_ENV", "REASON", "DeviceGuard", "device"]

IMPL_ENV: Final = "GUARD_LIB_IMPL"
_CHOICES = ("auto", "compiled", "python")


def _choose() -> tuple[Literal["compiled", "python"], str, ModuleType | None]:
    """The implementation ``GUARD_LIB_IMPL`` asks for, why, and the compiled core (None for the reference).

    Imports nothing of the reference: ``guard_lib.result`` asks for the choice while the reference loads.
    """
    wanted = os.environ.get(IMPL_ENV, "auto").strip() or "auto"
    if wanted not in _CHOICES:
        raise ImportError(f"{IMPL_ENV}={wanted!r} names no implementation: use one of {', '.join(_CHOICES)}")
    if wanted == "python":
        return "python", f"{IMPL_ENV}=python", None
    try:
        # By its full name: inside the package's own import, ``from . import`` would blame a cycle.
        core = import_module(f"{__package__}._core")
    except ImportError as error:
        if wanted == "compiled":
            raise ImportError(
                f"{IMPL_ENV}=compiled, but the compiled core cannot be imported: {error}"
            ) from error
        return "python", f"the compiled core is not built ({error})", None
    reason = "the compiled core is built" if wanted == "auto" else f"{IMPL_ENV}=compiled"
    return "compiled", reason, core


IMPLEMENTATION, REASON, CORE = _choose()
"""``"compiled"`` or ``"python"``, why, and the compiled core where it is the one in use."""

if TYPE_CHECKING or CORE is None:
    # One API: the compiled classes type as the reference's.
    from .device_guard import DeviceGuard, device
else:
    DeviceGuard, device = CORE.DeviceGuard, CORE.device

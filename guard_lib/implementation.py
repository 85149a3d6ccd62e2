"""Which implementation of ``DeviceGuard`` and ``device`` this process uses: compiled or Python.

The compiled core (``guard_lib._core``, built from ``_core.pyx`` at install time) is used where it was
built; ``device_guard.py`` is the reference and the fallback. ``GUARD_LIB_IMPL`` chooses: ``python``
always takes the reference, ``compiled`` refuses to import without the core, and unset (or ``auto``)
takes the core where it is there, except in mutmut's copy of this package (``mutants/guard_lib``) while
mutmut runs the tests: there it takes the reference, the code mutmut mutates. The choice is made once, at
import.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Final, Literal

__all__ = ["CORE", "IMPLEMENTATION", "IMPL_ENV", "REASON", "DeviceGuard", "device"]

IMPL_ENV: Final = "GUARD_LIB_IMPL"
_CHOICES = ("auto", "compiled", "python")
# mutmut sets it for every test run it makes (stats, clean run, each mutant), before pytest imports anything.
_MUTMUT_ENV: Final = "MUTANT_UNDER_TEST"


def _choose(
    environ: Mapping[str, str] = os.environ, module_file: str = __file__
) -> tuple[Literal["compiled", "python"], str, ModuleType | None]:
    """The implementation ``GUARD_LIB_IMPL`` asks for, why, and the compiled core (None for the reference).

    Imports nothing of the reference: ``guard_lib.result`` asks for the choice while the reference loads.
    """
    wanted = environ.get(IMPL_ENV, "auto").strip() or "auto"
    if wanted not in _CHOICES:
        raise ImportError(f"{IMPL_ENV}={wanted!r} names no implementation: use one of {', '.join(_CHOICES)}")
    if wanted == "python":
        return "python", f"{IMPL_ENV}=python", None
    if wanted == "auto" and _in_mutmuts_copy(environ, module_file):
        # The core beside mutmut's copy was built from _core.pyx, which mutmut does not mutate: serving the
        # tests from it would leave every mutant of the reference untested. Not even imported, so the
        # process holds one implementation.
        return "python", f"mutmut is running the tests on its mutated copy ({_MUTMUT_ENV} is set)", None
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


def _in_mutmuts_copy(environ: Mapping[str, str], module_file: str) -> bool:
    """Whether this is mutmut's copy of the package (``mutants/guard_lib``) with mutmut running the tests.

    Both, so that a backend's own mutmut run, which imports an installed guard_lib, keeps the core.
    """
    package_dir = os.path.dirname(module_file)
    return _MUTMUT_ENV in environ and os.path.basename(os.path.dirname(package_dir)) == "mutants"


IMPLEMENTATION, REASON, CORE = _choose()
"""``"compiled"`` or ``"python"``, why, and the compiled core where it is the one in use."""

if TYPE_CHECKING or CORE is None:
    # One API: the compiled classes type as the reference's.
    from .device_guard import DeviceGuard, device
else:
    DeviceGuard, device = CORE.DeviceGuard, CORE.device

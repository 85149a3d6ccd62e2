"""Which implementation of ``DeviceGuard`` and ``device`` this process uses: compiled or Python.

The compiled core (``guard_lib._core``, built from ``_core.pyx`` at install time) is used where it was
built; ``device_guard.py`` is the reference and the fallback. ``GUARD_LIB_IMPL`` chooses: ``python``
always takes the reference, ``compiled`` refuses to import without the core, and unset (or ``auto``)
takes the core where it is there, except in mutmut's copy of this package (``mutants/guard_lib``) while
mutmut runs the tests: there it takes the reference, the code mutmut mutates. The choice is made once, at
import.

Where the core is missing, the build left a note beside this file saying why (``setup.py`` writes it):
``REASON`` quotes it, and a build that failed, rather than one skipped with ``GUARD_LIB_BUILD=python``,
is logged once as a warning when the choice falls back.

This module imports nothing of guard_lib: the reference's modules ask it for the choice while they load,
and ``guard_lib`` itself takes ``DeviceGuard`` and ``device`` from the implementation chosen here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from importlib import import_module
from types import ModuleType
from typing import Final, Literal

__all__ = ["CORE", "IMPLEMENTATION", "IMPL_ENV", "REASON"]

IMPL_ENV: Final = "GUARD_LIB_IMPL"
_CHOICES = ("auto", "compiled", "python")
# mutmut sets it for every test run it makes (stats, clean run, each mutant), before pytest imports anything.
_MUTMUT_ENV: Final = "MUTANT_UNDER_TEST"

# setup.py's note for this interpreter's core: its first line says "skipped" or "failed", the rest why.
_NOTE = os.path.join(os.path.dirname(__file__), f"_core_not_built.{sys.implementation.cache_tag}.txt")
_FAILED = "failed"


def _build_note() -> tuple[str, str] | None:
    """What the build said about a core it did not build: ``(kind, why)``, or None where it left no note."""
    try:
        with open(_NOTE, encoding="utf-8") as note:
            kind, _, why = note.read().strip().partition("\n")
    except OSError:
        return None
    return kind, why.strip() or kind


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
        note = _build_note()
        why = str(error) if note is None else note[1]
        if wanted == "compiled":
            raise ImportError(
                f"{IMPL_ENV}=compiled, but the compiled core cannot be imported: {error}"
                + ("" if note is None else f" ({why})")
            ) from error
        if note is not None and note[0] == _FAILED:
            _warn_not_built(why)
        return "python", f"the compiled core is not built ({why})", None
    reason = "the compiled core is built" if wanted == "auto" else f"{IMPL_ENV}=compiled"
    return "compiled", reason, core


def _in_mutmuts_copy(environ: Mapping[str, str], module_file: str) -> bool:
    """Whether this is mutmut's copy of the package (``mutants/guard_lib``) with mutmut running the tests.

    Both, so that a backend's own mutmut run, which imports an installed guard_lib, keeps the core.
    """
    package_dir = os.path.dirname(module_file)
    return _MUTMUT_ENV in environ and os.path.basename(os.path.dirname(package_dir)) == "mutants"


def _warn_not_built(why: str) -> None:
    # Imported here: a process that runs the core never needs logging from this module.
    import logging  # noqa: PLC0415

    logging.getLogger("guard_lib").warning(
        "guard_lib runs its Python implementation (the same behaviour, slower): the compiled core is not "
        "built (%s). Reinstall where a C compiler and Python's headers are present to build it, or set "
        "GUARD_LIB_IMPL=python, or reinstall with GUARD_LIB_BUILD=python, to choose the Python one.",
        why,
    )


IMPLEMENTATION, REASON, CORE = _choose()
"""``"compiled"`` or ``"python"``, why, and the compiled core where it is the one in use."""

"""Builds guard_lib's compiled core where it can, and installs the Python implementation where it cannot.

Everything else about the package is in pyproject.toml. The core needs Cython and a C compiler, not the
CUDA toolkit: it reaches the CUDA runtime through the capsules cuda-python exports at run time.
``GUARD_LIB_BUILD=python`` skips the core; ``GUARD_LIB_BUILD=compiled`` makes a failed build an error.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

BUILD_ENV = "GUARD_LIB_BUILD"
CORE = "guard_lib._core"


def _warn_once(why: str) -> None:
    sys.stderr.write(
        f"warning: guard_lib's compiled core was not built ({why}); "
        "guard_lib installs with its Python implementation\n"
    )


class OptionalBuildExt(build_ext):
    """A failed build of the core leaves the Python implementation in place, unless the core is required."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:
            self._give_up(error)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            self._give_up(error)

    def _give_up(self, error: Exception) -> None:
        if os.environ.get(BUILD_ENV) == "compiled":
            raise error
        _warn_once(f"{type(error).__name__}: {error}")


def _extensions() -> list[Any]:
    wanted = os.environ.get(BUILD_ENV, "auto")
    if wanted == "python":
        return []
    try:
        from Cython.Build import cythonize  # noqa: PLC0415 (optional: without it, no core)
    except ImportError as error:
        if wanted == "compiled":
            raise
        _warn_once(f"Cython is not installed: {error}")
        return []
    # CFLAGS that set an optimisation level win: the critical harness builds mutants with -O0, for speed.
    optimise = [] if "-O" in os.environ.get("CFLAGS", "") else ["-O2"]
    core = Extension(CORE, ["guard_lib/_core.pyx"], extra_compile_args=optimise)
    try:
        return list(cythonize([core], language_level=3, quiet=True))
    except Exception as error:
        if wanted == "compiled":
            raise
        _warn_once(f"Cython could not translate guard_lib/_core.pyx: {error}")
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})

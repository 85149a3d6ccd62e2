"""Builds guard_lib's compiled core where it can, and installs the Python implementation where it cannot.

Everything else about the package is in pyproject.toml. The core needs Cython and a C compiler, not the
CUDA toolkit: it reaches the CUDA runtime through the capsules cuda-bindings exports at run time.
``GUARD_LIB_BUILD=python`` skips the core; ``GUARD_LIB_BUILD=compiled`` makes a failed build an error.

Where the core is not built, the build leaves a note in the package saying why (its first line
``skipped`` or ``failed``), which ``guard_lib.implementation.REASON`` quotes; a built core removes it.
Only this build decides: a core binary or a note that an earlier build left in ``build/`` (or in place)
is removed before building, so it can neither ship in place of a failed build nor stand for a new one.
"""

from __future__ import annotations

import glob
import os
import sys
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

BUILD_ENV = "GUARD_LIB_BUILD"
LINETRACE_ENV = "GUARD_LIB_LINETRACE"
PACKAGE = "guard_lib"
CORE = f"{PACKAGE}._core"
# One note per interpreter: an editable checkout serves several Pythons from one folder.
NOTE = f"_core_not_built.{sys.implementation.cache_tag}.txt"
SKIPPED, FAILED = "skipped", "failed"

# Why the core is left out, where that is known before any build command runs: (kind, why).
_left_out: tuple[str, str] | None = None


def _warn_once(why: str) -> None:
    sys.stderr.write(
        f"warning: guard_lib's compiled core was not built ({why}); "
        "guard_lib installs with its Python implementation\n"
    )


def _shorter(why: str, limit: int = 240) -> str:
    # A failed compiler's error quotes its whole command line: its start and its exit status say enough.
    return why if len(why) <= limit else f"{why[: limit - 60]} ... {why[-50:]}"


def _settle(folder: str, binaries: list[str], note: tuple[str, str] | None) -> None:
    """Remove ``binaries`` from ``folder`` and write ``note`` there (or remove a stale one)."""
    for binary in binaries:
        path = os.path.join(folder, binary)
        if os.path.lexists(path):
            os.remove(path)
    path = os.path.join(folder, NOTE)
    if note is None:
        if os.path.lexists(path):
            os.remove(path)
        return
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as file:
        file.write(f"{note[0]}\n{note[1]}\n")


def _this_core() -> str:
    """The file name of this interpreter's core."""
    import sysconfig  # noqa: PLC0415

    return f"_core{sysconfig.get_config_var('EXT_SUFFIX')}"


def _is_binary(path: str) -> bool:
    return path.endswith((".so", ".pyd", ".dylib"))


class NotedBuildPy(build_py):
    """Copies the package, less any core binary a previous build left; notes a core left out at configure."""

    def run(self) -> None:
        super().run()
        built = os.path.join(self.build_lib, PACKAGE)
        # Whatever core is here now is stale: build_ext, which runs next, writes this build's own.
        stale = [os.path.basename(p) for p in glob.glob(os.path.join(built, "_core*")) if _is_binary(p)]
        _settle(built, stale, _left_out)
        if self.editable_mode and _left_out is not None:
            # build_ext does not run without an extension, so the checkout's own is settled here.
            _settle(self.get_package_dir(PACKAGE), [_this_core()], _left_out)


class OptionalBuildExt(build_ext):
    """A failed build of the core leaves the Python implementation in place, unless the core is required."""

    def run(self) -> None:
        folders = self._folders()
        # Removed first, so that nothing but this build can put a core here: without a target the build
        # compiles afresh, and a failed build leaves no binary behind to be shipped or imported.
        for folder in folders:
            _settle(folder, [_this_core()], _left_out)
        if _left_out is not None:
            return
        try:
            super().run()
        except Exception as error:
            if os.environ.get(BUILD_ENV) == "compiled":
                raise
            why = _shorter(f"{type(error).__name__}: {error}")
            _warn_once(why)
            note = (FAILED, f"its build failed ({why}); pip install -v shows the compiler's output")
            for folder in folders:
                _settle(folder, [], note)

    def _folders(self) -> list[str]:
        """Where this build's core goes: the build folder, and the checkout for an in-place build."""
        folders = [os.path.join(self.build_lib, PACKAGE)]
        if self.inplace or self.editable_mode:
            folders.append(self.get_finalized_command("build_py").get_package_dir(PACKAGE))
        return folders


def _extensions() -> list[Any]:
    global _left_out
    wanted = os.environ.get(BUILD_ENV, "auto")
    if wanted == "python":
        _left_out = (SKIPPED, f"{BUILD_ENV}=python at install")
        return []
    try:
        from Cython.Build import cythonize  # noqa: PLC0415 (optional: without it, no core)
    except ImportError as error:
        if wanted == "compiled":
            raise
        why = f"Cython is not installed: {error}"
        _warn_once(why)
        _left_out = (FAILED, why)
        return []
    # CFLAGS that set an optimisation level win: the critical harness builds mutants with -O0, for speed.
    optimise = [] if "-O" in os.environ.get("CFLAGS", "") else ["-O2"]
    # GUARD_LIB_LINETRACE=1: a core that reports its lines to tracers, so that coverage can tell which
    # tests reach each of them (the mutation sweep's map). Slower, and interruptible where the shipped
    # core is not: never for a release.
    traced = os.environ.get(LINETRACE_ENV) == "1"
    core = Extension(
        CORE,
        ["guard_lib/_core.pyx"],
        extra_compile_args=optimise,
        define_macros=[("CYTHON_TRACE", "1")] if traced else [],
    )
    try:
        if traced:
            # Translated afresh, and kept apart: a traced translation must never stand in for the release's.
            return list(
                cythonize(
                    [core],
                    language_level=3,
                    quiet=True,
                    compiler_directives={"linetrace": True},
                    build_dir=os.path.join("build", "linetrace"),
                    force=True,
                )
            )
        return list(cythonize([core], language_level=3, quiet=True))
    except Exception as error:
        if wanted == "compiled":
            raise
        why = f"Cython could not translate guard_lib/_core.pyx: {error}"
        _warn_once(why)
        _left_out = (FAILED, why)
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt, "build_py": NotedBuildPy})

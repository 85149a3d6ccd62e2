"""The install README describes, as setup.py carries it out: only this build decides what is installed.

Each test builds a copy of the package with ``setup.py``. A compiler that fails at once (``CC=false``)
stands for a machine that cannot build the core; a binary and a note planted beforehand stand for what an
earlier build left in ``build/`` or in place.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = f"_core{sysconfig.get_config_var('EXT_SUFFIX')}"
NOTE = f"_core_not_built.{sys.implementation.cache_tag}.txt"
# Where setuptools builds a package with an extension for this interpreter, and one without.
PLATFORM_LIB = Path("build", f"lib.{sysconfig.get_platform()}-{sys.implementation.cache_tag}", "guard_lib")
PURE_LIB = Path("build", "lib", "guard_lib")
TEMP = Path("build", f"temp.{sysconfig.get_platform()}-{sys.implementation.cache_tag}")
ELF = b"\x7fELF"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The package's sources, without any binary or note of this checkout's own builds."""
    where = tmp_path / "project"
    (where / "guard_lib").mkdir(parents=True)
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, where / name)
    for source in (ROOT / "guard_lib").iterdir():
        if source.suffix in {".py", ".pyx", ".pyi", ".typed"}:
            shutil.copy2(source, where / "guard_lib" / source.name)
    translated = ROOT / "guard_lib" / "_core.c"
    if translated.is_file():
        # Newer than its source, so Cython leaves it as it is: these tests are about the build, not Cython.
        shutil.copy(translated, where / "guard_lib" / "_core.c")
    return where


def _setup(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in {"GUARD_LIB_BUILD", "CC"}}
    environment["CFLAGS"] = "-O0"  # the C is the same at any level; without optimisation it builds sooner
    environment.update(env)
    return subprocess.run(
        [sys.executable, "setup.py", "-q", *args],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )


def _plant(folder: Path, name: str, content: bytes = b"left by an earlier build") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(content)
    return path


def _binaries(project: Path) -> list[str]:
    return sorted(p.relative_to(project).as_posix() for p in project.rglob("_core*.so"))


def test_a_failed_build_ships_no_earlier_core_and_notes_why(project: Path) -> None:
    _plant(project / PLATFORM_LIB, CORE)
    done = _setup(project, "build", CC="false")
    assert done.returncode == 0, done.stderr
    assert "warning: guard_lib's compiled core was not built (CompileError: " in done.stderr
    assert _binaries(project) == []
    kind, why = (project / PLATFORM_LIB / NOTE).read_text(encoding="utf-8").splitlines()
    assert kind == "failed"
    assert why.startswith("its build failed (CompileError: ")
    assert why.endswith("; pip install -v shows the compiler's output")
    assert len(why) < 320  # the compiler's whole command line is cut to its start and its end


def test_a_python_build_ships_no_earlier_core_and_notes_the_choice(project: Path) -> None:
    _plant(project / PURE_LIB, CORE)
    done = _setup(project, "build", GUARD_LIB_BUILD="python")
    assert done.returncode == 0, done.stderr
    assert _binaries(project) == []
    note = (project / PURE_LIB / NOTE).read_text(encoding="utf-8")
    assert note == "skipped\nGUARD_LIB_BUILD=python at install\n"


def test_an_earlier_core_newer_than_its_source_is_built_again(project: Path) -> None:
    stale = _plant(project / PLATFORM_LIB, CORE)
    _plant(project / TEMP / "guard_lib", "_core.o")
    _plant(project / PLATFORM_LIB, NOTE, b"failed\nan earlier build's\n")
    done = _setup(project, "build")
    assert done.returncode == 0, done.stderr
    assert stale.read_bytes().startswith(ELF)
    assert not (project / PLATFORM_LIB / NOTE).exists()


def test_an_in_place_build_settles_only_this_interpreters_core(project: Path) -> None:
    package = project / "guard_lib"
    stale = _plant(package, CORE)
    other = _plant(package, "_core.cpython-399-x86_64-linux-gnu.so")  # another Python's, in the same checkout
    failed = _setup(project, "build_ext", "--inplace", CC="false")
    assert failed.returncode == 0, failed.stderr
    assert not stale.exists()
    assert other.exists()
    assert (package / NOTE).read_text(encoding="utf-8").startswith("failed\nits build failed (CompileError: ")
    built = _setup(project, "build_ext", "--inplace")
    assert built.returncode == 0, built.stderr
    assert stale.read_bytes().startswith(ELF)
    assert not (package / NOTE).exists()
    assert other.exists()


def test_a_required_core_that_fails_to_build_fails_the_install(project: Path) -> None:
    done = _setup(project, "build", CC="false", GUARD_LIB_BUILD="compiled")
    assert done.returncode != 0
    assert "returned non-zero exit status" in done.stderr.splitlines()[-1]
    assert "was not built" not in done.stderr
    assert _binaries(project) == []


def test_the_sdist_ships_what_its_tests_need_and_no_build_output(project: Path) -> None:
    shutil.copy2(ROOT / "MANIFEST.in", project / "MANIFEST.in")
    for source in [*(ROOT / "tests").glob("*.py"), *(ROOT / "tests" / "behaviour").glob("*.py")]:
        copy = project / source.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, copy)
    _plant(project / "guard_lib", CORE)
    _plant(project / "guard_lib", NOTE)
    done = _setup(project, "sdist", "--dist-dir", "dist")
    assert done.returncode == 0, done.stderr
    (archive,) = (project / "dist").glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    shipped_tests = {name for name in names if name.startswith("tests/") and name.endswith(".py")}
    expected = {f"tests/{p.name}" for p in (ROOT / "tests").glob("test_*.py")}
    expected |= {f"tests/behaviour/{p.name}" for p in (ROOT / "tests" / "behaviour").glob("*.py")}
    assert shipped_tests == expected | {"tests/conftest.py"}
    assert {"setup.py", "pyproject.toml", "guard_lib/_core.pyx"} <= names
    assert not [name for name in names if name.endswith(".so") or "_core_not_built" in name]

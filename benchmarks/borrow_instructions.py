#!/usr/bin/env python3
"""What one borrow costs the compiled core, in instructions counted by callgrind: no timing, so CI can hold
a ceiling and a change that slows the core fails.

The runtime is ``CudaRuntime``, offering C entry points that read and write a thread-local int (compiled
here with ``cc``) in place of CUDA's, so the count is the core's own and the interpreter's. Each case runs
under callgrind twice, for N and 2N borrows; the difference, over N, is one borrow with its loop (start-up
cancels out).

    python benchmarks/borrow_instructions.py                 # print each case's instructions per borrow
    python benchmarks/borrow_instructions.py --check         # exit 1 where a case is over its ceiling
    python benchmarks/borrow_instructions.py --references    # also minimal_guard.pyx's guards, the floors

The references (built with Cython) are what the ``with`` statement costs with plain methods and no checks,
and that plus only the cheapest form of the checks the core may not drop: a floor under the core's cost.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# Per borrow, loop included, on CPython 3.11 x86_64 (measured 2,742 and 3,881): about a tenth of headroom.
CEILINGS = {(3, 11): {"device": 3000, "create": 4250}}
CASES = ("device", "create")
REFERENCES = ("minimal", "checked device", "checked create")  # minimal_guard.pyx's guards
FAKE_CUDA = """
static __thread int current = 0;
int get_device(int *out) { *out = current; return 0; }
int set_device(int index) { current = index; return 0; }
"""


def _capsules(library: Path) -> tuple[object, object]:
    lib = ctypes.CDLL(str(library))
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    get, set_ = (ctypes.cast(f, ctypes.c_void_p) for f in (lib.get_device, lib.set_device))
    return new(get, b"cudaError_t (int *)", None), new(set_, b"cudaError_t (int)", None)


def reference_guards(build: Path | None = None) -> Any:
    """``minimal_guard.pyx``, built by pyximport into ``build`` (default: its own folder in the home)."""
    import pyximport  # type: ignore[import-untyped]

    pyximport.install(language_level=3, build_dir=None if build is None else str(build))
    sys.path.insert(0, str(Path(__file__).parent))
    import minimal_guard  # type: ignore[import-not-found]

    return minimal_guard


def borrow(case: str, borrows: int, library: Path) -> None:
    """The child: ``borrows`` borrows of device 0 (already current) on the C entry-point runtime."""
    from guard_lib import _core  # the core alone, whatever guard_lib exports
    from guard_lib import runtime as runtime_module
    from guard_lib.runtime import CudaRuntime, use_runtime

    capsules = _capsules(library)

    class Runtime(CudaRuntime):  # CUDA's own runtime, offering these entry points rather than the driver's
        __slots__ = ()

        def c_entry_points(self) -> tuple[object, object]:
            return capsules

    runtime = Runtime()
    use_runtime(runtime)
    device, create = _core.device, _core.DeviceGuard.create
    if case in REFERENCES:
        guards = reference_guards(library.parent / "build")
        guards.bind(capsules, vars(runtime_module), runtime)
        device = guards.MinimalGuard if case == "minimal" else guards.CheckedDevice
        create = guards.CheckedGuard.create
    for n in (1000, borrows):  # the first learns the runtime's entry points and fills the caches
        if not case.endswith("create"):
            for _ in range(n):
                with device(0):
                    pass
        else:
            for _ in range(n):
                with create(0).unwrap():
                    pass


def instructions(case: str, borrows: int, library: Path, folder: Path) -> int:
    out = folder / f"{case}.{borrows}.out"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        __file__,
        "--child",
        case,
        str(borrows),
        str(library),
    ]
    run = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode or not found:
        raise SystemExit(f"borrow_instructions: {case} under callgrind failed:\n{run.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 where a case is over its ceiling")
    parser.add_argument("--borrows", type=int, default=5000, help="N: each case runs N and 2N (default 5000)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--references", action="store_true", help="also count minimal_guard.pyx's guards (needs Cython)"
    )
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        borrow(args.child[0], int(args.child[1]), Path(args.child[2]))
        return 0
    ceilings = CEILINGS.get(sys.version_info[:2])
    if args.borrows < 1:
        parser.error(f"--borrows must be at least 1, not {args.borrows}")
    if args.check and ceilings is None:
        version = f"{sys.version_info[0]}.{sys.version_info[1]}"
        parser.error(f"--check: no ceilings for Python {version}; they are CI's Python's, 3.11")
    for tool in ("valgrind", "cc"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not on PATH: install it (Debian: apt-get install valgrind gcc)")
    if args.references:
        try:
            import Cython  # noqa: F401  # type: ignore[import-untyped]
        except ImportError:
            parser.error("--references builds minimal_guard.pyx, which needs Cython: pip install cython")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        source, library = folder / "fake_cuda.c", folder / "libfake_cuda.so"
        source.write_text(FAKE_CUDA)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
        if args.references:
            reference_guards(folder / "build")  # built once, here: a build counted in a child would be noise
        figures = {}
        for case in CASES + (REFERENCES if args.references else ()):
            once, twice = (instructions(case, n, library, folder) for n in (args.borrows, 2 * args.borrows))
            figures[case] = round((twice - once) / args.borrows)
    held = ceilings if args.check and ceilings else {}
    over = {case: cost for case, cost in figures.items() if cost > held.get(case, cost)}
    for case, cost in figures.items():
        limit = f" (ceiling {ceilings[case]})" if ceilings and case in ceilings else ""
        print(f"{case}: {cost} instructions per borrow{limit}{'  OVER' if case in over else ''}")
    if args.json:
        machine = f"{platform.machine()}, {os.cpu_count()} cores, CPython {platform.python_version()}"
        cases = {
            case: {"instructions": cost, "ceiling": (ceilings or {}).get(case)}
            for case, cost in figures.items()
        }
        args.json.write_text(
            json.dumps({"machine": machine, "borrows": args.borrows, "cases": cases}, indent=2) + "\n"
        )
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark: what borrowing a device costs, per enter+exit, against the floor of the raw calls.

Both implementations (the compiled core and the Python reference) and every case run in this one
process, interleaved round by round, so the ratios compare like with like.
The floor is what a backend would write by hand over the same runtime: read the device, switch if
needed, and switch back in a ``finally``. Each figure is the median over rounds of the best of a few
timed loops, minus the cost of an empty loop.

    python benchmarks/bench_guard.py                      # simulated runtime, already-current device
    python benchmarks/bench_guard.py --runtime cuda       # real runtime, plus torch / CuPy / cuda.core
    python benchmarks/bench_guard.py --path switch        # 0 -> 1 -> 0 (needs two devices)

The runtime measured is the process's default while the cases run, so ``guard_lib.device(i)`` is timed as
a backend writes it; the ``(runtime=)`` cases pass it explicitly. Where the runtime offers C entry points
and Cython can build ``minimal_guard.pyx``, two reference guards are timed too: a minimal compiled one (the
``with`` statement with plain methods and two C calls, no seam, no ownership, no errors), and the same plus
the cheapest form of the checks the core may not drop (the default runtime read, its methods compared, the
owning thread's token), a floor under any guard that makes them.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from borrow_instructions import reference_guards

import guard_lib
from guard_lib.runtime import CudaRuntime, DeviceRuntime, SimulatedRuntime, use_runtime

Loop = Callable[[int], None]

# Each implementation's cases carry its name: "guard_lib.device [compiled]", "... [python]".
DEVICE, CREATE = "guard_lib.device", "DeviceGuard.create+with"
COMPILED, PYTHON = " [compiled]", " [python]"
EXPLICIT = " (runtime=)"
MINIMAL = "(reference) minimal compiled guard"
CHECKED = "(reference) minimal guard + the core's checks"
CHECKED_CREATE = "(reference) its create+with"

# (case, compared with, at most this many times its cost), per runtime and path.
GOALS: dict[tuple[str, str], list[tuple[str, str, float]]] = {
    ("simulated", "same"): [
        (DEVICE + COMPILED, DEVICE + PYTHON, 1.0),
        (CREATE + COMPILED, CREATE + PYTHON, 1.0),
    ],
    ("simulated", "switch"): [
        (DEVICE + COMPILED, DEVICE + PYTHON, 1.0),
        (CREATE + COMPILED, CREATE + PYTHON, 1.0),
    ],
    ("cuda", "same"): [
        (DEVICE + COMPILED, "torch.cuda.device", 0.3),
        (DEVICE + COMPILED, "cupy.cuda.Device", 0.5),
        (DEVICE + COMPILED, "floor", 1.15),
        (CREATE + COMPILED, "torch.cuda.device", 0.3),
    ],
    ("cuda", "switch"): [
        (DEVICE + COMPILED, "floor", 1.25),
        (CREATE + COMPILED, "floor", 1.25),
        (DEVICE + COMPILED, "torch.cuda.device", 1.0),
        (DEVICE + COMPILED, "cupy.cuda.Device", 1.0),
    ],
}


def implementations() -> dict[str, Any]:
    """Both implementations, side by side in this process, whichever one ``guard_lib`` exports."""
    from guard_lib import device_guard

    found: dict[str, Any] = {}
    try:
        from guard_lib import _core

        found[COMPILED] = _core
    except ImportError:
        print("bench_guard: the compiled core is not built; measuring the Python one alone", file=sys.stderr)
    found[PYTHON] = device_guard
    return found


def floor_loop(rt: DeviceRuntime, target: int) -> Loop:
    get_device, set_device = rt.get_device, rt.set_device

    def run(n: int) -> None:
        for _ in range(n):
            _code, previous = get_device()
            if previous != target:
                set_device(target)
            try:
                pass
            finally:
                if previous != target:
                    set_device(previous)

    return run


def with_loop(borrow: Callable[[int], Any], target: int) -> Loop:
    """``with borrow(target): pass``, n times."""

    def run(n: int) -> None:
        for _ in range(n):
            with borrow(target):
                pass

    return run


def device_runtime_loop(impl: Any, rt: DeviceRuntime, target: int) -> Loop:
    borrow = impl.device

    def run(n: int) -> None:
        for _ in range(n):
            with borrow(target, runtime=rt):
                pass

    return run


def create_loop(create: Callable[[int], Any], target: int) -> Loop:
    """``with create(target).unwrap(): pass``, n times."""

    def run(n: int) -> None:
        for _ in range(n):
            with create(target).unwrap():
                pass

    return run


def create_runtime_loop(impl: Any, rt: DeviceRuntime, target: int) -> Loop:
    create = impl.DeviceGuard.create

    def run(n: int) -> None:
        for _ in range(n):
            with create(target, runtime=rt).unwrap():
                pass

    return run


def minimal_loops(rt: DeviceRuntime, target: int) -> dict[str, Loop]:
    """The two reference compiled guards over ``rt``'s C entry points, where they can be had."""
    offer = getattr(rt, "c_entry_points", None)
    capsules = offer() if offer is not None else None
    if capsules is None:
        return {}
    try:
        minimal_guard = reference_guards()
    except Exception as error:  # any failure to build only drops this reference case
        print(f"bench_guard: the minimal compiled guards are not measured ({error})", file=sys.stderr)
        return {}
    from guard_lib import runtime as runtime_module

    minimal_guard.bind(capsules, vars(runtime_module), rt)

    return {
        MINIMAL: with_loop(minimal_guard.MinimalGuard, target),
        CHECKED: with_loop(minimal_guard.CheckedDevice, target),
        CHECKED_CREATE: create_loop(minimal_guard.CheckedGuard.create, target),
    }


def empty_loop(n: int) -> None:
    for _ in range(n):
        pass


class _NothingGuard:
    """The cheapest context manager Python allows: construction, __enter__ and __exit__ doing nothing."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __enter__(self) -> _NothingGuard:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass


def foreign_loops(target: int) -> dict[str, Loop]:
    """The other libraries' own ways of borrowing a device, where they import."""
    loops: dict[str, Loop] = {}
    try:
        import torch

        if torch.cuda.is_available():
            torch_device = torch.cuda.device

            def torch_run(n: int) -> None:
                for _ in range(n):
                    with torch_device(target):
                        pass

            loops["torch.cuda.device"] = torch_run
    except ImportError:
        pass
    try:
        import cupy

        cupy_device = cupy.cuda.Device

        def cupy_run(n: int) -> None:
            for _ in range(n):
                with cupy_device(target):
                    pass

        loops["cupy.cuda.Device"] = cupy_run
    except ImportError:
        pass
    try:
        from cuda.core import Device as CoreDevice
    except ImportError:
        try:
            from cuda.core.experimental import Device as CoreDevice
        except ImportError:
            return loops
    core_target, core_home = CoreDevice(target), CoreDevice(0)

    def core_run(n: int) -> None:
        # cuda.core has no borrow-and-restore; this is its set_current there and back.
        for _ in range(n):
            core_target.set_current()
            core_home.set_current()

    loops["cuda.core Device.set_current"] = core_run
    return loops


def measure(loops: dict[str, Loop], iterations: int, rounds: int) -> dict[str, float]:
    """ns per iteration: for each round, every case in turn, best of three; the median over rounds."""
    samples: dict[str, list[float]] = {name: [] for name in loops}
    baseline: list[float] = []
    for _ in range(rounds):
        for name, loop in [("(empty)", empty_loop), *loops.items()]:
            best = min(_time(loop, iterations) for _ in range(3))
            (baseline if name == "(empty)" else samples[name]).append(best)
    empty = statistics.median(baseline)
    return {name: max(statistics.median(s) - empty, 0.0) for name, s in samples.items()}


def _time(loop: Loop, iterations: int) -> float:
    start = time.perf_counter_ns()
    loop(iterations)
    return (time.perf_counter_ns() - start) / iterations


def profile(loops: dict[str, Loop], case: str, iterations: int) -> int:
    """cProfile one case, to see where its time goes beyond the floor."""
    import cProfile
    import pstats

    if case not in loops:
        print(f"bench_guard: --profile {case!r}: expected one of {', '.join(loops)}", file=sys.stderr)
        return 2
    profiler = cProfile.Profile()
    profiler.runcall(loops[case], iterations)
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(12)
    return 0


def make_runtime(name: str) -> DeviceRuntime:
    if name == "simulated":
        return SimulatedRuntime(device_count=2)
    rt = CudaRuntime()
    code, _count = rt.get_device_count()
    if code:
        raise SystemExit(f"bench_guard: --runtime cuda: {rt.error_name(code)}: no usable CUDA device here")
    return rt


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
    }
    try:
        import torch

        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
            info["torch"] = torch.__version__
    except ImportError:
        pass
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runtime", choices=["simulated", "cuda"], default="simulated")
    parser.add_argument(
        "--path", choices=["same", "switch"], default="same", help="already-current or 0->1->0"
    )
    parser.add_argument("--iterations", type=int, default=20_000, help="iterations per timed loop")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds; the median is reported")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument("--profile", metavar="CASE", help="cProfile one case instead of timing all")
    args = parser.parse_args(argv)
    if args.iterations < 1 or args.rounds < 1:
        parser.error("--iterations and --rounds must be >= 1")

    rt = make_runtime(args.runtime)
    target = 1 if args.path == "switch" else 0
    if args.path == "switch":
        code, count = rt.get_device_count()
        if code or count < 2:
            print("bench_guard: --path switch needs two devices", file=sys.stderr)
            return 2
    rt.set_device(0)
    loops: dict[str, Loop] = {"floor": floor_loop(rt, target)}
    for suffix, impl in implementations().items():
        loops[DEVICE + suffix] = with_loop(impl.device, target)
        loops[DEVICE + suffix + EXPLICIT] = device_runtime_loop(impl, rt, target)
        loops[CREATE + suffix] = create_loop(impl.DeviceGuard.create, target)
        loops[CREATE + suffix + EXPLICIT] = create_runtime_loop(impl, rt, target)
    if args.runtime == "cuda":
        loops.update(foreign_loops(target))
    # Not guards: the cost of any pure-Python `with` block, the part no Python guard can shed, and of
    # a compiled guard with plain methods that does nothing but its two C calls, and of one that adds only
    # the checks the core may not drop.
    loops["(reference) empty Python with-block"] = with_loop(_NothingGuard, target)
    loops.update(minimal_loops(rt, target))
    with use_runtime(rt):
        if args.profile:
            return profile(loops, args.profile, args.iterations)
        ns = measure(loops, args.iterations, args.rounds)
    floor = ns["floor"] or 1e-9

    print(
        f"runtime={args.runtime} path={args.path} ({'0 -> 1 -> 0' if target else 'device 0 already current'})"
    )
    print(f"{'case':48} {'ns/op':>9} {'x floor':>8}")
    for name, value in ns.items():
        print(f"{name:48} {value:9.1f} {value / floor:8.2f}")

    goals = []
    for case, other, limit in GOALS[(args.runtime, args.path)]:
        if case in ns and other in ns:
            ratio = ns[case] / (ns[other] or 1e-9)
            goals.append(
                {"case": case, "versus": other, "ratio": ratio, "limit": limit, "met": ratio <= limit}
            )
    print()
    for goal in goals:
        verdict = "met" if goal["met"] else "MISSED"
        print(f"goal: {goal['case']} <= {goal['limit']} x {goal['versus']}: {goal['ratio']:.2f} {verdict}")
    if args.json:
        report = {
            "runtime": args.runtime,
            "path": args.path,
            "iterations": args.iterations,
            "rounds": args.rounds,
            "ns_per_op": ns,
            "ratio_to_floor": {name: value / floor for name, value in ns.items()},
            "goals": goals,
            "machine": machine(),
            "default_implementation": guard_lib.IMPLEMENTATION,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 1 if args.check and not all(goal["met"] for goal in goals) else 0


if __name__ == "__main__":
    sys.exit(main())

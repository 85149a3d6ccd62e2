#!/usr/bin/env python3
"""Soak benchmark: many borrows per scenario, and what each leaves behind in memory and objects.

Each implementation runs in a process of its own (``GUARD_LIB_IMPL`` is read once, at import). In each,
every scenario first warms up (freelists and caches fill), then the collector runs and the process's
allocated blocks, tracked objects and resident memory are read; then the scenario runs ``--borrows``
times, the collector runs again and the same three are read. A leak of one object per borrow shows as
growth of about ``--borrows`` blocks; what guard_lib keeps for good (a cache, a freelist) does not grow
with the count.

    python benchmarks/soak.py                         # a million borrows per scenario, both implementations
    python benchmarks/soak.py --borrows 20000 --check # CI's short run: exit 1 if any scenario grows

Exit status: 0 done (with ``--check``: nothing grew), 1 a scenario grew past ``--limit`` blocks, 2 bad input.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

IMPLEMENTATIONS = ("compiled", "python")
WARM_UP = 2_000
BATCH = 1_000
DEFAULT_LIMIT = 200
SCENARIOS = ("plain", "failed switch", "raising body", "nested", "decorator", "take", "subclass with a cycle")


@dataclass(frozen=True)
class Reading:
    """One scenario's growth over its borrows, in one implementation."""

    implementation: str
    scenario: str
    borrows: int
    seconds: float
    blocks: int
    objects: int
    rss_kib: int


def _rss_kib() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except OSError:
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def _scenarios() -> dict[str, Callable[[], None]]:
    """Each scenario is one borrow (or one nest of them) that ends with the caller's device back."""
    import guard_lib  # in the child, after GUARD_LIB_IMPL is set
    from guard_lib import DeviceGuard, GuardError, device
    from guard_lib.cuda_errors import INVALID_DEVICE
    from guard_lib.runtime import SimulatedRuntime

    rt = SimulatedRuntime(device_count=4)

    def plain() -> None:
        with device(1, runtime=rt):
            pass

    def failed_switch() -> None:
        rt.fail_next("set_device", INVALID_DEVICE, moves_to=2)
        try:
            with device(1, runtime=rt):
                pass
        except GuardError:
            pass

    def raising_body() -> None:
        try:
            with device(1, runtime=rt):
                raise ValueError("body")
        except ValueError:
            pass

    def nested() -> None:
        with device(1, runtime=rt), device(2, runtime=rt), device(1, runtime=rt):
            pass

    @device(1, runtime=rt)
    def decorated() -> None:
        pass

    def take() -> None:
        guard = DeviceGuard.create(1, runtime=rt).unwrap()
        with guard.take():
            pass

    class KeepsItsExit(device):
        """A subclass that keeps its own bound ``__exit__``: every borrow is a reference cycle."""

        def __init__(self, index: int) -> None:
            super().__init__(index, runtime=rt)
            self.cleanup = self.__exit__

    def subclass_with_a_cycle() -> None:
        with KeepsItsExit(1):
            pass

    found = dict(
        zip(
            SCENARIOS,
            (plain, failed_switch, raising_body, nested, decorated, take, subclass_with_a_cycle),
            strict=True,
        )
    )

    def logged(scenario: Callable[[], None]) -> Callable[[], None]:
        # The simulated runtime logs every call; its log is emptied per batch so that only guard_lib grows.
        def run() -> None:
            for _ in range(BATCH):
                scenario()
            rt.calls.clear()

        return run

    assert guard_lib.IMPLEMENTATION in IMPLEMENTATIONS
    return {name: logged(scenario) for name, scenario in found.items()}


def _measure(borrows: int, only: Sequence[str]) -> list[Reading]:
    import guard_lib

    scenarios = {name: batch for name, batch in _scenarios().items() if not only or name in only}
    # Every scenario warms up before any is measured: what the first borrow of a kind allocates for good
    # (a cache, a freelist, an interned string) is no growth.
    for batch in scenarios.values():
        for _ in range(max(1, WARM_UP // BATCH)):
            batch()
    readings = []
    for name, batch in scenarios.items():
        gc.collect()
        blocks, objects, rss = sys.getallocatedblocks(), len(gc.get_objects()), _rss_kib()
        started = time.perf_counter()
        for _ in range(max(1, borrows // BATCH)):
            batch()
        seconds = time.perf_counter() - started
        gc.collect()
        readings.append(
            Reading(
                implementation=guard_lib.IMPLEMENTATION,
                scenario=name,
                borrows=max(1, borrows // BATCH) * BATCH,
                seconds=round(seconds, 3),
                blocks=sys.getallocatedblocks() - blocks,
                objects=len(gc.get_objects()) - objects,
                rss_kib=_rss_kib() - rss,
            )
        )
    return readings


def _run_child(implementation: str, borrows: int, only: Sequence[str]) -> list[Reading]:
    command = [sys.executable, __file__, "--child", "--borrows", str(borrows)]
    for name in only:
        command += ["--scenario", name]
    env = {**os.environ, "GUARD_LIB_IMPL": implementation}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        why = done.stderr.strip()
        raise RuntimeError(f"the {implementation} run failed (exit {done.returncode}):\n{why}")
    return [Reading(**row) for row in json.loads(done.stdout)]


def _table(readings: Sequence[Reading], limit: int) -> str:
    head = (
        f"{'implementation':<15}{'scenario':<24}{'borrows':>10}{'seconds':>9}"
        f"{'blocks':>9}{'objects':>9}{'RSS KiB':>9}"
    )
    rows = [head, "-" * len(head)]
    for r in readings:
        flag = "  GREW" if r.blocks > limit else ""
        rows.append(
            f"{r.implementation:<15}{r.scenario:<24}{r.borrows:>10}{r.seconds:>9.2f}"
            f"{r.blocks:>9}{r.objects:>9}{r.rss_kib:>9}{flag}"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--borrows", type=int, default=1_000_000, help="borrows per scenario (default 1e6)")
    parser.add_argument("--impl", choices=(*IMPLEMENTATIONS, "both"), default="both")
    parser.add_argument("--scenario", action="append", default=[], help="run only this scenario (repeatable)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a scenario grew past --limit blocks")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="blocks a scenario may grow by")
    parser.add_argument("--json", type=Path, help="also write the readings here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.borrows < BATCH:
        parser.error(f"--borrows must be at least {BATCH}, got {args.borrows}")
    unknown = sorted(set(args.scenario) - set(SCENARIOS))
    if unknown:
        named = ", ".join(map(repr, unknown))
        parser.error(f"no scenario is named {named}: choose from {', '.join(SCENARIOS)}")
    if args.child:
        sys.stdout.write(json.dumps([asdict(r) for r in _measure(args.borrows, args.scenario)]))
        return 0
    wanted = IMPLEMENTATIONS if args.impl == "both" else (args.impl,)
    try:
        readings = [r for impl in wanted for r in _run_child(impl, args.borrows, args.scenario)]
    except RuntimeError as error:
        sys.stderr.write(f"soak: {error}\n")
        return 2
    print(f"soak on {platform.node()} ({platform.machine()}, Python {platform.python_version()})")
    print(_table(readings, args.limit))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([asdict(r) for r in readings], indent=2) + "\n", encoding="utf-8")
    grew = [r for r in readings if r.blocks > args.limit]
    if args.check and grew:
        for r in grew:
            print(f"soak: {r.implementation} / {r.scenario} grew by {r.blocks} blocks in {r.borrows} borrows")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

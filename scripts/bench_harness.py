#!/usr/bin/env python3
"""Benchmark the critical-mutant harness, side by side in one invocation on one machine.

The catalogue has two parts: mutants of the Python reference, whose tests run on it
(``GUARD_LIB_IMPL=python``), and mutants of the compiled core, whose tests run on the compiled
implementation (warm, on one woven build of them all; cold, each on a rebuild of its own). For each
part, unmutated, one clean pytest run of every test its mutants name in ``killed_by``, on that
implementation. Then:

1. the harness over the Python part with the warm engine (its time per mutant judged warm, and the part
   against its clean run);
2. the harness over the whole catalogue with the warm engine, then with the cold one (both against the
   two clean runs together, and whether both engines give every mutant the same verdict);
3. with ``--mutmut``, mutmut over guard_lib (``mutation_run.py run``), for its time per mutant.

    python scripts/bench_harness.py [--jobs N] [--mutmut] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PARTS = {"python": ".py", "compiled": ".pyx"}


def _run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[int, float]:
    start = time.perf_counter()
    done = subprocess.run(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return done.returncode, time.perf_counter() - start


def _clean(mutants: list[dict[str, Any]], impl: str, pytest_args: list[str]) -> dict[str, Any]:
    tests = sorted({test for mutant in mutants for test in mutant.get("killed_by", [])})
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args, *tests]
    code, seconds = _run(cmd, {**os.environ, "GUARD_LIB_IMPL": impl})
    return {"tests": len(tests), "exit": code, "wall_s": round(seconds, 2)}


def _harness(config: Path, engine: str, jobs: int | None, only: list[str], report: Path) -> dict[str, Any]:
    cmd = [sys.executable, str(ROOT / "scripts" / "critical_mutants.py"), "--config", str(config), "run"]
    cmd += ["--engine", engine, "--json", str(report), *(["--jobs", str(jobs)] if jobs else [])]
    cmd += [arg for mutant_id in only for arg in ("--only", mutant_id)]
    code, seconds = _run(cmd)
    data = json.loads(report.read_text()) if report.exists() else {"mutants": [], "totals": {}}
    warm = [m["seconds"] for m in data["mutants"] if m.get("engine") == "warm"]
    count = len(data["mutants"])
    return {
        "exit": code,
        "wall_s": round(seconds, 2),
        "verdicts": data["totals"],
        "judged_warm": len(warm),
        # each warm mutant's own time, from its job's start to its verdict (jobs run side by side)
        "s_per_warm_mutant": round(sum(warm) / len(warm), 3) if warm else None,
        # the whole run's wall time (baseline and start-up included) over its mutants, as mutmut's is taken
        "wall_s_per_mutant": round(seconds / count, 3) if count else None,
        "by_mutant": {m["id"]: m["verdict"] for m in data["mutants"]},
    }


def _mutmut(tmp: Path) -> dict[str, Any]:
    # no verdicts cached from an earlier run: every mutant is run and timed
    shutil.rmtree(ROOT / "mutants", ignore_errors=True)
    out = tmp / "mutmut.json"
    script = str(ROOT / "scripts" / "mutation_run.py")
    code, seconds = _run([sys.executable, script, "run", "--out", str(out)])
    count = len(json.loads(out.read_text())["mutants"]) if out.exists() else 0
    each = round(seconds / count, 3) if count else None
    return {"exit": code, "wall_s": round(seconds, 2), "mutants": count, "s_per_mutant": each}


def _print(figures: dict[str, Any]) -> None:
    print(f"machine: {figures['machine']}")
    for part, clean in figures["clean"].items():
        print(
            f"clean run, {part} part: {figures['mutants'][part]} mutants, {clean['tests']} killed_by tests "
            f"on the {part} implementation: {clean['wall_s']:.1f} s (exit {clean['exit']})"
        )
    python = figures["python_part_warm"]
    print(
        f"harness, warm, python part: {python['wall_s']:.1f} s = {figures['python_part_over_clean']} x its "
        f"clean run; {python['judged_warm']} judged warm at {python['s_per_warm_mutant']} s each; "
        f"wall time over mutants: {python['wall_s_per_mutant']} s"
    )
    for engine in ("warm", "cold"):
        run = figures[engine]
        print(
            f"harness, {engine}, whole catalogue: {run['wall_s']:.1f} s (exit {run['exit']}) = "
            f"{figures[f'{engine}_over_clean_runs']} x both clean runs; {run['judged_warm']} of "
            f"{sum(figures['mutants'].values())} judged warm"
        )
    print(f"same verdicts from both engines: {figures['same_verdicts']}")
    if figures["mutmut"]:
        mutmut = figures["mutmut"]
        each = mutmut["s_per_mutant"]
        count, wall = mutmut["mutants"], mutmut["wall_s"]
        print(f"mutmut: {count} mutants in {wall:.1f} s = {each} s each (wall time over mutants)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", type=Path, default=ROOT / "mutation_config.toml")
    parser.add_argument("--jobs", type=int, help="passed on to the harness")
    parser.add_argument("--mutmut", action="store_true", help="also time mutmut over guard_lib")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    try:
        config = tomllib.loads(args.config.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        print(f"bench_harness: cannot read {args.config}: {error}", file=sys.stderr)
        return 2
    pytest_args = config.get("harness", {}).get("pytest_args", [])
    parts = {
        part: [m for m in config.get("mutant", []) if str(m.get("file", "")).endswith(suffix)]
        for part, suffix in PARTS.items()
    }
    clean = {part: _clean(mutants, part, pytest_args) for part, mutants in parts.items() if mutants}
    clean_s = sum(c["wall_s"] for c in clean.values())
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        python_ids = [str(m["id"]) for m in parts["python"]]
        python = _harness(args.config, "warm", args.jobs, python_ids, tmp / "python.json")
        warm = _harness(args.config, "warm", args.jobs, [], tmp / "warm.json")
        cold = _harness(args.config, "cold", args.jobs, [], tmp / "cold.json")
        mutmut = _mutmut(tmp) if args.mutmut else None
    figures: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "mutants": {part: len(mutants) for part, mutants in parts.items()},
        "clean": clean,
        "python_part_warm": {k: v for k, v in python.items() if k != "by_mutant"},
        "python_part_over_clean": round(python["wall_s"] / clean["python"]["wall_s"], 1),
        "warm": {k: v for k, v in warm.items() if k != "by_mutant"},
        "cold": {k: v for k, v in cold.items() if k != "by_mutant"},
        "same_verdicts": warm["by_mutant"] == cold["by_mutant"],
        "warm_over_clean_runs": round(warm["wall_s"] / clean_s, 1),
        "cold_over_clean_runs": round(cold["wall_s"] / clean_s, 1),
        "mutmut": mutmut,
    }
    _print(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    runs = [*clean.values(), python, warm, cold, *([mutmut] if mutmut else [])]
    return 0 if all(run["exit"] == 0 for run in runs) and figures["same_verdicts"] else 1


if __name__ == "__main__":
    sys.exit(main())

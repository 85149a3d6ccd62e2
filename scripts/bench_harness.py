#!/usr/bin/env python3
"""Benchmark the critical-mutant harness, side by side in one invocation on one machine:

1. a clean pytest run of every test named in any ``killed_by``, unmutated;
2. the harness over the whole catalogue with the warm engine, then with the cold one;
3. with ``--mutmut``, mutmut over guard_lib (``mutation_run.py run``), for its time per mutant.

It prints each wall time, the warm engine's time per mutant it judged warm (function-level mutants)
against mutmut's per mutant, and the whole catalogue against the clean run.

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


def _run(cmd: list[str]) -> tuple[int, float]:
    start = time.perf_counter()
    code = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return code.returncode, time.perf_counter() - start


def _harness(config: Path, engine: str, jobs: int | None, tmp: Path) -> dict[str, Any]:
    report = tmp / f"critical-{engine}.json"
    cmd = [sys.executable, str(ROOT / "scripts" / "critical_mutants.py"), "--config", str(config), "run"]
    cmd += ["--engine", engine, "--json", str(report), *(["--jobs", str(jobs)] if jobs else [])]
    code, seconds = _run(cmd)
    data = json.loads(report.read_text()) if report.exists() else {"mutants": [], "totals": {}}
    warm = [m["seconds"] for m in data["mutants"] if m.get("engine") == "warm"]
    return {
        "exit": code,
        "wall_s": round(seconds, 2),
        "verdicts": data["totals"],
        "judged_warm": len(warm),
        "s_per_warm_mutant": round(sum(warm) / len(warm), 3) if warm else None,
        "by_mutant": {m["id"]: m["verdict"] for m in data["mutants"]},
    }


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
    mutants = config.get("mutant", [])
    tests = sorted({test for mutant in mutants for test in mutant.get("killed_by", [])})
    pytest_args = config.get("harness", {}).get("pytest_args", [])

    clean_code, clean_s = _run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args, *tests]
    )
    with tempfile.TemporaryDirectory() as tmp:
        warm = _harness(args.config, "warm", args.jobs, Path(tmp))
        cold = _harness(args.config, "cold", args.jobs, Path(tmp))
        mutmut: dict[str, Any] | None = None
        if args.mutmut:
            # no verdicts cached from an earlier run: every mutant is run and timed
            shutil.rmtree(ROOT / "mutants", ignore_errors=True)
            out = Path(tmp) / "mutmut.json"
            code, seconds = _run(
                [sys.executable, str(ROOT / "scripts" / "mutation_run.py"), "run", "--out", str(out)]
            )
            count = len(json.loads(out.read_text())["mutants"]) if out.exists() else 0
            mutmut = {
                "exit": code,
                "wall_s": round(seconds, 2),
                "mutants": count,
                "s_per_mutant": round(seconds / count, 3) if count else None,
            }
    figures: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "mutants": len(mutants),
        "killed_by_tests": len(tests),
        "clean_run_s": round(clean_s, 2),
        "clean_run_exit": clean_code,
        "warm": {k: v for k, v in warm.items() if k != "by_mutant"},
        "cold": {k: v for k, v in cold.items() if k != "by_mutant"},
        "same_verdicts": warm["by_mutant"] == cold["by_mutant"],
        "warm_over_clean_run": round(warm["wall_s"] / clean_s, 1),
        "cold_over_clean_run": round(cold["wall_s"] / clean_s, 1),
        "mutmut": mutmut,
    }
    print(f"machine: {figures['machine']}")
    print(f"clean run of the {len(tests)} killed_by tests: {clean_s:6.1f} s (exit {clean_code})")
    for name, run in (("warm", warm), ("cold", cold)):
        per = run["s_per_warm_mutant"]
        extra = f"; {run['judged_warm']} judged warm at {per:.2f} s each" if per is not None else ""
        print(
            f"harness, {name} engine, {len(mutants)} mutants: {run['wall_s']:6.1f} s (exit {run['exit']}) = "
            f"{run['wall_s'] / clean_s:.1f} x the clean run{extra}"
        )
    print(f"same verdicts from both engines: {figures['same_verdicts']}")
    if mutmut:
        each = mutmut["s_per_mutant"]
        print(f"mutmut: {mutmut['mutants']} mutants in {mutmut['wall_s']:.1f} s = {each} s each")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    ok = clean_code == 0 and warm["exit"] == 0 and cold["exit"] == 0 and figures["same_verdicts"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

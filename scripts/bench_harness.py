#!/usr/bin/env python3
"""Benchmark the critical-mutant harness: the whole catalogue against one clean run of the same tests.

In one invocation, back to back on the same machine: (1) a clean pytest run of every test named in any
``killed_by``, unmutated; (2) ``critical_mutants.py run`` over the whole catalogue. Prints the wall
time of each, the harness's time per mutant, and the ratio.

    python scripts/bench_harness.py [--config mutation_config.toml] [--jobs N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd: list[str]) -> tuple[int, float]:
    start = time.perf_counter()
    code = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return code.returncode, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", type=Path, default=ROOT / "mutation_config.toml")
    parser.add_argument("--jobs", type=int, help="passed on to the harness")
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
        report = Path(tmp) / "critical.json"
        harness = [
            sys.executable,
            str(ROOT / "scripts" / "critical_mutants.py"),
            "--config",
            str(args.config),
        ]
        harness += ["run", "--json", str(report), *(["--jobs", str(args.jobs)] if args.jobs else [])]
        harness_code, harness_s = _run(harness)
        verdicts = json.loads(report.read_text())["totals"] if report.exists() else {}

    per_mutant = harness_s / max(len(mutants), 1)
    figures = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "mutants": len(mutants),
        "killed_by_tests": len(tests),
        "clean_run_s": round(clean_s, 2),
        "clean_run_exit": clean_code,
        "harness_s": round(harness_s, 2),
        "harness_exit": harness_code,
        "harness_s_per_mutant": round(per_mutant, 2),
        "harness_over_clean_run": round(harness_s / clean_s, 1),
        "verdicts": verdicts,
    }
    print(f"machine: {figures['machine']}")
    print(f"clean run of the {len(tests)} killed_by tests: {clean_s:6.1f} s (exit {clean_code})")
    print(f"harness, {len(mutants)} mutants:               {harness_s:6.1f} s (exit {harness_code})")
    print(f"per mutant: {per_mutant:.2f} s; whole catalogue = {harness_s / clean_s:.1f} x one clean run")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if clean_code == 0 and harness_code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""Time the full proof: each engine whole and from nothing, then again on the unchanged tree (reuse).

    python benchmarks/bench_proof.py --json benchmarks/results/cpu-2core-proof.json

Each engine runs as ``guard-mutation run ENGINE --fresh`` into a store of this run's own (mutmut from an
empty ``mutants/``), then once more without ``--fresh``, which keeps every outcome whose inputs are the same.
The file records the machine, each run's wall time and its records' verdicts and statuses.
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

from guard_mutation import config, store
from guard_mutation.judge import judge

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("engines", nargs="*", default=["edits", "mutmut"])
    parser.add_argument("--json", type=Path, required=True, help="write the figures here")
    args = parser.parse_args()
    reviews = config.read(ROOT / "mutation_config.toml", ROOT).reviews
    figures: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "engines": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench-proof-") as scratch:
        held = Path(scratch) / "store.json"
        for engine in args.engines:
            if engine == "mutmut":
                shutil.rmtree(ROOT / "mutants", ignore_errors=True)
            runs = {}
            for kind, extra in (("fresh", ["--fresh"]), ("unchanged", [])):
                started = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-m", "guard_mutation", "run", engine, "--store", str(held), *extra],
                    cwd=ROOT,
                    check=False,
                    capture_output=True,
                    text=True,
                )
                wall = time.perf_counter() - started
                if done.returncode not in (0, 1):
                    print(done.stderr, file=sys.stderr)
                    return 2
                run = store.load(held).runs[engine]
                verdicts: dict[str, int] = {}
                for record in run.records:
                    verdicts[record.outcome.verdict] = verdicts.get(record.outcome.verdict, 0) + 1
                (tally,) = judge([run], reviews).tallies
                runs[kind] = {
                    "wall_s": round(wall, 1),
                    "mutants": len(run.records),
                    "reused": sum(r.outcome.reused for r in run.records),
                    "verdicts": verdicts,
                    "statuses": {s.value: n for s, n in tally.counts.items()},
                    "notes": list(run.notes),
                    "exit": done.returncode,
                }
            figures["engines"][engine] = runs  # type: ignore[index]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

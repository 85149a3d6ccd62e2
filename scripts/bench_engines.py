#!/usr/bin/env python3
"""Measure the three mutation engines side by side: mutants, verdicts, reviews, wall time, lines reached.

In one invocation, back to back on the same machine: mutmut (``mutation_run.py run``), the sweep
(``mutation_sweep.py run``) and the critical harness (``critical_mutants.py run``), each over the whole
of guard_lib from nothing (mutmut's ``mutants/`` removed, no verdict reused), and each one's wall time
per mutant beside mutmut's. Then the gate's view of their results, and the union of the executable lines they
mutated. Writes JSON and a Markdown table.

    python scripts/bench_engines.py --json benchmarks/results/cpu-2core-engines.json \\
        --markdown benchmarks/results/cpu-2core-engines.md
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
from collections import Counter
from pathlib import Path
from typing import Any

from mutation_engine_inputs import judge_runs, runs_from_files
from mutation_lines import line_engines
from mutation_model import SWEEP

ROOT = Path(__file__).resolve().parent.parent


def _timed(cmd: list[str]) -> tuple[int, float]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return done.returncode, round(time.perf_counter() - start, 1)


def measure(out: Path) -> dict[str, Any]:
    py = sys.executable
    mutmut_json, sweep_json, critical_json = out / "mutmut.json", out / "sweep.json", out / "critical.json"
    subprocess.run(["rm", "-rf", "mutants"], cwd=ROOT, check=True)
    runs = {
        "mutmut": _timed([py, "scripts/mutation_run.py", "run", "--out", str(mutmut_json)]),
        "sweep": _timed([py, "scripts/mutation_sweep.py", "run", "--out", str(sweep_json)]),
        "critical": _timed([py, "scripts/critical_mutants.py", "run", "--json", str(critical_json)]),
    }
    config = ROOT / "mutation_config.toml"
    ev = judge_runs(runs_from_files(mutmut_json, critical_json, sweep_json), config)
    assert ev.sweep is not None
    sweep = ev.runs[SWEEP]
    coverage = line_engines(ev)
    assert coverage is not None
    critical = ev.critical or []
    engines: dict[str, dict[str, Any]] = {
        "mutmut": {
            "mutants": len(ev.mutmut.records),
            "killed": len(ev.killed),
            "reviewed_equivalent": len(ev.equivalent_of),
            "not_killed": len(ev.survivors),
            "statuses": dict(Counter(r.outcome.status for r in ev.mutmut.records)),
        },
        "sweep": {
            "mutants": len(sweep.records),
            "killed": len(ev.sweep.killed),
            "reviewed_equivalent": len(ev.sweep.equivalent),
            "not_killed": len(ev.sweep.survivors),
            "skipped_before_running": sweep.facts.get("skipped", {}),
            "by_operator": dict(Counter(r.mutant.operator for r in sweep.records)),
        },
        "critical": {
            "mutants": len(critical),
            "killed": len(critical) - len(ev.critical_failures),
            "reviewed_equivalent": 0,
            "not_killed": len(ev.critical_failures),
        },
    }
    for name, (code, seconds) in runs.items():
        count = engines[name]["mutants"]
        engines[name].update(
            exit=code, wall_s=seconds, s_per_mutant=round(seconds / count, 3) if count else None
        )
    return {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "engines": engines,
        "equivalents": {
            "mutmut": [
                {"function": e.function, "diff": e.diff, "reason": e.reason}
                for e in ev.equivalent_of.values()
            ],
            "sweep": [
                {
                    "where": f"{r.mutant.file}:{r.mutant.line}",
                    "operator": r.mutant.operator,
                    "reason": e.reason,
                }
                for r, e in ev.sweep.equivalent
            ],
        },
        "lines": coverage.totals(),
        "lines_no_engine_reached": {f: ls for f, ls in coverage.unmutated().items() if ls},
        "gate_findings": ev.findings(),
    }


def markdown(result: dict[str, Any]) -> str:
    rows = []
    for name, e in result["engines"].items():
        cells = [name, e["mutants"], e["killed"], e["reviewed_equivalent"], e["not_killed"], e["wall_s"]]
        cells.append(e["s_per_mutant"])
        rows.append("| " + " | ".join(map(str, cells)) + " |")
    lines = result["lines"]
    engines = ", ".join(f"{e} {lines.get(e, 0)}" for e in ("sweep", "mutmut", "critical"))
    return "\n".join(
        [
            f"Machine: {result['machine']}; one run of `scripts/bench_engines.py`, engines back to back.",
            "",
            "| engine | mutants | killed | reviewed equivalent | not killed | wall s | s per mutant |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            "",
            f"Executable lines of guard_lib: {lines['executable']}; "
            f"mutated by at least one engine: {lines['any']} ({engines}).",
            f"Lines no engine reached: {result['lines_no_engine_reached'] or 'none'}.",
            f"Gate findings: {len(result['gate_findings'])}.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-engines-") as tmp:
        result = measure(Path(tmp))
    text = markdown(result)
    sys.stdout.write(text)
    for path, content in ((args.json, json.dumps(result, indent=2) + "\n"), (args.markdown, text)):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

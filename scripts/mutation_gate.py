"""Fail CI when a mutant survives that nobody has reviewed as equivalent, or a critical mutant lives.

Inputs:
  --results FILE   mutmut verdicts exported by ``python scripts/mutation_run.py run`` (or ``merge``)
  --config FILE    mutation_config.toml: ``[gate]`` and mutmut's ``[[reviewed]]`` entries
  --critical FILE  optional JSON of ``python scripts/critical_mutants.py run --json FILE``
  --sweep FILE     optional results of ``python scripts/mutation_sweep.py run --out FILE``: every
                   generated mutant killed or reviewed in ``[[reviewed]]``, no review stale

Exit status: 0 the gate passes; 1 a finding (unreviewed survivor, score under min_score, stale or
ambiguous equivalent entry, an equivalent entry whose mutant is killed, critical mutant not killed);
2 bad or missing input (also: results with never-checked mutants, unknown keys in the config).

Verdict classes (mutmut status -> gate):
  killed, caught by type check, timeout, segfault -> killed
  survived             -> survivor, unless exactly one [[reviewed]] entry matches it (then excluded)
  no tests             -> survivor: no test reaches the mutated code (an equivalent entry cannot excuse it)
  suspicious, check was interrupted by user -> survivor: the run did not show the tests caught it
  skipped              -> excluded from the score, listed
  not checked          -> input error (exit 2): the run is incomplete
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from mutation_engine_inputs import judge_runs, runs_from_files
from mutation_evaluation import Evaluation, tally
from mutation_io import InputError, add_input_arguments, check_output
from mutation_model import Run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mutation_gate.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_input_arguments(parser, critical_help="critical harness JSON; any verdict but killed fails")
    parser.add_argument("--json", type=Path, help="also write the decision as JSON here")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        runs = runs_from_files(args.results, args.critical, args.sweep, args.core_deletions)
    except InputError as exc:
        print(f"mutation gate: error: {exc}", file=sys.stderr)
        return 2
    return gate(runs, args.config, args.json)


def gate(runs: Sequence[Run], config: Path, as_json: Path | None = None) -> int:
    """The decision over ``runs`` (one per engine), printed; 0 passes, 1 a finding, 2 bad input."""
    try:
        if as_json is not None:
            check_output(as_json, "--json")
        ev = judge_runs(runs, config)
    except InputError as exc:
        print(f"mutation gate: error: {exc}", file=sys.stderr)
        return 2
    _print_decision(ev)
    findings = ev.findings()
    if as_json:
        as_json.parent.mkdir(parents=True, exist_ok=True)
        as_json.write_text(
            json.dumps(
                {
                    "passed": not findings,
                    "score": ev.score,
                    "tally": [t.to_json() for t in tally(ev)],
                    "findings": findings,
                },
                indent=2,
                ensure_ascii=False,
            )
            + "\n",
            encoding="utf-8",
        )
    if findings:
        print(f"FAILED: {len(findings)} finding(s):")
        for finding in findings:
            print(f"  - {finding}")
        return 1
    print("PASSED")
    return 0


def _print_decision(ev: Evaluation) -> None:
    config, mutmut = ev.config, ev.mutmut
    if ev.survivors and ev.score is not None and ev.score >= config.min_score:
        print(f"  {len(ev.survivors)} survivor(s) tolerated by min_score {config.min_score:g}%")
    judged = f"shard {mutmut.shard[0]}/{mutmut.shard[1]} alone" if mutmut.shard else mutmut.scope
    print(f"mutation gate ({judged}): {ev.score_text()}")
    for engine in tally(ev):
        print(f"  {engine.describe()}")
    for entry in ev.out_of_scope:
        print(f"  not in this run's scope: {entry.describe()}")
    if ev.other_shards:
        print(
            f"  {len(ev.other_shards)} reviewed equivalent(s) match no mutant of this shard; "
            "the merged results judge whether they are stale"
        )
    if ev.sweep is not None and ev.sweep.shard:
        index, count = ev.sweep.shard
        print(f"  the sweep's results are shard {index}/{count}, judged alone")


if __name__ == "__main__":
    sys.exit(main())

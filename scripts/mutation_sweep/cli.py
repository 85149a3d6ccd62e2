"""``mutation_sweep.py``: generate mutants of every executable line, run them warm, write the results.

  run    --out FILE [--shard I/N] [--jobs N]   run the sweep (or one shard of it)
         [--operator NAME]... [--file PATH]... only these operators' or files' mutants (never passes the gate)
         [--id ID]...                          only these mutants (never passes the gate); @FILE reads
                                               arguments from FILE, one per line
  merge  --out FILE PART...                    combine shard results into one
  list   [--shard I/N] [--operator NAME]... [--file PATH]...   the mutants, one line each
  show   ID                                    one mutant as a diff

Exit status: 0 done (the gate judges the verdicts); 2 bad input or a suite that is not green.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import logging
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from mutation_io import InputError
from mutation_model import KILLED

from . import carry, jobs, reuse
from . import config as sweep_config
from .executable import executable_lines
from .generate import Generated, generate
from .operators import ALL
from .results import ResultsError, SweepResults, load, merge, select_shard, universe_of
from .runners import forked, warm
from .scope import by_change, changes_for, on_changed_lines
from .work_item import Mutant, Result

log = logging.getLogger("mutation_sweep")
ROOT = Path(__file__).resolve().parents[2]


class UsageError(Exception):
    """Bad command-line input."""


def _shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    parts = text.split("/")
    if len(parts) != 2 or not all(p.isdigit() for p in parts) or not 1 <= int(parts[0]) <= int(parts[1]):
        raise UsageError(f"--shard must be I/N with 1 <= I <= N, got {text!r}")
    return int(parts[0]), int(parts[1])


def _operators(names: Sequence[str] | None) -> frozenset[str] | None:
    if not names:
        return None
    known = [op.name for op in ALL]
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise UsageError(f"--operator {unknown[0]!r} names no operator; one of: {', '.join(known)}")
    return frozenset(names)


def _selected(
    mutants: Sequence[Mutant],
    shard: tuple[int, int] | None,
    operators: frozenset[str] | None,
    files: Sequence[str] | None = None,
    ids: Sequence[str] | None = None,
) -> list[Mutant]:
    chosen = select_shard(mutants, *shard) if shard else list(mutants)
    chosen = chosen if operators is None else [m for m in chosen if m.operator in operators]
    chosen = chosen if not files else [m for m in chosen if m.file in files]
    if not ids:
        return chosen
    unknown = sorted(set(ids) - {m.id for m in chosen})
    if unknown:
        raise UsageError(
            f"--id {unknown[0]!r} names no mutant of this selection (shard, operators, files); "
            "`list` names them"
        )
    wanted = set(ids)
    return [m for m in chosen if m.id in wanted]


def _chosen_files(names: Sequence[str] | None, files: Sequence[str]) -> list[str] | None:
    if not names:
        return None
    unknown = sorted(set(names) - set(files))
    if unknown:
        raise UsageError(f"--file {unknown[0]!r} is not a mutated file; one of: {', '.join(files)}")
    return list(names)


def _package_files(cfg: sweep_config.SweepConfig) -> list[str]:
    package = ROOT / cfg.package
    if not package.is_dir():
        raise UsageError(f"package {cfg.package!r} not found under {ROOT}")
    # The compiled core's Cython source is mutated by the same operators, through its Python view.
    found = (p for suffix in ("*.py", "*.pyx") for p in package.rglob(suffix))
    return sorted(p.relative_to(ROOT).as_posix() for p in found)


def _files(cfg: sweep_config.SweepConfig, named: Sequence[str] | None = None) -> list[str]:
    """The package's files a whole run mutates, and any other of its files named with ``--file``."""
    files = _package_files(cfg)
    _chosen_files(named, files)
    return [f for f in files if f not in cfg.exclude or f in (named or ())]


def _generated(
    cfg: sweep_config.SweepConfig,
    selected: frozenset[str] | None = None,
    named: Sequence[str] | None = None,
) -> tuple[Generated, list[str]]:
    """Every mutant of the whole run's operators (``[sweep] operators``), and of any selected beside them;
    of the whole run's files, and of any excluded file named beside them."""
    files = _files(cfg, named)
    names = None if cfg.operators is None else set(cfg.operators) | (selected or set())
    operators = ALL if names is None else tuple(op for op in ALL if op.name in names)
    return generate(ROOT, files, operators), files


def _run_jobs(
    to_run: list[forked.Job], parallel: int, cfg: sweep_config.SweepConfig, *, cold: bool
) -> list[Result]:
    done = [0]
    count = sum(1 for j in to_run if j.mutant.scope != jobs.GREEN_CHECK)

    def progress(result: Result) -> None:
        if result.mutant.scope == jobs.GREEN_CHECK:
            return
        done[0] += 1
        if result.verdict != KILLED:
            log.info(
                "[%d/%d] %s %s %s:%d %s",
                done[0],
                count,
                result.verdict,
                result.mutant.id,
                result.mutant.file,
                result.mutant.line,
                result.mutant.operator,
            )
        elif done[0] % 100 == 0:
            log.info("[%d/%d] ...", done[0], count)

    if cold:
        to_run = [dataclasses.replace(job, warm=False) for job in to_run]
    return warm.run(
        to_run,
        ROOT,
        cfg.pytest_args,
        parallel=parallel,
        timeout_s=cfg.timeout_s,
        preload=cfg.preload,
        on_result=progress,
    )


def cmd_run(args: argparse.Namespace, cfg: sweep_config.SweepConfig) -> int:
    out: Path = args.out
    if out.exists() and out.is_dir():
        raise UsageError(f"--out {out} is a directory")
    out.parent.mkdir(parents=True, exist_ok=True)  # fail now, not after the run
    shard = _shard(args.shard)
    operators = _operators(args.operator)
    started = time.monotonic()
    earlier_run = load(args.reuse, whole=False) if args.reuse else None
    earlier = earlier_run.results if earlier_run is not None else []
    generated, files = _generated(cfg, operators, args.file)
    changes = changes_for(args.changed_since, ROOT, cfg.pytest_args, files)
    only = _chosen_files(args.file, files)
    # The universe is always the whole run's: results of an operator selection hold less than it (or
    # than their shard), which the gate refuses as a partial run.
    universe = universe_of(m.id for m in generated.mutants)
    mutants = _selected(generated.mutants, shard, operators, only, args.id)
    log.info(
        "sweep: %d mutants generated, %d to run%s%s%s%s; skipped: %s",
        len(generated.mutants),
        len(mutants),
        f" (shard {shard[0]}/{shard[1]})" if shard else "",
        f" (operators {', '.join(sorted(operators))}: not a whole run)" if operators else "",
        f" (files {', '.join(only)}: not a whole run)" if only else "",
        f" ({len(args.id)} named by --id: not a whole run)" if args.id else "",
        dict(generated.skipped) or "none",
    )
    if changes is not None:
        log.info("sweep: %s", changes.describe())
        if not changes.tests and not on_changed_lines(mutants, changes):
            mutants = []  # nothing to judge: no map of the tests is needed either
    # Without a changed test, only the mutants on changed lines can be chosen: only their files need a map.
    candidates = mutants if changes is None or changes.tests else on_changed_lines(mutants, changes)
    every_file = changes is not None and bool(changes.tests)
    mapping = jobs.test_maps(
        candidates, ROOT, cfg.package, cfg.pytest_args, every_file=every_file, preload=cfg.preload
    )
    reached: frozenset[str] = frozenset()
    if changes is not None:
        scoped = by_change(mutants, changes, mapping, ROOT, files)
        log.info("sweep: scoped to the change: %s", scoped.describe(len(mutants)))
        mutants, reached = scoped.mutants, scoped.reached
    depends = reuse.digests(mutants, mapping, ROOT, files, cfg.pytest_args)
    kept, mutants = reuse.split(mutants, depends, earlier)
    suite = carry.suite_of(ROOT, files, cfg.pytest_args, mapping)
    before = earlier_run.suite if earlier_run is not None else None
    at_ref = carry.package_at(ROOT, files, changes.commit) if changes is not None and reached else ""
    carried = carry.carry(
        mutants,
        earlier,
        before,
        suite,
        mapping=mapping,
        root=ROOT,
        files=files,
        scoped=reached,
        package_at_ref=at_ref,
    )
    mutants = [*carried.whole, *(m for m in mutants if m.id in carried.narrowed)]
    if args.reuse:
        log.info("sweep: reused %d verdicts from %s (nothing they depend on changed)", len(kept), args.reuse)
        log.info("sweep: %s", carried.describe())
    forked.warm_up()
    with tempfile.TemporaryDirectory(prefix="sweep-builds-") as scratch:
        to_run, invalid = jobs.make(
            mutants,
            generated,
            root=ROOT,
            files=files,
            mapping=mapping,
            scratch=Path(scratch),
            parallel=args.jobs,
            only=carried.narrowed,
        )
        results = jobs.take_green_check(_run_jobs(to_run, args.jobs, cfg, cold=args.cold))
    results = reuse.stamped([carry.merged(r, carried) for r in results] + carried.kept + invalid, depends)
    results = carry.vouched(results, carried, reached) + kept
    shard_json = {"index": shard[0], "count": shard[1]} if shard else None
    sweep = SweepResults(
        results,
        universe,
        shard_json,
        dict(generated.skipped),
        executable_lines(ROOT, files),
        round(time.monotonic() - started, 3),
        {f: {line: sorted(r) for line, r in lines.items()} for f, lines in generated.set_aside.items()},
        suite,
    )
    sweep.write(out)
    verdicts = Counter(r.verdict for r in results)
    log.info("sweep: %s in %.1fs; wrote %s", dict(sorted(verdicts.items())), sweep.seconds, out)
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    if args.out.is_dir():
        raise UsageError(f"--out {args.out} is a directory")
    merged = merge([load(Path(p)) for p in args.parts])
    merged.write(args.out)
    log.info("sweep merge: %d mutants from %d shards -> %s", len(merged.results), len(args.parts), args.out)
    return 0


def cmd_list(args: argparse.Namespace, cfg: sweep_config.SweepConfig) -> int:
    shard = _shard(args.shard)
    operators = _operators(args.operator)
    generated, files = _generated(cfg, operators, args.file)
    mutants = _selected(generated.mutants, shard, operators, _chosen_files(args.file, files))
    changes = changes_for(args.changed_since, ROOT, cfg.pytest_args, files)
    if changes is not None:
        log.info("sweep: %s (a run also takes the mutants changed tests reach)", changes.describe())
        mutants = on_changed_lines(mutants, changes)
    for m in mutants:
        sys.stdout.write(
            f"{m.id}  {m.file}:{m.line}  {m.scope}  {m.operator}: "
            f"{' '.join(m.original.split())[:50]!r} -> {' '.join(m.mutated.split())[:50]!r}\n"
        )
    return 0


def cmd_show(args: argparse.Namespace, cfg: sweep_config.SweepConfig) -> int:
    generated, _ = _generated(cfg, frozenset(op.name for op in ALL), _package_files(cfg))
    found = [m for m in generated.mutants if m.id == args.id]
    if not found:
        raise UsageError(f"no mutant {args.id!r}; `mutation_sweep.py list` names them")
    mutant = found[0]
    before = (ROOT / mutant.file).read_text(encoding="utf-8").splitlines(keepends=True)
    after = generated.sources[mutant.id].splitlines(keepends=True)
    sys.stdout.writelines(difflib.unified_diff(before, after, f"a/{mutant.file}", f"b/{mutant.file}"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mutation_sweep.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        fromfile_prefix_chars="@",
    )
    parser.add_argument("--config", type=Path, default=ROOT / "mutation_config.toml")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the sweep")
    run.add_argument("--out", type=Path, required=True, help="results file to write (JSON)")
    run.add_argument("--shard", help="run shard I of N (1-based)")
    run.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="children at a time")
    run.add_argument("--operator", action="append", help="run only this operator's mutants (repeatable)")
    run.add_argument("--file", action="append", help="run only this file's mutants (repeatable)")
    run.add_argument("--id", action="append", help="run only this mutant (repeatable)")
    run.add_argument("--reuse", type=Path, metavar="RESULTS", help="take verdicts whose inputs are unchanged")
    run.add_argument("--changed-since", metavar="REF", help="run only the mutants a change since REF touches")
    run.add_argument(
        "--cold",
        action="store_true",
        help="judge every mutant in a forked child that collects its tests afresh, none in a warm session",
    )
    merge_ = sub.add_parser("merge", help="combine the results of shards 1..N")
    merge_.add_argument("--out", type=Path, required=True)
    merge_.add_argument("parts", nargs="+")
    list_ = sub.add_parser("list", help="list the mutants")
    list_.add_argument("--shard")
    list_.add_argument("--operator", action="append", help="list only this operator's mutants (repeatable)")
    list_.add_argument("--file", action="append", help="list only this file's mutants (repeatable)")
    list_.add_argument(
        "--changed-since", metavar="REF", help="list only the mutants on lines changed since REF"
    )
    show = sub.add_parser("show", help="one mutant's diff")
    show.add_argument("id")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    args = build_parser().parse_args(argv)
    # The sweep mutates the Python reference: its tests, and the coverage that selects them, import it
    # rather than the compiled core.
    os.environ["GUARD_LIB_IMPL"] = "python"
    try:
        if args.command == "merge":
            return cmd_merge(args)
        cfg = sweep_config.load(args.config)
        if args.command == "run":
            if args.jobs < 1:
                raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
            return cmd_run(args, cfg)
        if args.command == "list":
            return cmd_list(args, cfg)
        return cmd_show(args, cfg)
    except (UsageError, InputError, sweep_config.ConfigError, ResultsError, RuntimeError, OSError) as exc:
        log.error("mutation_sweep: error: %s", exc)
        return 2

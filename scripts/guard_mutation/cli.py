"""``guard-mutation``: run the engines into one store, and report and gate from it.

  run    [ENGINE|all]... [--store FILE] [--shard I/N] [--jobs N] [--fresh]   run engines; put their
                                                results in FILE (the sweep reuses the verdicts FILE holds
                                                whose inputs are unchanged, unless --fresh)
  run    [ENGINE|all]... --changed-since REF [--out-dir DIR] [--markdown F]   the proof of a change: each
                                                engine scoped to the code changed since REF (and the tests
                                                changed), judged at once; the store is left as it is
  add    --engine NAME RESULTS [--store FILE]   put results an engine wrote itself (a plain `mutmut run`,
                                                exported) into the store
  merge  --out FILE STORE...                    join stores (shards of one run) into one
  list   ENGINE [ARGS...]                       the engine's mutants, as its own `list` prints them
  show   ID                                     one mutant as a diff (the engine is told by the id)
  report --store FILE [--json F] [--html F] [--markdown F]   one report of every engine in the store
  gate   --store FILE                           the gate over every engine in the store

The store defaults to reports/mutation-store.json. Exit status: 0 done (for gate: it passes); 1 a finding
(gate: a survivor nobody reviewed, a stale or refuted review, a critical mutant alive; run: the catalogue
found a critical mutant alive; run --changed-since: a test red on the unmutated tree, or a selected mutant
not killed); 2 bad input, with one
line saying what and where, and the store as it was (for run: as the engines before the one that failed
left it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import proof
from . import store as stores
from .engines import ENGINES, REGISTRY_ERROR, RunOptions, engine_of

if TYPE_CHECKING:
    from mutation_model import Run

DEFAULT_STORE = Path("reports/mutation-store.json")
DEFAULT_CONFIG = Path("mutation_config.toml")
OUTPUTS = ("json", "html", "markdown")
EXIT_BAD_INPUT = 2


class UsageError(Exception):
    """Bad input: exit 2."""


def _engines(names: Sequence[str]) -> list[str]:
    if not names or "all" in names:
        return list(ENGINES)
    unknown = [n for n in names if n not in ENGINES]
    if unknown:
        raise UsageError(f"{unknown[0]!r} names no engine; one of: all, {', '.join(ENGINES)}")
    return list(dict.fromkeys(names))


def cmd_run(args: argparse.Namespace) -> int:
    names = _engines(args.engines)
    if args.changed_since is not None:
        return _run_scoped(args, names)
    held = stores.load_or_empty(args.store)  # a store that cannot be read fails now, before any run
    if args.shard:
        whole = [n for n in names if n in held.engines]
        if whole:
            raise UsageError(
                f"{args.store} holds a whole run of {whole[0]}: a shard goes into a store of its own"
            )
    worst = 0
    with tempfile.TemporaryDirectory(prefix="guard-mutation-") as scratch:
        options = RunOptions(shard=args.shard, jobs=args.jobs, reuse=_earlier(held, args, Path(scratch)))
        for name in names:
            out = Path(scratch) / f"{name}.json"
            code = ENGINES[name].run(options, out)
            if code not in (0, 1) or not out.exists():
                kept = f"; {args.store} keeps what the engines before it gave" if name != names[0] else ""
                raise UsageError(f"{name} did not run to the end (exit status {code}){kept}")
            worst = max(worst, code)
            held = held.with_results(name, stores.read_results(name, out), name)
            stores.write(held, args.store)  # each engine's results kept as soon as it has them
    sys.stdout.write(f"guard-mutation: {', '.join(names)} -> {args.store}\n")
    return worst


REUSING = ("catalogue", "mutmut", "sweep")  # the engines that reuse an earlier run's verdicts


def _earlier(held: stores.Store, args: argparse.Namespace, scratch: Path) -> dict[str, Path]:
    """The store's whole runs of the engines that reuse verdicts, as files they read; none with --fresh."""
    if args.fresh:
        return {}
    out: dict[str, Path] = {}
    for name in REUSING:
        if name in held.engines:
            out[name] = scratch / f"{name}-earlier.json"
            out[name].write_text(json.dumps(held.engines[name]), encoding="utf-8")
    return out


def _run_scoped(args: argparse.Namespace, names: list[str]) -> int:
    """Every engine scoped to the change since ``--changed-since``, judged here; the store is not touched."""
    if args.shard:
        raise UsageError("--changed-since runs what the change selects, whole: give no --shard")
    held = stores.load_or_empty(args.store)
    with tempfile.TemporaryDirectory(prefix="guard-mutation-") as scratch:
        return proof.run(args, names, _earlier(held, args, Path(scratch)))


def cmd_add(args: argparse.Namespace) -> int:
    if args.engine not in ENGINES:
        raise UsageError(f"--engine {args.engine!r} names no engine; one of: {', '.join(ENGINES)}")
    held = stores.load_or_empty(args.store)
    held = held.with_results(args.engine, stores.read_results(args.engine, args.results), str(args.results))
    stores.write(held, args.store)
    sys.stdout.write(f"guard-mutation: {args.engine} from {args.results} -> {args.store}\n")
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    merged = stores.Store()
    whole_from: dict[str, Path] = {}
    for path in args.stores:
        store = stores.load(path)
        for name, document in store.engines.items():
            if name in whole_from:
                raise UsageError(f"{whole_from[name]} and {path} both hold a whole run of {name}: keep one")
            whole_from[name] = path
            merged = merged.with_results(name, document, str(path))
        for name, parts in store.shards.items():
            for document in parts:
                merged = merged.with_results(name, document, str(path))
    stores.write(merged, args.out)
    sys.stdout.write(f"guard-mutation: merged {len(args.stores)} store(s) -> {args.out}\n")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    if args.engine not in ENGINES:
        raise UsageError(f"{args.engine!r} names no engine; one of: {', '.join(ENGINES)}")
    return ENGINES[args.engine].list(args.rest)


def cmd_show(args: argparse.Namespace) -> int:
    return engine_of(args.id).show(args.id)


def _runs(held: stores.Store, where: Path) -> list[Run]:
    """The store's whole runs, which are all the report and the gate read."""
    if held.shards:
        raise UsageError(f"{where}: its runs are not complete ({'; '.join(held.missing())})")
    if "mutmut" not in held.runs:
        raise UsageError(f"{where}: holds no mutmut results, which the report and the gate start from")
    return list(held.runs.values())


def _config(args: argparse.Namespace) -> Path:
    return DEFAULT_CONFIG if args.config is None else Path(args.config)


def cmd_report(args: argparse.Namespace) -> int:
    from mutation_report import report

    runs = _runs(stores.load(args.store), args.store)
    paths = {
        option: None if getattr(args, option) is None else Path(getattr(args, option)) for option in OUTPUTS
    }
    return report(runs, _config(args), json_out=paths["json"], html=paths["html"], markdown=paths["markdown"])


def cmd_gate(args: argparse.Namespace) -> int:
    from mutation_gate import gate

    return gate(_runs(stores.load(args.store), args.store), _config(args))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guard-mutation", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def with_store(p: argparse.ArgumentParser) -> None:
        p.add_argument("--store", type=Path, default=DEFAULT_STORE, help=f"default {DEFAULT_STORE}")

    def with_config(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", type=Path, help="mutation_config.toml (default: the project's)")

    run = sub.add_parser("run", help="run engines and put their results in the store")
    run.add_argument("engines", nargs="*", metavar="ENGINE", help=f"all (default), {', '.join(ENGINES)}")
    with_store(run)
    run.add_argument("--shard", metavar="I/N", help="run shard I of N (mutmut and the sweep)")
    run.add_argument("--jobs", type=int, help="parallel mutants")
    run.add_argument(
        "--fresh", action="store_true", help="judge every mutant again: reuse no verdict the store holds"
    )
    run.add_argument(
        "--changed-since",
        metavar="REF",
        help="only the mutants a change since git REF can have re-judged, judged now; the store untouched",
    )
    run.add_argument(
        "--out-dir",
        type=Path,
        default=Path("reports/scoped"),
        help="with --changed-since: each engine's results",
    )
    run.add_argument(
        "--markdown", type=Path, metavar="FILE", help="with --changed-since: the summary, as Markdown"
    )
    with_config(run)
    run.set_defaults(func=cmd_run)

    add = sub.add_parser("add", help="put an engine's results file into the store")
    add.add_argument("--engine", required=True, help=", ".join(ENGINES))
    add.add_argument("results", type=Path)
    with_store(add)
    add.set_defaults(func=cmd_add)

    merge = sub.add_parser("merge", help="join stores into one")
    merge.add_argument("--out", type=Path, required=True)
    merge.add_argument("stores", nargs="+", type=Path)
    merge.set_defaults(func=cmd_merge)

    lst = sub.add_parser("list", help="an engine's mutants")
    lst.add_argument("engine", help=", ".join(ENGINES))
    lst.add_argument("rest", nargs=argparse.REMAINDER, help="the engine's own list options")
    lst.set_defaults(func=cmd_list)

    show = sub.add_parser("show", help="one mutant as a diff")
    show.add_argument("id")
    show.set_defaults(func=cmd_show)

    report = sub.add_parser("report", help="one report of every engine in the store")
    with_store(report)
    with_config(report)
    for option in OUTPUTS:
        report.add_argument(f"--{option}", metavar="FILE")
    report.set_defaults(func=cmd_report)

    gate = sub.add_parser("gate", help="the gate over every engine in the store")
    with_store(gate)
    with_config(gate)
    gate.set_defaults(func=cmd_gate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    if REGISTRY_ERROR is not None:
        sys.stderr.write(f"guard-mutation: error: {REGISTRY_ERROR}\n")
        return EXIT_BAD_INPUT
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except (UsageError, proof.ProofError, stores.StoreError) as exc:
        sys.stderr.write(f"guard-mutation: error: {exc}\n")
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader stopped reading (`guard-mutation list sweep | head`): nothing went wrong here. What
        # is still buffered goes nowhere, so that closing stdout at exit raises nothing more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())

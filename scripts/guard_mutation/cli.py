"""``guard-mutation``: run the engines into one store; list, show, report and gate from it.

Exit status: 0 all good; 1 a finding (a mutant alive that nobody reviewed, a critical mutant not killed by
its tests, a stale or refuted review, a score under ``[gate] min_score``); 2 bad input, with one line
saying what and where, and the store and the working tree as they were.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from . import changes, config, store
from .engines import Engine, EngineError, Request, SuiteRed, engine_named, names, registered
from .judge import Judgement, Status, judge
from .model import Run

DEFAULT_CONFIG = Path("mutation_config.toml")
DEFAULT_STORE = Path("reports/mutation-store.json")
EXIT_OK, EXIT_FINDING, EXIT_BAD_INPUT = 0, 1, 2
_BAD_INPUT = (config.ConfigError, store.StoreError, changes.ChangeError, EngineError)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.command == "run" else logging.WARNING, format="%(message)s"
    )
    try:
        return int(args.handler(args))
    except _BAD_INPUT as exc:
        print(f"guard-mutation {args.command}: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except SuiteRed as red:
        print(f"guard-mutation {args.command}: {red}; no mutant was judged. Failing:")
        for test in red.failing:
            print(f"  {test}")
        if red.failing:
            print(f"run one again: python -m pytest '{red.failing[0]}'")
        return EXIT_FINDING
    except KeyboardInterrupt:
        print(f"guard-mutation {args.command}: interrupted; the store is as it was", file=sys.stderr)
        return 130
    except BrokenPipeError:  # a reader that stopped early (`| head`): what it took was whole
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    cfg = _config(args)
    engines = _engines(args.engines)
    change = None
    if args.changed_since is not None:
        change = changes.changed_since(args.changed_since, cfg.root, cfg.harness.package, cfg.harness.tests)
        print(change.describe())
    store_path = _store_path(args)
    held = store.load(store_path) if store_path is not None else store.Store()
    options = dict(_option(o) for o in args.option)
    runs: list[Run] = []
    for engine in engines:
        request = Request(
            root=cfg.root,
            config=cfg,
            jobs=args.jobs,
            only=tuple(args.only),
            change=change,
            full=args.full,
            runtime=args.runtime,
            previous=None if args.fresh else held.runs.get(engine.name),
            options=options,
        )
        run = engine.run(request)
        runs.append(run)
        if store_path is not None and request.whole:  # a selection (--only, --changed-since) is never stored
            try:
                held = held.with_run(run)
            except store.StoreError as exc:
                print(f"not stored: {exc}")
                continue
            store.save(held, store_path)
    if args.json is not None:
        verdicts = {
            r.mutant.id: {"engine": r.mutant.engine, **r.outcome.to_json()}
            for run in runs
            for r in run.records
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(verdicts, indent=1) + "\n", encoding="utf-8")
    judgement = judge(runs, cfg.reviews)
    _print(judgement, verbose=args.verbose)
    if args.markdown is not None:
        from . import report

        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(report.markdown(judgement), encoding="utf-8")
    if change is not None and not any(run.records for run in runs):
        print("no mutant lies in the change, and no test it changed names one: nothing to judge")
    return EXIT_FINDING if judgement.findings else EXIT_OK


def _list(args: argparse.Namespace) -> int:
    cfg = _config(args)
    for engine in _engines(args.engines):
        for mutant in engine.mutants(Request(cfg.root, cfg)):
            print(
                f"{mutant.engine}\t{mutant.id}\t{mutant.file}:{mutant.line}\t{mutant.operator}\t{mutant.function}"
            )
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    held = store.load(args.store)
    for run in held.runs.values():
        for record in run.records:
            if record.mutant.id == args.id:
                _describe(record.mutant.to_json() | {"outcome": record.outcome.to_json()})
                return EXIT_OK
    cfg = _config(args)
    unread = []
    for name in names():
        try:
            listed = engine_named(name).mutants(Request(cfg.root, cfg))
        except EngineError as exc:
            unread.append(f"{name}: {_one_line(exc)}")
            continue
        for mutant in listed:
            if mutant.id == args.id:
                _describe(mutant.to_json())
                return EXIT_OK
    also = f" (unread: {'; '.join(unread)})" if unread else ""
    raise EngineError(f"no mutant {args.id!r} in {args.store} or any engine's list{also}")


def _report(args: argparse.Namespace) -> int:
    from . import report

    judgement = _judged_store(args)
    report.write(
        judgement,
        root=_config(args).root,
        json_path=args.json,
        html_path=args.html,
        markdown_path=args.markdown,
    )
    if args.markdown is None:
        print(report.markdown(judgement))
    return EXIT_OK


def _gate(args: argparse.Namespace) -> int:
    judgement = _judged_store(args)
    cfg = _config(args)
    _print(judgement, verbose=False)
    low = [t for t in judgement.tallies if t.score is not None and t.score < cfg.min_score]
    for tally in low:
        print(f"FINDING: {tally.engine} scores {tally.score:.1f} %, under [gate] min_score {cfg.min_score} %")
    failed = bool(judgement.findings or low)
    print("gate: FAILED" if failed else "gate: PASSED")
    return EXIT_FINDING if failed else EXIT_OK


def _judged_store(args: argparse.Namespace) -> Judgement:
    held = store.load(args.store)
    if not held.runs:
        raise store.StoreError(f"{args.store}: no engine's run is stored; `guard-mutation run` first")
    return judge(list(held.runs.values()), _config(args).reviews)


def _print(judgement: Judgement, *, verbose: bool) -> None:
    for j in judgement.judged:
        if verbose or j.status is Status.FINDING:
            outcome = j.record.outcome
            killers = f" by {outcome.killers[0]}" if outcome.killers else ""
            line = f"{j.status.value:11} {j.record.mutant.id}: {outcome.verdict}{killers} {outcome.detail}"
            print(line.rstrip())
    for tally in judgement.tallies:
        print(tally.describe())
    for finding in judgement.findings:
        print(f"FINDING: {finding}")


def _describe(document: dict[str, object]) -> None:
    diff = document.pop("diff", "")
    for key, value in document.items():
        print(f"{key}: {value}")
    print(diff)


def _config(args: argparse.Namespace) -> config.Config:
    # A catalogue of one's own may sit anywhere; its files are named from the project, where this runs.
    return config.read(args.config if args.config is not None else DEFAULT_CONFIG, root=Path.cwd())


def _store_path(args: argparse.Namespace) -> Path | None:
    """The store a run writes: the one named, else the default, except for a catalogue of one's own."""
    if args.store is not None:
        return Path(args.store)
    return DEFAULT_STORE if args.config is None else None


def _engines(names: Sequence[str]) -> list[Engine]:
    if not names or list(names) == ["all"]:
        return list(registered().values())
    return [engine_named(name) for name in names]


def _one_line(exc: Exception) -> str:
    """An error as one line: its first, and where it says more below (a child's traceback), its last."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()] or [type(exc).__name__]
    return lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"


def _option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise EngineError(f"--option {text!r}: give KEY=VALUE")
    return key, value


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="guard-mutation", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, helptext: str, handler: object) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=helptext, description=helptext)
        sub.set_defaults(handler=handler)
        sub.add_argument(
            "--config", type=Path, help=f"the config, or a catalogue of one's own (default {DEFAULT_CONFIG})"
        )
        return sub

    run = command("run", "run engines (default: all); store whole runs; judge and exit 1 on a finding", _run)
    run.add_argument("engines", nargs="*", metavar="ENGINE", help="an installed engine's name, or all")
    run.add_argument("--store", help=f"store whole runs here (default {DEFAULT_STORE}; none with --config)")
    run.add_argument(
        "--only", action="append", default=[], metavar="ID", help="this mutant alone (repeatable)"
    )
    run.add_argument("--changed-since", metavar="REF", help="only what the change since git REF touches")
    run.add_argument("--full", action="store_true", help="each mutant against the whole suite")
    run.add_argument("--jobs", type=_positive, help="mutants judged at once (default: the config's)")
    run.add_argument(
        "--runtime", choices=("simulated", "cuda"), default="simulated", help="the tests' runtime"
    )
    run.add_argument("--fresh", action="store_true", help="judge every mutant again, reusing nothing")
    run.add_argument("--json", type=Path, help="write each mutant's verdict here, by id")
    run.add_argument("--markdown", type=Path, help="write the summary of this run here")
    run.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="an engine's own option"
    )
    run.add_argument("--verbose", action="store_true", help="a line for every mutant, not the findings alone")
    listing = command("list", "every mutant the engines make, one per line", _list)
    listing.add_argument("engines", nargs="*", metavar="ENGINE")
    show = command("show", "one mutant: its record and diff", _show)
    show.add_argument("id")
    show.add_argument("--store", type=Path, default=DEFAULT_STORE)
    report = command("report", "one report of every engine in the store", _report)
    report.add_argument("--store", type=Path, default=DEFAULT_STORE)
    for kind in ("json", "html", "markdown"):
        report.add_argument(f"--{kind}", type=Path, help=f"write the {kind} report here")
    gate = command("gate", "judge the store: exit 0 PASSED, 1 FAILED", _gate)
    gate.add_argument("--store", type=Path, default=DEFAULT_STORE)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())

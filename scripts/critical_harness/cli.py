"""The command line: options, subcommands, exit status, signals."""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from mutation_changes import changed_since
from mutation_io import InputError, check_output

from . import reuse
from .catalogue import load_config, project_root
from .model import (
    DEFAULT_CONFIG,
    EXIT_BAD_INPUT,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    RUNTIME_ENV,
    Config,
    ConfigError,
    Mutant,
    Result,
    RunReport,
    SetupError,
    Terminated,
)
from .orchestrate import execute
from .processes import become_subreaper
from .reports import render, report_json, report_junit, table_text, terminal_width
from .scope import by_change


def _common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    add = common.add_argument
    # SUPPRESS lets the same options appear before or after the subcommand without clobbering.
    add(
        "--config",
        type=Path,
        default=argparse.SUPPRESS,
        help="config file (default: mutation_config.toml in the repo root)",
    )
    add(
        "--jobs",
        type=_positive_int,
        default=argparse.SUPPRESS,
        help="parallel mutants (default: config jobs)",
    )
    add(
        "--only",
        action="append",
        metavar="ID",
        default=argparse.SUPPRESS,
        help="run only this mutant (repeatable)",
    )
    add(
        "--changed-since",
        metavar="REF",
        default=argparse.SUPPRESS,
        help="run only the mutants whose edited lines, or named tests, changed since git REF",
    )
    add(
        "--full",
        action="store_true",
        default=argparse.SUPPRESS,
        help="run the whole suite per mutant; print the kill matrix",
    )
    add(
        "--runtime",
        choices=("simulated", "cuda"),
        default=argparse.SUPPRESS,
        help=f"exported as {RUNTIME_ENV}",
    )
    add(
        "--engine",
        choices=("warm", "cold"),
        default=argparse.SUPPRESS,
        help="warm (default): a mutant inside one function's body runs in a child forked from a process "
        "that imported the package and collected the tests once; cold: a fresh interpreter per run "
        "(always on --runtime cuda)",
    )
    add(
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print tables at full width (otherwise clipped to the terminal; the JSON has everything)",
    )
    add(
        "--root",
        type=Path,
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="the project the catalogue describes (default: the git top-level of the working directory, "
        "else the config file's folder)",
    )
    add(
        "--reuse",
        type=Path,
        metavar="FILE",
        default=argparse.SUPPRESS,
        help="an earlier run's --json: keep each kill whose inputs (the entry, the package's code, its "
        "tests' code, the harness, the interpreter) are unchanged, and judge the rest",
    )
    add("--json", type=Path, metavar="FILE", default=argparse.SUPPRESS, help="write a JSON report")
    add("--junit", type=Path, metavar="FILE", default=argparse.SUPPRESS, help="write a JUnit XML report")
    return common


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    # Fresh option objects per parser: parents share Action objects, so set_defaults on the main
    # parser would otherwise turn the subcommands' SUPPRESS defaults into real ones.
    parser = argparse.ArgumentParser(
        prog="critical_mutants.py",
        description="Apply hand-written critical mutants to a temporary copy of the project and check "
        "that their named tests kill them. Exit 0: all killed; 1: a finding; 2: bad input or setup.",
        parents=[_common_options()],
    )
    parser.set_defaults(
        command="run",
        config=DEFAULT_CONFIG,
        jobs=None,
        only=[],
        changed_since=None,
        full=False,
        runtime="simulated",
        verbose=False,
        engine="warm",
        root=None,
        json=None,
        junit=None,
        reuse=None,
    )
    sub = parser.add_subparsers(dest="command", metavar="{run,list,show}")
    sub.add_parser("run", parents=[_common_options()], help="run the mutants (the default)")
    sub.add_parser("list", parents=[_common_options()], help="list the mutants: id, file, scope, why")
    show = sub.add_parser("show", parents=[_common_options()], help="print one mutant's unified diff")
    show.add_argument("mutant_id", metavar="ID")
    return parser


def _select(config: Config, only: list[str]) -> list[Mutant]:
    known = {m.spec.id for m in config.mutants}
    unknown = [i for i in only if i not in known]
    if unknown:
        raise ConfigError(f"--only: unknown mutant id(s): {', '.join(map(repr, unknown))}")
    return [m for m in config.mutants if not only or m.spec.id in only]


def cmd_list(config: Config, width: int | None = None) -> int:
    rows = [[m.spec.id, m.spec.file, m.spec.scope, m.spec.why] for m in config.mutants]
    print(table_text(["id", "file", "scope", "why"], rows, width))
    return EXIT_OK


def cmd_show(config: Config, mutant_id: str) -> int:
    mutant = next((m for m in config.mutants if m.spec.id == mutant_id), None)
    if mutant is None:
        raise ConfigError(f"show: unknown mutant id {mutant_id!r}")
    print(mutant.diff, end="")
    return EXIT_OK


def check_outputs(args: argparse.Namespace) -> None:
    """Every file the run will write, checked (its folder made) before any mutant runs."""
    for option, path in (("--json", args.json), ("--junit", args.junit)):
        if path is not None:
            try:
                check_output(path, option)
            except InputError as exc:
                raise ConfigError(str(exc)) from exc


def check_device(runtime: str) -> None:
    """``--runtime cuda`` needs a device that answers; without one, stop before the baseline."""
    if runtime != "cuda":
        return
    probe = (
        "from cuda.bindings import runtime as r\n"
        "err, count = r.cudaGetDeviceCount()\n"
        "print(int(err), count, r.cudaGetErrorName(err)[1].decode())\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
        )
        err, count, name = done.stdout.split()
    except (OSError, ValueError, subprocess.TimeoutExpired):
        raise SetupError(
            "--runtime cuda: cuda.bindings could not be asked for a device here "
            "(is cuda-bindings installed?); use --runtime simulated off a GPU host"
        ) from None
    if int(err) != 0 or int(count) < 1:
        raise SetupError(
            f"--runtime cuda: no CUDA device answers here ({name}, {count} device(s)); "
            "run on a GPU host, or use --runtime simulated"
        )


def cmd_run(config: Config, args: argparse.Namespace) -> int:
    check_outputs(args)
    check_device(args.runtime)
    selected = _select(config, args.only)
    if args.changed_since is not None:
        files = {m.spec.file for m in config.mutants}
        tests = sorted({test.split("::")[0] for m in config.mutants for test in m.spec.killed_by})
        changes = changed_since(args.changed_since, config.root).within(files, tests)
        selected, why = by_change(selected, changes)
        print(f"catalogue: {changes.describe()}\ncatalogue: scoped to the change: {why}")
        if not selected:
            print("catalogue: nothing needs judging")
            return 0
    report = _judge(config, args, selected)
    print(render(report, terminal_width(args.verbose)))
    if args.json is not None:
        args.json.write_text(json.dumps(report_json(report), indent=2) + "\n", encoding="utf-8")
    if args.junit is not None:
        report_junit(report).write(args.junit, encoding="utf-8", xml_declaration=True)
    return report.exit_code


def _judge(config: Config, args: argparse.Namespace, selected: list[Mutant]) -> RunReport:
    """The selected mutants' report: the kills ``--reuse`` still holds, the rest run now."""
    depends = reuse.digests(config, selected, args.runtime, args.full)
    kept: list[Result] = []
    if args.reuse is not None:
        kept, selected = reuse.split(selected, depends, reuse.read_earlier(args.reuse))
        print(f"catalogue: {len(kept)} verdict(s) reused from {args.reuse}; {len(selected)} to judge")
    if selected:
        report = execute(config, args, selected)
    else:
        report = RunReport([], args.runtime, args.full, 0.0, config.path, args.engine)
    judged = {r.mutant.spec.id for r in report.results}  # the canary runs whenever anything does
    order = {m.spec.id: i for i, m in enumerate(config.mutants)}
    results = [*report.results, *(r for r in kept if r.mutant.spec.id not in judged)]
    report.results = reuse.with_depends(sorted(results, key=lambda r: order[r.mutant.spec.id]), depends)
    return report


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    become_subreaper()
    # Explicit, because a shell starting us as a background job hands SIGINT down ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        config = load_config(args.config, project_root(args.root, args.config))
        if args.command == "list":
            return cmd_list(config, terminal_width(args.verbose))
        if args.command == "show":
            return cmd_show(config, args.mutant_id)
        return cmd_run(config, args)
    except (ConfigError, SetupError, InputError) as exc:
        kind = "config error" if isinstance(exc, ConfigError) else "error"
        print(f"critical_mutants: {kind}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("critical_mutants: interrupted; temporary copies removed", file=sys.stderr)
        return EXIT_SIGINT
    except Terminated:
        print("critical_mutants: terminated; temporary copies removed", file=sys.stderr)
        return EXIT_SIGTERM

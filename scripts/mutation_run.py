"""Run mutmut for CI: whole, one shard of N, or only the functions changed since a git ref; export, merge.

Subcommands (run from the repository root, where pyproject.toml and mutants/ live):

  run      generate mutants, pick this job's share, ``mutmut run`` it, export its results to JSON
  export   turn mutants/*.meta (mutmut's per-mutant exit codes) into the results JSON: after ``run``, or
           after a plain ``mutmut run`` (what CI runs)
  merge    join shard exports into one results JSON, checking they partition the same mutant list
  list     print the mutant names that ``run`` would test with the same options
  survivors  write every not-killed mutant with its diff (as ``mutmut show`` prints it)

mutmut itself always runs in a child process, so this process never imports pytest, the test
suite or CUDA; the child applies an optional TOML override of ``[tool.mutmut]`` (``--override``)
because mutmut only ever reads ./pyproject.toml.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import sys
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mutmut_reuse
from mutation_changes import Changes, changed_since, verify_ref
from mutation_common import MutantRecord, load_results, natural_key, parse_mutant_name
from mutation_io import InputError, check_output, read_toml
from mutation_scope import (
    associations,
    filter_by_functions,
    functions_reached_by,
    git_changed_functions,
    merge_associations,
    stats_targets,
)
from mutation_shards import merge_results, parse_shard, select_shard
from mutmut_child import OVERRIDE_ENV, child_generate, child_mutmut, child_stats, function_texts, run_child
from mutmut_export import RUN_COMMAND, export, read_meta, survivor_lines

DEFAULT_RESULTS = Path("reports/mutmut-results.json")


# --- selection ---------------------------------------------------------------------------------------


@dataclass
class Selection:
    names: list[str] | None  # None: everything
    scope: dict[str, Any]
    shard: dict[str, int] | None
    universe: list[str] | None  # the list the shard was cut from


def check_out(path: Path | None, args: argparse.Namespace) -> Path:
    """Where results go, checked before any mutant runs. A part of a run goes only where it was told."""
    partial = (
        getattr(args, "shard", None) or getattr(args, "changed_since", None) or getattr(args, "names", None)
    )
    if path is None:
        if partial:
            raise InputError(
                f"--out is required with --shard, --changed-since or --names: without it this partial "
                f"result would replace the whole run's {DEFAULT_RESULTS}"
            )
        path = DEFAULT_RESULTS
    check_output(path, "--out")
    return path


def _suite_tests(changed: Collection[str]) -> set[str]:
    """The changed test files that mutmut's own test selection runs (``[tool.mutmut]``)."""
    mutmut = read_toml(Path("pyproject.toml")).get("tool", {}).get("mutmut", {})
    under = [p.rstrip("/") for p in mutmut.get("pytest_add_cli_args_test_selection") or ["tests"]]
    return {t for t in changed if any(t == u or t.startswith(f"{u}/") for u in under)}


def _reached_by_changed_tests(
    changes: Changes, tests: Collection[str], override: Path | None
) -> set[str] | None:
    """The functions the changed tests among ``tests`` (files) reached in mutmut's last stats run and reach
    now (a stats run of them alone, in a child): a kill the old version made must be made again. What
    they reach now joins mutmut's record, so that its run gives each function those tests too (it runs
    stats again for new tests only). None where either record is missing or unreadable."""
    stats = Path("mutants/mutmut-stats.json")
    before = associations(stats)
    if before is None:
        return None
    with tempfile.TemporaryDirectory(prefix="mutmut-reach-") as tmp:
        record = Path(tmp, "reach.json")
        if run_child(["_stats", str(record), *stats_targets(changes, tests)], override) != 0:
            return None
        now = associations(record)
    if now is None:
        return None
    merge_associations(stats, now)
    changed = changes.changed_test
    return functions_reached_by(before, changed) | functions_reached_by(now, changed)


def refresh_built_files(mutants: Path = Path("mutants")) -> list[Path]:
    """Copy into ``mutants`` every file of mutmut's source paths that is not Python and differs there.

    mutmut copies a file into its folder only once and mutates only Python: a compiled core rebuilt since
    would otherwise go on running there as it was, against the tests of today.
    """
    if not mutants.is_dir():
        return []
    sources = read_toml(Path("pyproject.toml")).get("tool", {}).get("mutmut", {}).get("source_paths") or []
    refreshed = []
    for source in map(Path, sources):
        for path in sorted(source.rglob("*") if source.is_dir() else [source]):
            target = mutants / path
            if not path.is_file() or path.suffix == ".py" or not target.exists():
                continue
            if filecmp.cmp(path, target, shallow=False):
                continue
            shutil.copy2(path, target)
            refreshed.append(path)
    if refreshed:
        print(f"mutmut: refreshed in mutants/ what was built since: {', '.join(map(str, refreshed))}")
    return refreshed


def selection(args: argparse.Namespace) -> Selection:
    shard = parse_shard(args.shard) if args.shard else None
    refresh_built_files()
    if args.changed_since:
        verify_ref(args.changed_since, Path.cwd())  # before the minutes of generation, not after
    if args.max_children is not None and args.max_children < 1:
        raise InputError(f"--max-children must be >= 1, got {args.max_children}")
    if run_child(["_generate", str(args.max_children or os.cpu_count() or 1)], args.override) != 0:
        raise InputError("mutant generation failed (output above)")
    names: list[str] = sorted(read_meta(Path("mutants")), key=natural_key)
    scope: dict[str, Any] = {"kind": "full"}
    narrowed = False
    if args.changed_since:
        functions = git_changed_functions(args.changed_since, args.paths, Path.cwd())
        changes = changed_since(args.changed_since, Path.cwd())
        tests = _suite_tests(changes.tests)
        if tests:
            # A changed test re-judges what it reaches; with no record of what that is, everything.
            reached = _reached_by_changed_tests(changes, tests, args.override)
            functions |= {parse_mutant_name(n).function for n in names} if reached is None else reached
            print(
                f"mutmut: tests changed ({', '.join(stats_targets(changes, tests))}): "
                + (
                    "no record of what they reach, so every function"
                    if reached is None
                    else f"{len(reached)} function(s) they reach, as mutmut's last stats run recorded "
                    "and as a stats run of the changed tests alone records now"
                )
            )
        every = len(names)
        names = filter_by_functions(names, functions)
        print(
            f"mutmut: scoped to the change since {args.changed_since}: {len(names)} of {every} mutants, "
            f"of the function(s) whose code changed: {', '.join(sorted(functions)) or 'none'}"
        )
        scope = {"kind": "changed-since", "ref": args.changed_since, "functions": sorted(functions)}
        narrowed = True
    if shard is None:
        return Selection(names if narrowed else None, scope, None, None)
    index, count = shard
    return Selection(select_shard(names, index, count), scope, {"index": index, "count": count}, names)


def cmd_run(args: argparse.Namespace) -> int:
    out = check_out(args.out, args)
    earlier = None if args.reuse is None else load_results(args.reuse, hint="guard-mutation run mutmut")
    chosen = selection(args)
    meta = read_meta(Path("mutants"))
    names = chosen.names if chosen.names is not None else sorted(meta, key=natural_key)
    root, common = Path.cwd(), mutmut_reuse.base(Path.cwd(), args.override)

    def depends(name: str, tests: list[str]) -> str:
        return mutmut_reuse.digest(root, common, name, function_texts(name, meta[name][0]), tests)

    kept: dict[str, MutantRecord] = {}
    again = names
    if earlier is not None:
        kept, again = mutmut_reuse.split(names, earlier, lambda r: depends(r.name, r.tests))
        print(f"mutmut: {len(kept)} verdict(s) reused from {args.reuse}; {len(again)} to judge")
    mutmut_args = ["run"]
    if args.max_children:
        mutmut_args += ["--max-children", str(args.max_children)]
    if not again:
        print("no mutants to judge in this job" + ("" if names else "; writing an empty result"))
    else:
        # Named, every one: mutmut's own cache keeps a verdict while the function is unchanged, even
        # when the tests that killed it changed; here only the digest above keeps one.
        code = run_child(["_mutmut", *mutmut_args, *again], args.override)
        if code != 0:
            print(f"mutmut run failed with exit status {code}", file=sys.stderr)
            return 2
    results = export(chosen.names, scope=chosen.scope, shard=chosen.shard, universe=chosen.universe)
    tests_of = mutmut_reuse.test_files(Path("mutants/mutmut-stats.json"))
    results.mutants = mutmut_reuse.with_depends(
        results.mutants, kept, tests_of, lambda r, tests: depends(r.name, tests)
    )
    results.write(out)
    print(f"wrote {out} ({len(results.mutants)} mutants)")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    chosen = selection(args)
    names = chosen.names if chosen.names is not None else sorted(read_meta(Path("mutants")), key=natural_key)
    for name in names:
        print(name)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    out = check_out(args.out, args)
    names = None
    if args.names:
        names = [n for n in Path(args.names).read_text(encoding="utf-8").split() if n]
    export(names, scope={"kind": "full" if names is None else "names"}, shard=None).write(out)
    print(f"wrote {out}")
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    parts = [load_results(Path(p), hint=f"{RUN_COMMAND} run --shard I/N") for p in args.files]
    merged = merge_results(parts)
    merged.write(args.out)
    print(f"merged {len(parts)} shard(s), {len(merged.mutants)} mutants -> {args.out}")
    return 0


def cmd_survivors(args: argparse.Namespace) -> int:
    results = load_results(args.results, hint=f"{RUN_COMMAND} run")
    lines = survivor_lines(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(f"{sum(1 for line in lines if line.startswith('# '))} not-killed mutant(s) -> {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mutation_run.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def selecting(p: argparse.ArgumentParser) -> None:
        p.add_argument("--shard", metavar="I/N", help="test only shard I (1-based) of N")
        p.add_argument("--changed-since", metavar="REF", help="test only functions changed since git REF")
        p.add_argument("--paths", nargs="+", default=["guard_lib"], help="paths --changed-since diffs")
        p.add_argument("--max-children", type=int, help="parallel mutmut workers (default: CPU count)")
        p.add_argument(
            "--override",
            type=Path,
            default=Path(os.environ[OVERRIDE_ENV]) if os.environ.get(OVERRIDE_ENV) else None,
            help=f"TOML whose [tool.mutmut] overrides pyproject's (env {OVERRIDE_ENV})",
        )

    run = sub.add_parser("run", help="generate, select, mutmut run, export")
    selecting(run)
    run.add_argument(
        "--out",
        type=Path,
        help=f"results JSON to write (default {DEFAULT_RESULTS}; required with --shard or --changed-since)",
    )
    run.add_argument(
        "--reuse",
        type=Path,
        metavar="RESULTS",
        help="an earlier whole run's results: keep each kill whose inputs (the mutant, the package's code, "
        "the tests that reach it and their code, the interpreter) are unchanged, and judge the rest",
    )
    run.set_defaults(func=cmd_run)

    lst = sub.add_parser("list", help="print the mutants run would test")
    selecting(lst)
    lst.set_defaults(func=cmd_list)

    exp = sub.add_parser("export", help="export mutants/*.meta verdicts to results JSON")
    exp.add_argument("--names", help="file of mutant names (whitespace separated) to export; default all")
    exp.add_argument("--out", type=Path, help=f"default {DEFAULT_RESULTS}; required with --names")
    exp.set_defaults(func=cmd_export)

    mrg = sub.add_parser("merge", help="merge shard result files")
    mrg.add_argument("files", nargs="+")
    mrg.add_argument("--out", type=Path, default=DEFAULT_RESULTS)
    mrg.set_defaults(func=cmd_merge)

    srv = sub.add_parser("survivors", help="write not-killed mutants with their diffs")
    srv.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    srv.add_argument("--out", type=Path, default=Path("reports/survivors.txt"))
    srv.set_defaults(func=cmd_survivors)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        # private entry points for the child processes; not part of --help
        if args_list[:1] == ["_mutmut"]:
            return child_mutmut(args_list[1:])
        if args_list[:1] == ["_generate"]:
            return child_generate(int(args_list[1]))
        if args_list[:1] == ["_stats"]:
            return child_stats(Path(args_list[1]), args_list[2:])
        args = build_parser().parse_args(args_list)
        code: int = args.func(args)
        return code
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

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
import difflib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mutation_common import (
    InputError,
    MutantRecord,
    Results,
    check_output,
    filter_by_functions,
    git_changed_functions,
    load_results,
    merge_results,
    mutable_units,
    natural_key,
    parse_mutant_name,
    parse_shard,
    read_toml,
    select_shard,
    status_for_exit_code,
    universe_of,
    verify_ref,
)

SCRIPT = Path(__file__).resolve()
IMPL_ENV = "GUARD_LIB_IMPL"
OVERRIDE_ENV = "GUARD_LIB_MUTMUT_OVERRIDE"
DEFAULT_RESULTS = Path("reports/mutmut-results.json")


# --- reading mutmut's state -------------------------------------------------------------------------


def read_meta(mutants_dir: Path) -> dict[str, tuple[str, int | None, float | None]]:
    """name -> (source path, exit code, duration) from every ``mutants/**/*.py.meta``.

    The .meta files are mutmut's own record of verdicts: ``mutmut results`` and
    ``mutmut export-cicd-stats`` are both computed from them, but the first is human-oriented text
    that hides killed mutants unless ``--all true`` and the second only has totals.
    """
    if not mutants_dir.is_dir():
        raise InputError(f"{mutants_dir}/ does not exist. Run `mutmut run` (or `{_self()} run`) first.")
    found: dict[str, tuple[str, int | None, float | None]] = {}
    for meta in sorted(mutants_dir.rglob("*.py.meta")):
        source = meta.relative_to(mutants_dir).as_posix().removesuffix(".meta")
        if not Path(source).is_file():
            # a meta file left behind by a deleted source file is not a current mutant
            continue
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
            exit_codes: dict[str, int | None] = data["exit_code_by_key"]
            durations: dict[str, float] = data.get("durations_by_key", {})
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InputError(f"{meta}: unreadable mutmut meta file ({exc}). Re-run `mutmut run`.") from exc
        for name, code in exit_codes.items():
            found[name] = (source, code, durations.get(name))
    if not found:
        raise InputError(f"no mutants recorded under {mutants_dir}/. Run `mutmut run` first.")
    return found


def _self() -> str:
    return "python scripts/mutation_run.py"


# --- where a mutant is in the original file ---------------------------------------------------------


@dataclass
class Located:
    diff: str
    line: int
    column: int
    end_line: int
    end_column: int
    original: str
    replacement: str
    mutator: str


_DEF_RE = re.compile(r"^\s*(async\s+)?def\s")


def locate(name: str, source_path: str, source: str, orig_code: str, mutant_code: str) -> Located:
    """Map the mutant's change (function-relative, as ``mutmut show`` diffs it) onto the source file."""
    diff = "\n".join(
        difflib.unified_diff(
            orig_code.split("\n"),
            mutant_code.split("\n"),
            fromfile=source_path,
            tofile=source_path,
            lineterm="",
        )
    )
    orig_lines = orig_code.split("\n")
    mut_lines = mutant_code.split("\n")
    matcher = difflib.SequenceMatcher(a=orig_lines, b=mut_lines, autojunk=False)
    changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    qualname = parse_mutant_name(name).qualname
    span = next((s for s in mutable_units(source) if s.qualname == qualname), None)
    if not changes or span is None:
        line = span.def_line if span else 1
        return Located(diff, line, 1, line, 1, "", "", "Mutation")
    i1, j1 = changes[0][1], changes[0][3]
    i2, j2 = changes[-1][2], changes[-1][4]
    old_text = "\n".join(orig_lines[i1:i2])
    new_text = "\n".join(mut_lines[j1:j2])
    prefix = _common_prefix(old_text, new_text)
    suffix = _common_suffix(old_text[prefix:], new_text[prefix:])
    # widen to whole tokens: "<" -> "<=" reads better in a report than "" -> "="
    prefix -= _token_run(old_text[:prefix][::-1])
    suffix -= _token_run(old_text[len(old_text) - suffix :]) if suffix else 0
    original = old_text[prefix : len(old_text) - suffix]
    replacement = new_text[prefix : len(new_text) - suffix]

    def_index = next((i for i, text in enumerate(orig_lines) if _DEF_RE.match(text)), 0)
    file_lines = source.splitlines()
    anchor = orig_lines[min(i1, len(orig_lines) - 1)]
    first_line = span.def_line + (i1 - def_index)
    # Trust the arithmetic only if it lands on the same text; otherwise search inside the function.
    if not _same_line(file_lines, first_line, anchor):
        first_line = next(
            (n for n in range(span.start, span.end + 1) if _same_line(file_lines, n, anchor)), span.def_line
        )
    # methods come back dedented from libcst; shift columns by the file's extra indentation
    file_text = file_lines[first_line - 1] if 1 <= first_line <= len(file_lines) else anchor
    indent = (len(file_text) - len(file_text.lstrip())) - (len(anchor) - len(anchor.lstrip()))

    def position(offset: int) -> tuple[int, int]:
        line_start = old_text.rfind("\n", 0, offset) + 1
        return first_line + old_text.count("\n", 0, offset), offset - line_start + 1 + indent

    line, column = position(prefix)
    end_line, end_column = position(len(old_text) - suffix)
    return Located(
        diff=diff,
        line=max(line, 1),
        column=max(column, 1),
        end_line=max(end_line, 1),
        end_column=max(end_column, 1),
        original=original,
        replacement=replacement,
        mutator=mutator_name(original, replacement),
    )


_WORD = re.compile(r"[\w.]")
_OPERATOR = re.compile(r"[<>=!+\-*/%&|^~@]")


def _token_run(text: str) -> int:
    """Length of the run at the start of ``text`` made of one kind of token character."""
    if not text:
        return 0
    kind = _WORD if _WORD.match(text[0]) else _OPERATOR if _OPERATOR.match(text[0]) else None
    if kind is None:
        return 0
    n = 0
    while n < len(text) and kind.match(text[n]):
        n += 1
    return n


def _same_line(file_lines: list[str], number: int, text: str) -> bool:
    return 1 <= number <= len(file_lines) and file_lines[number - 1].strip() == text.strip()


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _common_suffix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


_OPERATOR_TEXT = re.compile(r"([<>=!+\-*/%&|^~@]+|and|or|not|is|in|is not|not in)")


def mutator_name(original: str, replacement: str) -> str:  # noqa: PLR0911 - a flat decision table
    """A category for the report; mutmut does not record which operator made a mutant."""
    o, r = original.strip(), replacement.strip()
    if r == "None":
        return "NoneReplacement"
    if {o, r} <= {"True", "False"}:
        return "BooleanLiteral"
    if "XX" in r or (r[-1:] in {"'", '"'} and o[-1:] in {"'", '"'}):
        return "StringLiteral"
    if re.fullmatch(r"-?[\d.]+(e-?\d+)?j?", o) and re.fullmatch(r"-?[\d.]+(e-?\d+)?j?", r):
        return "NumberLiteral"
    if {o, r} <= {"break", "continue", "return"}:
        return "KeywordReplacement"
    if _OPERATOR_TEXT.fullmatch(o) and _OPERATOR_TEXT.fullmatch(r):
        return "OperatorReplacement"
    if not r or (len(r) < len(o) and r in o):
        return "Removal"
    return "Mutation"


def function_texts(name: str, source_path: str) -> tuple[str, str]:
    """The unmutated copy and the mutant of a function, exactly as ``mutmut show`` diffs them."""
    # imported here so the gate/merge paths of this module work without mutmut and libcst
    import libcst as cst
    from mutmut.mutation.diff_apply import (
        read_functions_from_index,
        read_mutant_function,
        read_mutants_module,
        read_original_function,
    )

    functions = read_functions_from_index(name, source_path)
    if functions is None:
        module = read_mutants_module(source_path)
        functions = (read_original_function(module, name), read_mutant_function(module, name))
    orig, mutant = (cst.Module([function]).code.strip() for function in functions)
    return orig, mutant


def export(
    names: Sequence[str] | None,
    *,
    scope: dict[str, Any],
    shard: dict[str, int] | None,
    universe: Sequence[str] | None = None,
) -> Results:
    """Results for ``names`` (default: every mutant); ``universe`` is the list a shard was cut from."""
    meta = read_meta(Path("mutants"))
    wanted = sorted(meta, key=natural_key) if names is None else list(names)
    unknown = [n for n in wanted if n not in meta]
    if unknown:
        raise InputError(f"export: {len(unknown)} selected mutant(s) are not in mutants/: {unknown[:5]}")
    sources: dict[str, str] = {}
    records: list[MutantRecord] = []
    for name in wanted:
        path, exit_code, duration = meta[name]
        if path not in sources:
            sources[path] = Path(path).read_text(encoding="utf-8")
        orig, mutant = function_texts(name, path)
        where = locate(name, path, sources[path], orig, mutant)
        records.append(
            MutantRecord(
                name=name,
                file=path,
                status=status_for_exit_code(exit_code),
                exit_code=exit_code,
                diff=where.diff,
                line=where.line,
                column=where.column,
                end_line=where.end_line,
                end_column=where.end_column,
                replacement=where.replacement,
                original=where.original,
                mutator=where.mutator,
                duration=duration,
            )
        )
    return Results(
        mutants=records,
        scope=scope,
        shard=shard,
        universe=universe_of(wanted if universe is None else universe),
        sources=sources,
        mutmut_version=_mutmut_version(),
    )


def _mutmut_version() -> str:
    try:
        return importlib.metadata.version("mutmut")
    except importlib.metadata.PackageNotFoundError:
        return ""


# --- running mutmut in a child ------------------------------------------------------------------------


def _child(args: list[str], override: Path | None) -> int:
    cmd = [sys.executable, str(SCRIPT), *args]
    env = dict(os.environ)
    # mutmut mutates the Python reference, so the tests must import it rather than the compiled core.
    # guard_lib takes it by itself in mutmut's copy; by name here, so an exported GUARD_LIB_IMPL cannot
    # turn a sharded or scoped run into one whose tests never reach a mutant.
    env[IMPL_ENV] = "python"
    if override is not None:
        env[OVERRIDE_ENV] = str(override)
    if sys.stdout.isatty():
        return subprocess.run(cmd, env=env, check=False).returncode
    # Into a log: mutmut's spinner frames would pile up on one line; keep each line's last frame.
    # Bytes, split on "\n" only: text mode would turn every "\r" of a redrawn line into a line of its own.
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as proc:
        assert proc.stdout is not None
        previous = None
        for raw in proc.stdout:
            cleaned = log_line(raw.decode("utf-8", errors="replace"))
            if cleaned is not None and cleaned != previous:
                print(cleaned, flush=True)
            previous = cleaned
    return proc.returncode


_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def log_line(line: str) -> str | None:
    """A line of mutmut's output as a log should hold it: the last frame of a line redrawn in place,
    without its spinner; None for what a log does not need (a note about copying a file that is absent)."""
    frame = line.rstrip("\n").split("\r")[-1].rstrip()
    if frame[:1] in _SPINNER and frame[1:2] == " ":
        frame = frame[2:]
    words = frame.split()
    if words[:2] == ["also", "copying"] and len(words) == 3 and not Path(words[2]).exists():
        return None
    return frame if frame.strip() else None


def _install_override() -> None:
    """Layer ``[tool.mutmut]`` of ``$GUARD_LIB_MUTMUT_OVERRIDE`` over pyproject's, before mutmut reads it.

    mutmut 3.8 has no --config option or env var; it reads ./pyproject.toml once through
    ``mutmut.configuration._config_reader``, so wrapping that reader is the narrowest hook.
    """
    path = os.environ.get(OVERRIDE_ENV)
    if not path:
        return
    extra = read_toml(Path(path)).get("tool", {}).get("mutmut", {})
    if not isinstance(extra, dict) or not extra:
        raise InputError(f"{path}: has no [tool.mutmut] table to override with")
    from mutmut import configuration

    base_reader = configuration._config_reader

    def reader() -> Any:
        base = base_reader()

        def lookup(key: str, default: Any) -> Any:
            return extra[key] if key in extra else base(key, default)

        return lookup

    configuration._config_reader = reader
    configuration.reset_config()


def _run_fastest_tests_first_in_forkserver() -> None:
    """Give the fork server's workers a mutant's tests fastest first, as mutmut's fork runner does.

    mutmut 3.8's ``ForkRunner`` sorts a mutant's tests by their stats-pass duration before ``pytest -x``,
    so the cheapest failing test kills the mutant; ``ForkServerRunner.submit`` passes them in set order
    (random from run to run), so a mutant could first meet the hypothesis state machine, which shrinks a
    failure for longer than mutmut's wall timeout: a "timeout" verdict, slower, and different from the
    fork run's "killed". Sorting here (by duration, then name) restores the fork runner's order.
    """
    from mutmut.state import state
    from mutmut.workers.isolation import ForkServerRunner

    submit = ForkServerRunner.submit

    def fastest_first(
        self: ForkServerRunner, mutant_name: str, tests: list[str], cpu_time_limit: int, estimated_time: float
    ) -> None:
        durations = state().duration_by_test
        ordered = sorted(tests, key=lambda test: (durations.get(test, 0.0), test))
        submit(self, mutant_name, ordered, cpu_time_limit, estimated_time)

    ForkServerRunner.submit = fastest_first  # type: ignore[method-assign]


def _prepare_child_process() -> None:
    # this script's directory must not shadow anything the tests import
    script_dir = str(SCRIPT.parent)
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(script_dir)]
    _install_override()
    _run_fastest_tests_first_in_forkserver()


def child_mutmut(argv: list[str]) -> int:
    _prepare_child_process()
    from mutmut.__main__ import cli

    try:
        cli.main(args=argv, prog_name="mutmut", standalone_mode=True)
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    return 0


def child_generate(max_children: int) -> int:
    """The mutant-generation prefix of ``mutmut run``: writes mutants/ and the .meta name lists.

    It runs no test, so listing or sharding the mutants costs seconds; the later ``mutmut run``
    finds the files up to date (mutmut compares mtimes) and keeps the same names.
    """
    _prepare_child_process()
    # imported only after the override is installed; mutmut.__main__ also sets the fork start method
    from mutmut.__main__ import create_mutants, store_lines_covered_by_tests
    from mutmut.utils.file_utils import (
        copy_also_copy_files,
        copy_src_dir,
        setup_source_paths,
    )

    Path("mutants").mkdir(exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    store_lines_covered_by_tests()
    stats = create_mutants(max_children)
    print(f"generated mutants: {stats.mutated} files mutated, {stats.unmodified} unchanged")
    return 0


# --- selection ---------------------------------------------------------------------------------------


@dataclass
class Selection:
    names: list[str] | None  # None: everything, so mutmut may reuse cached verdicts
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


def selection(args: argparse.Namespace) -> Selection:
    shard = parse_shard(args.shard) if args.shard else None
    if args.changed_since:
        verify_ref(args.changed_since, Path.cwd())  # before the minutes of generation, not after
    if args.max_children is not None and args.max_children < 1:
        raise InputError(f"--max-children must be >= 1, got {args.max_children}")
    if _child(["_generate", str(args.max_children or os.cpu_count() or 1)], args.override) != 0:
        raise InputError("mutant generation failed (output above)")
    names: list[str] = sorted(read_meta(Path("mutants")), key=natural_key)
    scope: dict[str, Any] = {"kind": "full"}
    narrowed = False
    if args.changed_since:
        functions = git_changed_functions(args.changed_since, args.paths, Path.cwd())
        names = filter_by_functions(names, functions)
        scope = {"kind": "changed-since", "ref": args.changed_since, "functions": sorted(functions)}
        narrowed = True
    if shard is None:
        return Selection(names if narrowed else None, scope, None, None)
    index, count = shard
    return Selection(select_shard(names, index, count), scope, {"index": index, "count": count}, names)


def cmd_run(args: argparse.Namespace) -> int:
    out = check_out(args.out, args)
    chosen = selection(args)
    mutmut_args = ["run"]
    if args.max_children:
        mutmut_args += ["--max-children", str(args.max_children)]
    if chosen.names is not None and not chosen.names:
        print("no mutants selected for this job; writing an empty result")
    else:
        code = _child(["_mutmut", *mutmut_args, *(chosen.names or [])], args.override)
        if code != 0:
            print(f"mutmut run failed with exit status {code}", file=sys.stderr)
            return 2
    results = export(chosen.names, scope=chosen.scope, shard=chosen.shard, universe=chosen.universe)
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
    parts = [load_results(Path(p), hint=f"{_self()} run --shard I/N") for p in args.files]
    merged = merge_results(parts)
    merged.write(args.out)
    print(f"merged {len(parts)} shard(s), {len(merged.mutants)} mutants -> {args.out}")
    return 0


def cmd_survivors(args: argparse.Namespace) -> int:
    results = load_results(args.results, hint=f"{_self()} run")
    lines: list[str] = []
    for mutant in sorted(results.mutants, key=lambda m: natural_key(m.name)):
        if mutant.status in {"killed", "caught by type check", "timeout", "segfault"}:
            continue
        lines += [f"# {mutant.name}: {mutant.status}  ({mutant.file}:{mutant.line})", mutant.diff, ""]
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
        args = build_parser().parse_args(args_list)
        code: int = args.func(args)
        return code
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""The proof of a change (``guard-mutation run --changed-since REF``): the tests on the unmutated tree first,
then every engine scoped to the change, judged here; the store is not touched.

A red tree stops the run before any mutant (exit 1, naming the failing tests). What the engines and pytest
print goes to a log under the output folder; an engine that fails is named with its log, never its
traceback. Each mutant not killed is shown with its diff, and said to reverse the change where it does.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mutation_model import CRITICAL, Record

from . import scoped, side_by_side
from .engines import ENGINES, RunOptions

if TYPE_CHECKING:
    from mutation_changes import Changes

REVERSES = (
    "    it only reverses the change: the change itself is what the tests cannot tell apart: add a test "
    "that pins it, or review it as equivalent in mutation_config.toml with a reason"
)


SHOWN = 10  # failing tests named on the terminal; the log holds them all


class ProofError(Exception):
    """Bad input, or an engine that did not run to the end: exit 2."""


def run(args: argparse.Namespace, names: list[str], earlier: dict[str, Path]) -> int:
    from mutation_changes import changed_since
    from mutation_io import InputError
    from mutation_sweep.config import ConfigError
    from mutation_sweep.results import ResultsError

    try:
        found = changed_since(args.changed_since, Path.cwd())  # the ref checked before any engine starts
    except InputError as exc:
        raise ProofError(str(exc)) from exc
    config = args.config or Path("mutation_config.toml")
    outs = {name: args.out_dir / f"{name}.json" for name in names}
    logs = [args.out_dir / "baseline.log", *(o.with_suffix(".log") for o in outs.values())]
    for stale in [*outs.values(), *logs, *([args.markdown] if args.markdown else [])]:
        stale.unlink(missing_ok=True)  # an earlier run's results and summary are not this one's
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if (found.lines or found.tests) and not _green(config, logs[0]):  # no code changed: nothing to judge
        return 1
    options = RunOptions(jobs=args.jobs, changed_since=args.changed_since, reuse=earlier)
    ended = side_by_side.run(names, options, outs)
    verdicts = []
    for name in names:
        code, took = ended[name]
        if code not in (0, 1):
            log = outs[name].with_suffix(".log")
            raise ProofError(f"{name} did not run to the end (exit status {code}); its output: {log}")
        try:
            judged = (
                ENGINES[name].judge_scoped(outs[name], config) if outs[name].exists() else scoped.Judged(name)
            )
        except (InputError, ResultsError, ConfigError) as exc:
            raise ProofError(f"{name}: {exc}") from exc
        verdicts.append(judged)
        sys.stdout.write(f"guard-mutation: {judged.describe()} ({took:.1f}s)\n")
    alive = [shown(r, found.commit) for judged in verdicts for r in judged.not_killed]
    if args.markdown is not None:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(scoped.markdown(_seen(found, config), verdicts, alive), "utf-8")
    sys.stdout.writelines(f"{line}\n" for lines in alive for line in lines)
    if not any(j.total for j in verdicts):
        sys.stdout.write(f"guard-mutation: nothing changed since {args.changed_since} needs judging\n")
    return 1 if alive else 0


def _green(config: Path, log: Path) -> bool:
    """The engines' suite on the unmutated tree, on each implementation they judge; where it is red, the
    failing tests and how to run one again are the run's last lines."""
    from mutation_sweep.config import ConfigError, load

    try:
        cfg = load(config)
        pytest_args, package = list(cfg.pytest_args), cfg.package
    except ConfigError:
        pytest_args, package = [], ""
    built = package and any(Path(package).glob("*.so"))
    output = ""
    for impl in ("python", "compiled") if built else ("python",):
        command = [sys.executable, "-m", "pytest", *pytest_args, "-p", "no:cacheprovider", "-q", "-rfE"]
        done = subprocess.run(
            command,
            env={**os.environ, "GUARD_LIB_IMPL": impl},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            check=False,
        )
        output += f"$ GUARD_LIB_IMPL={impl} {' '.join(command)}\n{done.stdout}"
        log.write_text(output, encoding="utf-8")
        if done.returncode not in (0, 5):  # 5: no test collected
            failed = re.findall(r"^(?:FAILED|ERROR) (\S+?)(?: - .*)?$", done.stdout, re.MULTILINE)
            sys.stdout.write(
                f"guard-mutation: the tests fail on the unmutated tree (GUARD_LIB_IMPL={impl}, pytest exit "
                f"status {done.returncode}), so no mutant is judged; pytest's output: {log}\n"
            )
            failed = list(dict.fromkeys(failed))
            sys.stdout.writelines(f"  failed: {test}\n" for test in failed[:SHOWN])
            if len(failed) > SHOWN:
                sys.stdout.write(f"  and {len(failed) - SHOWN} more, in {log}\n")
            if failed:
                again = f"GUARD_LIB_IMPL={impl} python -m pytest '{failed[0]}'"
                sys.stdout.write(f"guard-mutation: run one again: {again}\n")
            return False
    return True


def shown(record: Record, commit: str) -> list[str]:
    """A mutant not killed: one line saying what and where, its diff, and whether it only reverses the
    change (its mutated file is the file as ``commit`` holds it)."""
    from mutation_changes import code_of, text_at

    m = record.mutant
    where = m.file if m.engine == CRITICAL else f"{m.file}:{m.line}"
    head = f"  not killed: {m.id} ({where} {m.scope}): {record.outcome.status}"
    now = Path(m.file).read_text(encoding="utf-8") if m.file and Path(m.file).is_file() else None
    mutated = None if now is None else _mutated(record, now)
    if now is None or mutated is None:
        diff = [line for line in m.diff.splitlines() if line] or [f"-{m.original}", f"+{m.mutated}"]
        return [head, *(f"    {line}" for line in diff)]
    diff = list(
        difflib.unified_diff(now.splitlines(), mutated.splitlines(), m.file, m.file, n=1, lineterm="")
    )
    before = text_at(Path.cwd(), commit, m.file)
    try:
        reverses = bool(before) and code_of(mutated) == code_of(before)
    except SyntaxError:  # a version that does not tokenize: compared as text
        reverses = mutated == before
    return [head, *(f"    {line}" for line in diff), *([REVERSES] if reverses else [])]


def _mutated(record: Record, now: str) -> str | None:
    """``now`` with the mutant applied: its diff's hunks, else its text in its lines; None where neither
    fits the file as it is."""
    lines = now.splitlines(keepends=True)
    hunks = re.split(r"^@@[^\n]*\n", record.mutant.diff, flags=re.MULTILINE)[1:]
    for hunk in hunks:
        body = [line for line in hunk.splitlines() if line[:1] in (" ", "-", "+")]
        old = [line[1:] for line in body if line[0] != "+"]
        new = [line[1:] + "\n" for line in body if line[0] != "-"]
        starts = [i for i in range(len(lines)) if [x.rstrip("\n") for x in lines[i : i + len(old)]] == old]
        if len(starts) != 1:
            return None
        lines[starts[0] : starts[0] + len(old)] = new
    if hunks:
        return "".join(lines)
    m = record.mutant
    region = "".join(lines[m.line - 1 : m.end_line])
    if not m.original or m.original not in region:
        return None
    return "".join([*lines[: m.line - 1], region.replace(m.original, m.mutated, 1), *lines[m.end_line :]])


def _seen(found: Changes, config: Path) -> str:
    """The change as the engines see it: in the package they mutate and the tests they run."""
    from mutation_sweep.config import ConfigError, load, test_paths

    try:
        cfg = load(config)
    except ConfigError:
        return found.describe()
    tests = test_paths(cfg.pytest_args, Path.cwd())
    return found.within([f for f in found.lines if f.startswith(f"{cfg.package}/")], tests).describe()

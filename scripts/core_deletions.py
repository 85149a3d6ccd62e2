#!/usr/bin/env python3
"""Delete each statement of the compiled core in turn, rebuild it, and require the tests to fail.

A second engine for ``guard_lib/_core.pyx``, written apart from the critical catalogue: mutmut, the sweep
and cosmic-ray read only Python, so this one covers the Cython source by brute force. Every one-line
statement inside a definition becomes ``pass`` in a copy of the project; the copy's core is rebuilt and
the behaviour tests run against it (``GUARD_LIB_IMPL=compiled``, stopping at the first failure).

Verdicts: killed (a test failed, or the test process crashed), survived (all passed), reviewed (survived,
and an entry of ``[[reviewed]]`` with ``engine = "core-deletions"`` in mutation_config.toml says why that
changes no behaviour: keyed by the function and the statement's text), invalid (the mutated core did not
build, or pytest could not run). Exit 0 when nothing survived unreviewed and every review still matches
a survivor, 1 otherwise, 2 for bad input.

    python scripts/core_deletions.py --jobs 8 --json reports/core-deletions.json

Its ``--json`` file says which deletions it judged out of how many (``universe``): a run of ``--lines``
or ``--changed-since`` is a part, which ``guard-mutation`` judges as the proof of a change but never
stores as a whole run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from critical_harness.compiled import HEADER as _HEADER
from critical_harness.engine import tail
from mutation_config_file import ConfigFileError, read_config, reviewed

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "guard_lib/_core.pyx"
ENGINE = "core-deletions"  # its name in [[reviewed]]
# Lines that are not statements of their own, or whose removal the compiler refuses anyway.
_SKIPPED_STARTS = ("#", '"', "'", "@", "def ", "cdef ", "class ", "else", "elif", "except", "finally", "try")
_OPENERS = {"(": ")", "[": "]", "{": "}"}


FORMAT, VERSION = "guard-lib-core-deletions", 1


@dataclass(frozen=True)
class Deletion:
    line: int  # 1-based
    scope: str  # the enclosing definitions, dotted
    text: str
    verdict: str = ""
    detail: str = ""
    occurrence: int = 1  # the same text deleted again in the same scope: 2, 3, ... in source order

    @property
    def id(self) -> str:
        """Named by what it deletes, never by its line: stays when code elsewhere moves."""
        named = f"{self.scope}|{self.text}" + ("" if self.occurrence == 1 else f"#{self.occurrence}")
        return f"deletion-{hashlib.sha256(named.encode()).hexdigest()[:12]}"


def universe(deletions: Sequence[Deletion]) -> dict[str, object]:
    ids = sorted(d.id for d in deletions)
    return {"count": len(ids), "sha256": hashlib.sha256("\n".join(ids).encode()).hexdigest()}


def _depth_change(text: str) -> int:
    return sum(char in _OPENERS for char in text) - sum(char in _OPENERS.values() for char in text)


def candidates(source: str) -> list[Deletion]:
    """Every one-line statement inside a definition, as a deletion to try.

    Not docstrings, not lines inside a statement that spans several, not block headers (their removal
    only fails to compile) and not C declarations (``cdef ...``: their removal does too).
    """
    found: list[Deletion] = []
    depth = 0
    in_string = False
    scopes: list[tuple[int, str]] = []
    for number, line in enumerate(source.splitlines(), start=1):
        stripped = line.strip()
        header = None if depth or in_string else _HEADER.match(line)
        if header is not None:
            indent = len(header["indent"])
            scopes = [(i, n) for i, n in scopes if i < indent] + [(indent, header["name"])]
        starts_inside = depth > 0 or in_string
        if stripped.count('"""') % 2:
            in_string = not in_string
        if not in_string and '"""' not in stripped:
            depth += _depth_change(stripped)
        if starts_inside or depth or in_string or '"""' in stripped:
            continue
        if not line.startswith((" ", "\t")) or not stripped or stripped.startswith(_SKIPPED_STARTS):
            continue
        if stripped.endswith(":") or stripped == "pass":
            continue
        indent = len(line) - len(line.lstrip())
        scope = ".".join(n for i, n in scopes if i < indent) or "<module>"
        seen = len([d for d in found if (d.scope, d.text) == (scope, stripped)])
        found.append(Deletion(number, scope, stripped, occurrence=seen + 1))
    return found


def _copy_project(where: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = ROOT / rel
        if source.is_file():
            (where / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, where / rel)
    return where


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str]:
    try:
        done = subprocess.run(
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return None, "timed out"
    return done.returncode, tail(done.stdout + done.stderr)


def judge(deletion: Deletion, source: str, tests: list[str], scratch: Path, timeout: float) -> Deletion:
    project = _copy_project(scratch / f"line{deletion.line}")
    lines = source.splitlines(keepends=True)
    line = lines[deletion.line - 1]
    lines[deletion.line - 1] = line[: len(line) - len(line.lstrip())] + "pass\n"
    (project / SOURCE).write_text("".join(lines), encoding="utf-8")
    env = {**os.environ, "GUARD_LIB_BUILD": "compiled", "GUARD_LIB_IMPL": "compiled"}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(project), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    )
    try:
        code, tail = _run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], project, env, timeout)
        if code != 0:
            return replace(deletion, verdict="invalid", detail=f"does not build: {tail}")
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
        code, tail = _run(cmd, project, env, timeout)
        if code is not None and code < 0:
            return replace(deletion, verdict="killed", detail=f"the tests crashed (signal {-code})")
        verdict = {0: "survived", 1: "killed"}.get(code if code is not None else -1, "invalid")
        return replace(deletion, verdict=verdict, detail=tail)
    finally:
        shutil.rmtree(project, ignore_errors=True)


def default_tests() -> list[str]:
    """The behaviour suite, file by file: what judges the core (the other tests judge the tooling)."""
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "behaviour").glob("test_*.py"))


def reviews(config: Path) -> dict[tuple[str, str], str]:
    """The core deletions' ``[[reviewed]]`` entries: (scope, text) -> reason; ConfigFileError if malformed."""
    return {(e["scope"], e["text"]): e["reason"] for _, e in reviewed(read_config(config), config, ENGINE)}


def settle_reviews(
    results: Sequence[Deletion], reviewed: dict[tuple[str, str], str]
) -> tuple[list[Deletion], list[str]]:
    """Survivors a review explains become ``reviewed``; a review that matches no survivor is stale."""
    settled = [
        replace(r, verdict="reviewed", detail=reviewed[(r.scope, r.text)])
        if r.verdict == "survived" and (r.scope, r.text) in reviewed
        else r
        for r in results
    ]
    matched = {(r.scope, r.text) for r in settled if r.verdict == "reviewed"}
    return settled, [f"{scope}: {text}" for scope, text in reviewed if (scope, text) not in matched]


def _selected(
    every: list[Deletion], args: argparse.Namespace, parser: argparse.ArgumentParser
) -> list[Deletion]:
    """The deletions ``--changed-since`` and ``--lines`` leave of ``every`` (all of them without either)."""
    todo = every
    if args.changed_since is not None:
        from mutation_changes import changed_since
        from mutation_io import InputError

        try:
            changed = changed_since(args.changed_since, ROOT).lines.get(SOURCE, frozenset())
        except InputError as error:
            parser.error(str(error))
        todo = [d for d in todo if d.line in changed]
        print(f"core deletions: scoped to the change: {len(todo)} of {len(every)} deletions, on its lines")
    if args.lines:
        unknown = sorted(set(args.lines) - {d.line for d in todo})
        if unknown:
            parser.error(
                f"--lines: {', '.join(map(str, unknown))} hold no statement this tool deletes in {SOURCE}"
            )
        todo = [d for d in todo if d.line in args.lines]
    return todo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="deletions judged at once")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per build and per test run")
    parser.add_argument("--json", type=Path, help="also write every deletion and its verdict here")
    parser.add_argument("--tests", nargs="+", help="test files (default: tests/behaviour/test_*.py)")
    parser.add_argument(
        "--lines", type=int, nargs="+", metavar="N", help="only these lines (to re-judge some)"
    )
    parser.add_argument(
        "--changed-since", metavar="REF", help="only the lines of the core changed since git REF"
    )
    parser.add_argument(
        "--config", type=Path, default=ROOT / "mutation_config.toml", help="where the reviews are"
    )
    args = parser.parse_args(argv)
    if args.jobs < 1 or not args.timeout > 0:
        parser.error("--jobs must be >= 1 and --timeout > 0")
    if args.json is not None:
        try:
            args.json.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            parser.error(f"--json {args.json}: {error}")
    try:
        reviewed = reviews(args.config)
    except ConfigFileError as error:
        parser.error(str(error))
    tests = args.tests or default_tests()
    source = (ROOT / SOURCE).read_text(encoding="utf-8")
    every = candidates(source)
    todo = _selected(every, args, parser)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="core-deletions-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda d: judge(d, source, tests, Path(tmp), args.timeout), todo))
    part = bool(args.lines) or args.changed_since is not None
    results, stale = settle_reviews(results, reviewed if not part else {})
    counts = {v: sum(r.verdict == v for r in results) for v in ("killed", "survived", "reviewed", "invalid")}
    for result in results:
        if result.verdict != "killed":
            print(
                f"{SOURCE}:{result.line}: {result.verdict}: {result.scope}: {result.text}  ({result.detail})"
            )
    for review in stale:
        print(f"stale review (no such survivor): {review}")
    seconds = time.monotonic() - started
    print(
        f"core deletions: {len(results)} lines, "
        + ", ".join(f"{n} {v}" for v, n in counts.items())
        + f" in {seconds:.0f}s"
    )
    if args.json is not None:
        report = {
            "format": FORMAT,
            "version": VERSION,
            "source": SOURCE,
            "universe": universe(every),
            "part": part,
            "seconds": seconds,
            "counts": counts,
            "deletions": [{"id": r.id, **asdict(r)} for r in results],
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if counts["survived"] or stale else 0


if __name__ == "__main__":
    sys.exit(main())

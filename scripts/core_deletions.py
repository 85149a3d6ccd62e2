#!/usr/bin/env python3
"""Delete each statement of the compiled core in turn, rebuild it, and require the tests to fail.

A second engine for ``guard_lib/_core.pyx``, written apart from the critical catalogue: mutmut, the sweep
and cosmic-ray read only Python, so this one covers the Cython source by brute force. Every one-line
statement inside a definition becomes ``pass`` in a copy of the project; the copy's core is rebuilt and
the behaviour tests run against it (``GUARD_LIB_IMPL=compiled``, stopping at the first failure).

Verdicts: killed (a test failed), survived (all passed), invalid (the mutated core did not build, or
pytest could not run). Exit 0 when nothing survived, 1 when something did, 2 for bad input.

    python scripts/core_deletions.py --jobs 8 --json reports/core-deletions.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "guard_lib/_core.pyx"
# Lines that are not statements of their own, or whose removal the compiler refuses anyway.
_SKIPPED_STARTS = ("#", '"', "'", "@", "def ", "cdef ", "class ", "else", "elif", "except", "finally", "try")
_OPENERS = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True)
class Deletion:
    line: int  # 1-based
    text: str
    verdict: str = ""
    detail: str = ""


def _depth_change(text: str) -> int:
    return sum(char in _OPENERS for char in text) - sum(char in _OPENERS.values() for char in text)


def candidates(source: str) -> list[Deletion]:
    """Every one-line statement inside a definition, as a deletion to try.

    Not docstrings, not lines inside a statement that spans several, not block headers (their removal
    only fails to compile) and not C declarations (``cdef ...``: their removal does too).
    """
    found = []
    depth = 0
    in_string = False
    for number, line in enumerate(source.splitlines(), start=1):
        stripped = line.strip()
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
        found.append(Deletion(number, stripped))
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
    return done.returncode, (done.stdout + done.stderr).strip().splitlines()[-1:][0] if (
        done.stdout + done.stderr
    ).strip() else ""


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
            return Deletion(deletion.line, deletion.text, "invalid", f"does not build: {tail}")
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
        code, tail = _run(cmd, project, env, timeout)
        verdict = {0: "survived", 1: "killed"}.get(code if code is not None else -1, "invalid")
        return Deletion(deletion.line, deletion.text, verdict, tail)
    finally:
        shutil.rmtree(project, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="deletions judged at once")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per build and per test run")
    parser.add_argument("--json", type=Path, help="also write every deletion and its verdict here")
    parser.add_argument("--tests", nargs="+", help="test files (default: tests/test_*.py)")
    parser.add_argument(
        "--lines", type=int, nargs="+", metavar="N", help="only these lines (to re-judge some)"
    )
    args = parser.parse_args(argv)
    if args.jobs < 1 or not args.timeout > 0:
        parser.error("--jobs must be >= 1 and --timeout > 0")
    if args.json is not None:
        try:
            args.json.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            parser.error(f"--json {args.json}: {error}")
    tests = args.tests or sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py"))
    source = (ROOT / SOURCE).read_text(encoding="utf-8")
    todo = candidates(source)
    if args.lines:
        unknown = sorted(set(args.lines) - {d.line for d in todo})
        if unknown:
            parser.error(
                f"--lines: {', '.join(map(str, unknown))} hold no statement this tool deletes in {SOURCE}"
            )
        todo = [d for d in todo if d.line in args.lines]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="core-deletions-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda d: judge(d, source, tests, Path(tmp), args.timeout), todo))
    counts = {v: sum(r.verdict == v for r in results) for v in ("killed", "survived", "invalid")}
    for result in results:
        if result.verdict != "killed":
            print(f"{SOURCE}:{result.line}: {result.verdict}: {result.text}  ({result.detail})")
    seconds = time.monotonic() - started
    print(
        f"core deletions: {len(results)} lines, "
        + ", ".join(f"{n} {v}" for v, n in counts.items())
        + f" in {seconds:.0f}s"
    )
    if args.json is not None:
        report = {
            "source": SOURCE,
            "seconds": seconds,
            "counts": counts,
            "deletions": [asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if counts["survived"] else 0


if __name__ == "__main__":
    sys.exit(main())

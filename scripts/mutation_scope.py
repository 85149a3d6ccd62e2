"""Scoping a mutmut run by change: source lines, ``git diff`` hunks and untracked files to functions.

Nothing here imports mutmut, pytest or guard_lib.
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mutation_common import natural_key, parse_mutant_name
from mutation_io import InputError


def module_for_path(path: str | Path) -> str:
    """``guard_lib/device_guard.py`` -> ``guard_lib.device_guard``, the way mutmut names modules."""
    p = Path(path)
    dotted = ".".join(p.with_suffix("").parts)
    dotted = dotted.removeprefix("src.")
    return dotted.removesuffix(".__init__")


@dataclass(frozen=True)
class FunctionSpan:
    """A function mutmut can put a trampoline on: module-level ``def`` or a method of a module-level class."""

    qualname: str
    start: int  # first decorator line, else the def line
    end: int
    def_line: int
    def_col: int


def mutable_units(source: str) -> list[FunctionSpan]:
    """Top-level functions and methods of top-level classes: mutmut's unit of mutation and naming.

    Nested functions and classes belong to the enclosing unit (mutmut names their mutants after it).
    """
    tree = ast.parse(source)
    spans: list[FunctionSpan] = []

    def add(node: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str) -> None:
        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        end = node.end_lineno or node.lineno
        spans.append(FunctionSpan(qualname, start, end, node.lineno, node.col_offset))

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            add(node, node.name)
        elif isinstance(node, ast.ClassDef):
            for child in node.body:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    add(child, f"{node.name}.{child.name}")
    return spans


_HUNK_RE = re.compile(r"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,(?P<count>\d+))? @@")


def changed_lines_from_diff(diff_text: str) -> dict[str, set[int]]:
    """Lines of the *new* files touched by a ``git diff -U0`` output, per path.

    A pure deletion (``+c,0``) has no new line; it marks ``c`` and ``c+1``, the lines either side of
    the gap, because the removed code belonged to whichever function surrounds that gap.
    """
    changed: dict[str, set[int]] = {}
    current: str | None = None
    for line in diff_text.splitlines():
        if line.startswith("+++ "):
            target = line[4:].strip()
            current = None if target == "/dev/null" else target.removeprefix("b/")
            if current is not None:
                changed.setdefault(current, set())
            continue
        match = _HUNK_RE.match(line)
        if match and current is not None:
            start = int(match["start"])
            count = 1 if match["count"] is None else int(match["count"])
            if count == 0:
                changed[current].update(n for n in (start, start + 1) if n >= 1)
            else:
                changed[current].update(range(start, start + count))
    return changed


def functions_touching(source: str, lines: set[int]) -> set[str]:
    units = mutable_units(source)
    return {span.qualname for span in units if any(span.start <= n <= span.end for n in lines)}


def verify_ref(ref: str, repo: Path) -> str:
    """The commit ``ref`` names, checked by git before anything uses it; an option-like ref is refused."""
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        raise InputError(f"--changed-since {ref!r}: cannot run git: {exc}") from exc
    if found.returncode != 0 or not found.stdout.strip():
        raise InputError(
            f"--changed-since {ref!r}: not a commit in {repo} (`git rev-parse --verify` refused it)"
        )
    return found.stdout.strip()


def git_changed_functions(ref: str, paths: Sequence[str], repo: Path) -> set[str]:
    """``module:qualname`` of every mutable unit changed since ``ref`` (committed, staged or not, or new)."""
    commit = verify_ref(ref, repo)
    try:
        diff = subprocess.run(
            ["git", "diff", "-U0", "--no-color", "--no-ext-diff", commit, "--", *paths],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        untracked = subprocess.run(
            ["git", "ls-files", "--others", "--exclude-standard", "--", *paths],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = exc.stderr.strip() if isinstance(exc, subprocess.CalledProcessError) else str(exc)
        raise InputError(f"--changed-since {ref}: git diff failed: {detail}") from exc
    changed = changed_lines_from_diff(diff)
    new_files = {path for path in untracked.splitlines() if path.endswith(".py")}
    result: set[str] = set()
    for path in sorted(set(changed) | new_files):
        file = repo / path
        if not path.endswith(".py") or not file.is_file():
            continue
        source = file.read_text(encoding="utf-8")
        # an untracked file is new as a whole
        lines = set(range(1, source.count("\n") + 2)) if path in new_files else changed[path]
        module = module_for_path(path)
        result.update(f"{module}:{qualname}" for qualname in functions_touching(source, lines))
    return result


def filter_by_functions(names: Iterable[str], functions: set[str]) -> list[str]:
    return sorted((n for n in names if parse_mutant_name(n).function in functions), key=natural_key)

"""How many executable lines of each implementation some engine mutates, and which it does not.

    python benchmarks/lines_mutated.py          # after a `mutmut run` (mutmut lists from its mutants/)

An executable line is the first line of a statement (Python's ``ast``; for the core, each line the edits
engine's deletion operator reads as a statement, declarations included). A line is mutated when a mutant
of either engine (``guard-mutation list``) starts on it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from guard_mutation.config import read
from guard_mutation.engines.edits import scopes
from guard_mutation.engines.edits.operators.delete_statement import _DECLARATION, _DECLARATION_BLOCK, _STRING

ROOT = Path(__file__).resolve().parents[1]


def _cython_statements(text: str) -> set[int]:
    """The first line (1-based) of each statement of Cython ``text`` that runs: no header, docstring,
    ``pass`` or declaration (nor anything inside an extern or struct block)."""
    found: set[int] = set()
    blocks: list[int] = []  # the indents of the declaration blocks open
    for s in scopes.statements(text.splitlines(keepends=True)):
        while blocks and blocks[-1] >= len(s.indent):
            blocks.pop()
        if s.header:
            if blocks or _DECLARATION_BLOCK.match(s.code):
                blocks.append(len(s.indent))
            continue
        if blocks or _STRING.match(s.code) or s.code.startswith("pass") or _DECLARATION.match(s.code):
            continue
        found.add(s.first + 1)
    return found


def main() -> int:
    listed = subprocess.run(
        [sys.executable, "-m", "guard_mutation", "list", "edits", "mutmut"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    mutated: dict[str, set[int]] = {}
    for line in listed:
        where = line.split("\t")[2]
        file, _, number = where.rpartition(":")
        mutated.setdefault(file, set()).add(int(number))
    package = read(ROOT / "mutation_config.toml", ROOT).harness.package
    for suffix, name in ((".py", "the reference"), (".pyx", "the core")):
        total, missed = 0, []
        for path in sorted((ROOT / package).glob(f"*{suffix}")):
            rel = path.relative_to(ROOT).as_posix()
            text = path.read_text(encoding="utf-8")
            if suffix == ".py":
                lines = {n.lineno for n in ast.walk(ast.parse(text)) if isinstance(n, ast.stmt)}
            else:
                lines = _cython_statements(text)
            total += len(lines)
            missed += [f"{rel}:{n}" for n in sorted(lines - mutated.get(rel, set()))]
        print(f"{name}: {total - len(missed)} of {total} executable lines mutated by some engine")
        for where in missed:
            print(f"  not mutated: {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

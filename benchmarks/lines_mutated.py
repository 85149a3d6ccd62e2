"""How many executable lines of each implementation some engine mutates, and which it does not.

    python benchmarks/lines_mutated.py          # after a `mutmut run` (mutmut lists from its mutants/)

An executable line is the first line of a statement that runs, in both implementations alike: no header
(``def``, ``if``, ``with`` ...: their blocks' statements are counted), docstring, ``...``, ``pass`` or
declaration (``cdef``, ``global``, ``from __future__``, a bare annotation, what only the type checker
reads). A line is mutated when a mutant of either engine (``guard-mutation list``) changes a line of its
statement. The headers that hold an expression (``if``, ``while``, ``for``, ``with``, ``match``) are
counted apart.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from guard_mutation.config import read
from guard_mutation.engines.edits import scopes
from guard_mutation.engines.edits.operators.delete_statement import (
    _DECLARATION,
    _STRING,
    _names,
    _type_checking,
    _typing_only,
    cython_walk,
)

ROOT = Path(__file__).resolve().parents[1]


def _cython_statements(text: str) -> tuple[dict[int, int], dict[int, int]]:
    """The statements of Cython ``text`` that run (no docstring, ``pass`` or declaration, nor anything
    inside an extern or struct block), and the headers holding an expression (not ``with nogil``):
    first line -> last line (1-based)."""
    statements: dict[int, int] = {}
    headers: dict[int, int] = {}
    for _, s, declared in cython_walk(text.splitlines(keepends=True)):
        if declared:
            continue
        if s.header:
            held = s.word in ("if", "elif", "while", "for", "with") and not re.match(
                r"with\s+(?:no)?gil\b", s.code
            )
            if held:
                headers[s.first + 1] = s.last + 1
            continue
        if _STRING.match(s.code) or s.code.startswith("pass") or _DECLARATION.match(s.code):
            continue
        statements[s.first + 1] = s.last + 1
    return statements, headers


def _python_statements(text: str) -> tuple[dict[int, int], dict[int, int]]:
    """The statements of Python ``text`` that run, and the headers holding an expression: first line ->
    last line (1-based)."""
    tree = ast.parse(text)
    names = _names(tree)
    statements: dict[int, int] = {}
    headers: dict[int, int] = {}

    def visit(body: list[ast.stmt], scope: int, typed: bool) -> None:
        for s in body:
            if scopes.inert(s):
                continue
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(s.body, scope + 1, typed)
                continue
            blocks = scopes.blocks(s)
            if blocks:
                if isinstance(
                    s, (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Match)
                ):
                    headers[s.lineno] = blocks[0][0].lineno - 1
                for b in blocks:
                    visit(b, scope, typed or _type_checking(s))
                continue
            declared = typed or isinstance(s, (ast.Global, ast.Nonlocal))
            declared |= isinstance(s, ast.AnnAssign) and s.value is None
            declared |= isinstance(s, ast.ImportFrom) and s.module == "__future__"
            declared |= not scope and _typing_only(s, names)
            if not declared:
                statements[s.lineno] = s.end_lineno or s.lineno

    visit(tree.body, 0, False)
    return statements, headers


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
        first, _, last = number.partition("-")
        mutated.setdefault(file, set()).update(range(int(first), int(last or first) + 1))
    package = read(ROOT / "mutation_config.toml", ROOT).harness.package
    for suffix, name in ((".py", "the reference"), (".pyx", "the core")):
        total, missed, heads, heads_missed = 0, [], 0, []
        for path in sorted((ROOT / package).glob(f"*{suffix}")):
            rel = path.relative_to(ROOT).as_posix()
            text = path.read_text(encoding="utf-8")
            if suffix == ".py":
                spans, headers = _python_statements(text)
            else:
                spans, headers = _cython_statements(text)
            hit = mutated.get(rel, set())
            total, heads = total + len(spans), heads + len(headers)
            missed += [f"{rel}:{n}" for n, end in sorted(spans.items()) if not hit & set(range(n, end + 1))]
            heads_missed += [
                f"{rel}:{n}" for n, end in sorted(headers.items()) if not hit & set(range(n, end + 1))
            ]
        print(f"{name}: {total - len(missed)} of {total} executable lines mutated by some engine")
        for where in missed:
            print(f"  not mutated: {where}")
        if heads:
            print(f"{name}: {heads - len(heads_missed)} of {heads} headers holding an expression mutated")
            for where in heads_missed:
                print(f"  header not mutated: {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

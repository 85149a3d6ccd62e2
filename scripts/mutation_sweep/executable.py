"""Each file's executable lines, as coverage.py counts them: what the report measures the engines by."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

from coverage.parser import PythonParser

from . import cython_view
from .generate import is_cython


def executable_lines(root: Path, files: Sequence[str]) -> dict[str, list[int]]:
    """Each file's statement lines, as coverage.py counts them (docstrings are not statements).

    A decorated definition is one statement from its first decorator to its ``def`` or ``class`` line,
    where coverage.py counts each of those lines: the line of the first decorator stands for them all.
    """
    lines: dict[str, list[int]] = {}
    for rel in files:
        text = (root / rel).read_text(encoding="utf-8")
        masked: frozenset[int] = frozenset()
        if is_cython(rel):
            seen = cython_view.view(text)
            text, masked = seen.text, seen.masked
        parser = PythonParser(text=text, filename=rel)
        parser.parse_source()
        header_rest: set[int] = set()
        for node in ast.walk(ast.parse(text, filename=rel)):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node.decorator_list
            ):
                first = min(d.lineno for d in node.decorator_list)
                header_rest.update(range(first + 1, node.lineno + 1))
        lines[rel] = sorted(set(parser.statements) - header_rest - masked)
    return lines

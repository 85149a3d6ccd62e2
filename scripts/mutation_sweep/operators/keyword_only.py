"""Turn keyword-only parameters positional: the bare ``*`` of a signature goes."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from .base import Edit

name = "keyword-only"
examples = (
    ("def f(a, *, b=1):\n    pass\n", ("def f(a, b=1):\n    pass\n",)),
    ("def f(*, b):\n    pass\n", ("def f(b):\n    pass\n",)),
    ("def f(*args, b):\n    pass\n", ()),
    ("def f(a, b):\n    pass\n", ()),
)

_BARE_STAR = re.compile(r"(?<![*\w])\*\s*,\s*")


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return
    if not node.args.kwonlyargs or node.args.vararg is not None:
        return
    lines = source.splitlines(keepends=True)
    start = node.lineno
    end = node.body[0].lineno
    header = "".join(lines[start - 1 : end - 1]) if end > start else lines[start - 1]
    match = _BARE_STAR.search(header)
    if match is None:
        return
    before = header[: match.start()]
    line = start + before.count("\n")
    col = len(before) - (before.rfind("\n") + 1)
    after = header[: match.end()]
    end_line = start + after.count("\n")
    end_col = len(after) - (after.rfind("\n") + 1)
    yield Edit(node, "", span=(line, col, end_line, end_col))

"""Delete a statement: it becomes ``pass`` (PIT's void-call and conditional removal, and more)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .base import Edit

name = "delete-statement"
# A statement over several lines leaves blank lines behind, so later line numbers do not move.
examples = (
    ("x = 1\ny = 2\n", ("pass\ny = 2\n", "x = 1\npass\n")),
    ("def f():\n    '''doc'''\n    return 1\n", ("pass\n\n\n", "def f():\n    '''doc'''\n    pass\n")),
    ("if a:\n    b()\n", ("pass\n\n", "if a:\n    pass\n")),
    ("@dec\ndef f():\n    pass\n", ("pass\n\n\n",)),
    ('"doc"\nfrom __future__ import annotations\npass\n', ()),
)


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _is_future(node: ast.stmt) -> bool:
    return isinstance(node, ast.ImportFrom) and node.module == "__future__"


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    if (
        not isinstance(node, ast.stmt)
        or isinstance(node, ast.Pass)
        or _is_docstring(node)
        or _is_future(node)
    ):
        return
    # A decorated definition starts at its first decorator.
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    col = node.col_offset
    assert node.end_lineno is not None
    assert node.end_col_offset is not None
    yield Edit(node, "pass", span=(first, col, node.end_lineno, node.end_col_offset))

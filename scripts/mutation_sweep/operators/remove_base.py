"""Remove one base class of a class."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .base import Edit

name = "remove-base"
examples = (
    ("class A(B, C):\n    pass\n", ("class A(C):\n    pass\n", "class A(B):\n    pass\n")),
    ("class A(B):\n    x = 1\n", ("class A:\n    x = 1\n",)),
    ("class A:\n    pass\n", ()),
)


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    if not isinstance(node, ast.ClassDef) or not node.bases:
        return
    first, last = node.bases[0], node.bases[-1]
    assert last.end_lineno is not None
    assert last.end_col_offset is not None
    for index in range(len(node.bases)):
        rest = [ast.unparse(b) for b in node.bases[:index] + node.bases[index + 1 :]]
        rest += [ast.unparse(k) for k in node.keywords]
        # the span of the parenthesised bases, brackets included
        line = source.splitlines()[first.lineno - 1]
        open_col = line.rindex("(", 0, first.col_offset)
        close_line = source.splitlines()[last.end_lineno - 1]
        close_col = close_line.index(")", last.end_col_offset) + 1
        if node.keywords:
            k = node.keywords[-1]
            assert k.end_lineno is not None
            assert k.end_col_offset is not None
            close_line = source.splitlines()[k.end_lineno - 1]
            close_col = close_line.index(")", k.end_col_offset) + 1
            end_line = k.end_lineno
        else:
            end_line = last.end_lineno
        text = f"({', '.join(rest)})" if rest else ""
        yield Edit(node.bases[index], text, span=(first.lineno, open_col, end_line, close_col))

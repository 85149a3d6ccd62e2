"""Delete a statement: it becomes ``pass`` (PIT's void-call and conditional removal, and more)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .base import Edit, is_docstring

name = "delete-statement"
# A statement over several lines leaves blank lines behind, so later line numbers do not move.
examples = (
    ("x = 1\ny = 2\n", ("pass\ny = 2\n", "x = 1\npass\n")),
    ("def f():\n    '''doc'''\n    return 1\n", ("pass\n\n\n", "def f():\n    '''doc'''\n    pass\n")),
    ("if a:\n    b()\n", ("pass\n\n", "if a:\n    pass\n")),
    ("@dec\ndef f():\n    pass\n", ("pass\n\n\n",)),
    # without the future import every annotation is evaluated when its def runs
    ('"doc"\nfrom __future__ import annotations\n', ('"doc"\npass\n',)),
    ('"doc"\npass\n', ()),
    # a string anywhere else is a statement like any other (and compiles to nothing)
    ('x = 1\n"about x"\n', ('pass\n"about x"\n', "x = 1\npass\n")),
)


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    if not isinstance(node, ast.stmt) or isinstance(node, ast.Pass) or is_docstring(node):
        return
    # A decorated definition starts at its first decorator.
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    col = node.col_offset
    assert node.end_lineno is not None
    assert node.end_col_offset is not None
    yield Edit(node, "pass", span=(first, col, node.end_lineno, node.end_col_offset))

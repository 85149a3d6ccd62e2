"""Replace a comparison operator by every other of its family: the full set, not only the opposite."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .base import Edit

name = "comparison"
examples = (
    ("a < b\n", ("a <= b\n", "a > b\n", "a >= b\n", "a == b\n", "a != b\n")),
    ("a is None\n", ("a is not None\n",)),
    ("a not in b\n", ("a in b\n",)),
    ("a + b\n", ()),
)

_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_FAMILIES: tuple[tuple[type[ast.cmpop], ...], ...] = (_ORDER, (ast.Is, ast.IsNot), (ast.In, ast.NotIn))


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    if not isinstance(node, ast.Compare):
        return
    for index, op in enumerate(node.ops):
        family = next(f for f in _FAMILIES if type(op) in f)
        for other in family:
            if other is type(op):
                continue
            ops = list(node.ops)
            ops[index] = other()
            yield Edit(node, ast.unparse(ast.Compare(left=node.left, ops=ops, comparators=node.comparators)))

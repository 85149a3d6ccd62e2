"""Unwrap a call around one argument: ``int(x)`` becomes ``x``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .base import Edit, as_operand

name = "unwrap-call"
examples = (
    ("y = int(x)\n", ("y = x\n",)),
    ("y = str(a + b) * 2\n", ("y = (a + b) * 2\n",)),
    ("y = f(a, b)\n", ()),
    ("y = f(a, key=1)\n", ()),
)


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    if (
        isinstance(node, ast.Call)
        and len(node.args) == 1
        and not node.keywords
        and not isinstance(node.args[0], ast.Starred)
        and isinstance(node.func, (ast.Name, ast.Attribute))
    ):
        yield Edit(node, as_operand(node.args[0]))

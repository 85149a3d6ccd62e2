"""Drop one element of a literal set, tuple, list or dict."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .base import Edit

name = "drop-element"
examples = (
    ("x = {1, 2}\n", ("x = {2}\n", "x = {1}\n")),
    ("x = (a,)\n", ("x = ()\n",)),
    ("x = [a, b]\n", ("x = [b]\n", "x = [a]\n")),
    ("x = {'a': 1}\n", ("x = {}\n",)),
    ("(a, b) = f()\n", ()),
)


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    if isinstance(node, (ast.Tuple, ast.List)) and isinstance(node.ctx, ast.Load):
        for index in range(len(node.elts)):
            rest = node.elts[:index] + node.elts[index + 1 :]
            yield Edit(node, ast.unparse(type(node)(elts=rest, ctx=ast.Load())))
    elif isinstance(node, ast.Set):
        for index in range(len(node.elts)):
            rest = node.elts[:index] + node.elts[index + 1 :]
            # an empty {} is a dict: the empty set is set()
            yield Edit(node, ast.unparse(ast.Set(elts=rest)) if rest else "set()")
    elif isinstance(node, ast.Dict):
        for index in range(len(node.keys)):
            keys = node.keys[:index] + node.keys[index + 1 :]
            values = node.values[:index] + node.values[index + 1 :]
            yield Edit(node, ast.unparse(ast.Dict(keys=keys, values=values)))

"""Replace a keyword argument's value, or a constant bound to a name at module or class level."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .base import Edit

name = "replace-value"
examples = (
    ("f(x, stacklevel=2)\n", ("f(x, stacklevel=None)\n", "f(x, stacklevel=3)\n")),
    ("f(flag=True)\n", ("f(flag=None)\n", "f(flag=False)\n")),
    ("f(x=None)\n", ("f(x=0)\n",)),
    ("LIMIT = 3\n", ("LIMIT = None\n", "LIMIT = 4\n")),
    ("NAME = 'a'\n", ("NAME = None\n", "NAME = 'XXa'\n")),
    ("def f():\n    x = 3\n", ()),
)


def _others(value: ast.expr) -> list[str]:
    if isinstance(value, ast.Constant) and value.value is None:
        return ["0"]
    texts = ["None"]
    if isinstance(value, ast.Constant):
        v = value.value
        if isinstance(v, bool):
            texts.append(repr(not v))
        elif isinstance(v, (int, float)):
            texts.append(repr(v + 1))
        elif isinstance(v, str):
            texts.append(repr("XX" + v))
    return texts


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    if isinstance(node, ast.keyword) and node.arg is not None:
        for text in _others(node.value):
            yield Edit(node.value, text)
    elif getattr(node, "_sweep_bound_at_top", False) and isinstance(node, (ast.Assign, ast.AnnAssign)):
        value = node.value
        if isinstance(value, ast.Constant):
            for text in _others(value):
                yield Edit(value, text)

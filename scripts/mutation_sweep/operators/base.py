"""What an operator is: a name, the edits it proposes for one node, and examples that prove it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Edit:
    """Replace the source span of ``node`` (or the explicit span) with ``text``."""

    node: ast.AST
    text: str
    span: tuple[int, int, int, int] | None = None  # line, col, end_line, end_col when not the node's


class Operator(Protocol):
    name: str
    # (source before, every source the operator makes of it): one generic test runs them all
    examples: tuple[tuple[str, tuple[str, ...]], ...]

    def edits(self, node: ast.AST, source: str) -> Iterator[Edit]: ...


ATOMS = (
    ast.Name,
    ast.Attribute,
    ast.Constant,
    ast.Call,
    ast.Subscript,
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Set,
)


def mark_docstrings(tree: ast.AST) -> None:
    """Tag each real docstring (the first statement of a module, class or def, when a string)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                setattr(first, "_sweep_docstring", True)  # noqa: B010 - ast nodes take no typed extras


def is_docstring(node: ast.AST) -> bool:
    return bool(getattr(node, "_sweep_docstring", False))


def as_operand(node: ast.expr) -> str:
    """Source for ``node`` that keeps its meaning wherever an expression stood."""
    text = ast.unparse(node)
    return text if isinstance(node, ATOMS) else f"({text})"

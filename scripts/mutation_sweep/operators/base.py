"""What an operator is: a name, the edits it proposes for one node, and examples that prove it."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Protocol

from ..spans import between


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


# An operator that needs more than one node shows (a statement's next sibling, a function's variables)
# may also define ``prepare(tree)``, which tags the nodes once before any ``edits`` call.


def prepare(operators: Iterable[ModuleType], tree: ast.AST) -> None:
    """Tag docstrings, then let each operator that reads more than one node tag what it needs."""
    mark_docstrings(tree)
    for operator in operators:
        step = getattr(operator, "prepare", None)
        if step is not None:
            step(tree)


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


Located = ast.expr | ast.stmt


def span_of(node: Located) -> tuple[int, int, int, int]:
    assert node.end_lineno is not None
    assert node.end_col_offset is not None
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


def text_of(source: str, line: int, col: int, end_line: int, end_col: int) -> str:
    """The source between two positions as ast gives them (lines 1-based, columns UTF-8 byte offsets)."""
    return between(source, (line, col, end_line, end_col))


def text_of_node(source: str, node: Located) -> str:
    return text_of(source, *span_of(node))


def swapped(source: str, first: Located, second: Located) -> Edit:
    """Swap the texts of two nodes, keeping what lies between them (and so every line where it was)."""
    line, col, end_line, end_col = span_of(first)
    second_line, second_col, second_end_line, second_end_col = span_of(second)
    between = text_of(source, end_line, end_col, second_line, second_col)
    text = text_of_node(source, second) + between + text_of_node(source, first)
    return Edit(first, text, span=(line, col, second_end_line, second_end_col))

"""Keep a cached value where it should be refreshed or checked: only a test changing its source sees it.

A cache is right only while what it was read from is unchanged; a test sees a stale one only if it
changes the source between two reads. Precisely, two edits:

- **refresh dropped.** In a tuple assignment ``a, slot = slot, new`` (``token, self._token =
  self._token, None``; ``code, state.last_error = state.last_error, SUCCESS``), the pair that writes a
  *slot* goes and the rest stays: ``a = slot``. A slot is storage that outlives the call: an attribute,
  or a name the function declares ``global``/``nonlocal``. (A lone ``slot = None`` or ``slot.clear()``
  is ``delete-statement``'s: deleting it is the same mutant.)
- **key check dropped.** In a cache hit, ``if a and b ...: return cached`` (the body only returns a
  name or attribute, the test a conjunction), each comparison of the conjunction goes in turn, as long
  as one operand stays: ``if entry is not None and entry.runtime is runtime`` -> ``if entry is not
  None``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .base import Edit, text_of_node

name = "keep-cache"
examples = (
    (
        "def f(self):\n    token, self._token = self._token, None\n",
        ("def f(self):\n    token = self._token\n",),
    ),
    (
        "def f(r):\n    global _d\n    p, _d, n = _d, r, 1\n",
        ("def f(r):\n    global _d\n    p, n = _d, 1\n",),
    ),
    (
        "def f(r):\n    if e is not None and e.runtime is r and v == w:\n        return e\n",
        (
            "def f(r):\n    if e.runtime is r and v == w:\n        return e\n",
            "def f(r):\n    if e is not None and v == w:\n        return e\n",
            "def f(r):\n    if e is not None and e.runtime is r:\n        return e\n",
        ),
    ),
    # locals only; a one-comparison test; a body that does more than return; a lone reset
    ("def f():\n    a, b = b, a\n", ()),
    ("def f():\n    if v == w:\n        return e\n", ()),
    ("def f():\n    if a and v == w:\n        g()\n        return e\n", ()),
    ("def f(self):\n    self._cache = None\n", ()),
)

_DECLARED = "_sweep_declared"


def prepare(tree: ast.AST) -> None:
    """Tag each tuple assignment with the names its function declares global or nonlocal."""
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            declared = {
                n
                for node in ast.walk(function)
                if isinstance(node, (ast.Global, ast.Nonlocal))
                for n in node.names
            }
            for node in ast.walk(function):
                if isinstance(node, ast.Assign):
                    setattr(node, _DECLARED, declared)


def _slot(target: ast.expr, declared: set[str]) -> bool:
    return isinstance(target, ast.Attribute) or (isinstance(target, ast.Name) and target.id in declared)


def _refresh_dropped(node: ast.Assign, source: str) -> Iterator[Edit]:
    if len(node.targets) != 1:
        return
    targets, values = node.targets[0], node.value
    if not (isinstance(targets, ast.Tuple) and isinstance(values, ast.Tuple)):
        return
    if len(targets.elts) != len(values.elts) or any(
        isinstance(e, ast.Starred) for e in targets.elts + values.elts
    ):
        return
    declared: set[str] = getattr(node, _DECLARED, set())
    pairs = list(zip(targets.elts, values.elts, strict=True))
    for index, (target, _) in enumerate(pairs):
        if not _slot(target, declared):
            continue
        rest = pairs[:index] + pairs[index + 1 :]
        left = ", ".join(text_of_node(source, t) for t, _ in rest)
        right = ", ".join(text_of_node(source, v) for _, v in rest)
        yield Edit(node, f"{left} = {right}")


def _key_dropped(node: ast.If, source: str) -> Iterator[Edit]:
    test = node.test
    hit = len(node.body) == 1 and isinstance(node.body[0], ast.Return)
    returned = node.body[0].value if hit else None  # type: ignore[attr-defined]
    if not (isinstance(returned, (ast.Name, ast.Attribute)) and isinstance(test, ast.BoolOp)):
        return
    if not isinstance(test.op, ast.And):
        return
    for index, operand in enumerate(test.values):
        if isinstance(operand, ast.Compare):
            rest = test.values[:index] + test.values[index + 1 :]
            yield Edit(test, " and ".join(_operand(source, v) for v in rest))


def _operand(source: str, node: ast.expr) -> str:
    text = text_of_node(source, node)
    return f"({text})" if isinstance(node, (ast.BoolOp, ast.IfExp, ast.NamedExpr, ast.Lambda)) else text


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    if isinstance(node, ast.Assign):
        yield from _refresh_dropped(node, source)
    elif isinstance(node, ast.If):
        yield from _key_dropped(node, source)

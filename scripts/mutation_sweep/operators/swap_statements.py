"""Swap two adjacent statements of a block: each is right, their order wrong; only a test between them sees.

Order is most of what a guard promises: the debt recorded before the switch, the argument checked before
anything is installed. Each statement can be right and the pair still wrong; only a test that watches
what happens between them (a refusal, a failure, an interrupt) sees the order.

Left alone: every pair ``commute.commutes`` proves the swap changes nothing (or cannot compile), a
docstring among them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from itertools import pairwise

from .base import Edit, swapped
from .commute import TOP, commutes

name = "swap-statements"
examples = (
    (
        "def f():\n    x = 1\n    y = g()\n    z = 3\n",
        ("def f():\n    y = g()\n    x = 1\n    z = 3\n", "def f():\n    x = 1\n    z = 3\n    y = g()\n"),
    ),
    (
        "def f():\n    '''doc'''\n    a()\n    # why\n    b(\n        1)\n",
        ("def f():\n    '''doc'''\n    b(\n        1)\n    # why\n    a()\n",),
    ),
    ("if c:\n    a()\n    b()\nelse:\n    d()\n", ("if c:\n    b()\n    a()\nelse:\n    d()\n",)),
    ("try:\n    a()\nexcept E:\n    b()\n    raise\n", ("try:\n    a()\nexcept E:\n    raise\n    b()\n",)),
    ("from . import a\nimport os\n", ("import os\nfrom . import a\n",)),
    # each pair here is one the docstring above proves changes nothing, or cannot compile
    ('"""doc"""\nfrom __future__ import annotations\nimport os\nimport sys\n', ()),
    ("def f():\n    global g\n    g = 1\n", ()),
    ("a()\na()\n", ()),
    ("class C:\n    x: int\n    y = 1\n", ()),
    ("def f(a=1):\n    pass\n@property\ndef g(x: A = B):\n    return f()\nX = 1\n'about X'\n", ()),
    ("class A:\n    __slots__ = ()\n    size = 1\n    def f(self):\n        pass\n", ()),
    # at definition time the second reads what the first binds, or calls something: the order shows
    (
        "class A:\n    pass\nclass B(A):\n    pass\nY = f()\n",
        (
            "class B(A):\n    pass\nclass A:\n    pass\nY = f()\n",
            "class A:\n    pass\nY = f()\nclass B(A):\n    pass\n",
        ),
    ),
    ("@d\ndef f():\n    pass\nX = 1\n", ("X = 1\n@d\ndef f():\n    pass\n",)),
)

_NEXT = "_sweep_next_statement"


def prepare(tree: ast.AST) -> None:
    """Tag each statement with the one after it in its block, and those of a module's or class's body."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                for first, second in pairwise(block):
                    if isinstance(first, ast.stmt) and isinstance(second, ast.stmt):
                        setattr(first, _NEXT, second)
                        setattr(first, TOP, field == "body" and isinstance(node, (ast.Module, ast.ClassDef)))


def _start(node: ast.stmt) -> ast.stmt:
    """The statement, or for a decorated definition a stand-in that starts at its first decorator."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not node.decorator_list:
        return node
    decorated = ast.Pass()
    decorated.lineno = min(d.lineno for d in node.decorator_list)
    decorated.col_offset = node.col_offset
    decorated.end_lineno, decorated.end_col_offset = node.end_lineno, node.end_col_offset
    return decorated


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    second = getattr(node, _NEXT, None)
    if not isinstance(node, ast.stmt) or not isinstance(second, ast.stmt):
        return
    if commutes(node, second):
        return
    edit = swapped(source, _start(node), _start(second))
    yield Edit(node, edit.text, span=edit.span)

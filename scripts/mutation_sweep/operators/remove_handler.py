"""Remove an exception handler: ``except X:`` catches nothing (``except ():``), so the error goes on up.

PIT's "remove conditionals" for the other kind of branch: a handler no test needs is a handler
nothing proves right.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .base import Edit

name = "remove-handler"
examples = (
    (
        "try:\n    f()\nexcept ValueError:\n    g()\n",
        ("try:\n    f()\nexcept ():\n    g()\n",),
    ),
    (
        "try:\n    f()\nexcept (A, B) as e:\n    g(e)\n",
        ("try:\n    f()\nexcept () as e:\n    g(e)\n",),
    ),
    # a bare ``except:`` has no type to empty; delete-statement covers its body
    ("try:\n    f()\nexcept:\n    g()\n", ()),
    ("try:\n    f()\nexcept ():\n    g()\n", ()),
)


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    if not isinstance(node, ast.ExceptHandler) or node.type is None:
        return
    if isinstance(node.type, ast.Tuple) and not node.type.elts:
        return
    yield Edit(node.type, "()")

"""Widen or narrow an ``except`` clause: too wide swallows an interrupt; too narrow lets a failure escape.

A handler that catches too much swallows an interrupt or a programming error as if it were the
expected failure; one that catches too little lets the expected failure escape. Each is a bug only a
test that raises the right exception, and a wrong one, can tell from the code as written.

- one type ``X`` becomes ``Exception`` and ``BaseException`` (``Exception`` only ``BaseException``,
  ``BaseException`` only ``Exception``);
- a tuple ``(A, B)`` becomes each of its members alone;
- a bare ``except:`` becomes ``except Exception:``.

``remove-handler`` makes the handler catch nothing; this operator never does.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .base import Edit, text_of_node

name = "except-clause"
examples = (
    (
        "try:\n    f()\nexcept GuardError:\n    g()\n",
        (
            "try:\n    f()\nexcept Exception:\n    g()\n",
            "try:\n    f()\nexcept BaseException:\n    g()\n",
        ),
    ),
    (
        "try:\n    f()\nexcept errors.GuardError as e:\n    g(e)\n",
        (
            "try:\n    f()\nexcept Exception as e:\n    g(e)\n",
            "try:\n    f()\nexcept BaseException as e:\n    g(e)\n",
        ),
    ),
    ("try:\n    f()\nexcept BaseException:\n    g()\n", ("try:\n    f()\nexcept Exception:\n    g()\n",)),
    ("try:\n    f()\nexcept Exception:\n    g()\n", ("try:\n    f()\nexcept BaseException:\n    g()\n",)),
    (
        "try:\n    f()\nexcept (A, b.B) as e:\n    g(e)\n",
        ("try:\n    f()\nexcept A as e:\n    g(e)\n", "try:\n    f()\nexcept b.B as e:\n    g(e)\n"),
    ),
    ("try:\n    f()\nexcept:\n    g()\n", ("try:\n    f()\nexcept Exception:\n    g()\n",)),
    # nothing to narrow or widen: an empty tuple, a one-member tuple, a type computed at run time
    ("try:\n    f()\nexcept ():\n    g()\n", ()),
    ("try:\n    f()\nexcept (A,):\n    g()\n", ()),
    ("try:\n    f()\nexcept errors():\n    g()\n", ()),
)

_WIDER = {"BaseException": ("Exception",), "Exception": ("BaseException",)}


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    if not isinstance(node, ast.ExceptHandler):
        return
    caught = node.type
    if caught is None:
        # the keyword alone is replaced: ``except`` -> ``except Exception``
        span = (node.lineno, node.col_offset, node.lineno, node.col_offset + len("except"))
        yield Edit(node, "except Exception", span=span)
    elif isinstance(caught, (ast.Name, ast.Attribute)):
        for wider in _WIDER.get(text_of_node(source, caught), ("Exception", "BaseException")):
            yield Edit(caught, wider)
    elif isinstance(caught, ast.Tuple) and len(caught.elts) > 1:
        for member in caught.elts:
            yield Edit(caught, text_of_node(source, member))

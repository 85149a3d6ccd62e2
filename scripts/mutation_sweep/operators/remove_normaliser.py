"""Drop a normalising call (``x.strip()`` -> ``x``): only input not already canonical shows it.

Input that arrives padded or in another case is a contract of its own: a test that only ever passes the
canonical form cannot tell the normaliser from its absence.

Only the receiver of a method is kept here. ``int(x)``, ``str(x)``, ``float(x)``, ``bool(x)`` and
``operator.index(x)`` are ``unwrap-call``'s: it unwraps every call of one positional argument to that
argument, so ``x.strip(chars)`` there becomes ``chars`` and here ``x``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .base import Edit, as_operand

name = "remove-normaliser"
examples = (
    ("y = x.strip()\n", ("y = x\n",)),
    ("y = spec.strip().partition(':')\n", ("y = spec.partition(':')\n",)),
    ("y = (a + b).lower()\n", ("y = (a + b)\n",)),
    ("y = x.rstrip('/')\n", ("y = x\n",)),
    ("y = f().casefold() or 'auto'\n", ("y = f() or 'auto'\n",)),
    # unwrap-call's, and calls that do not normalise
    ("y = int(x)\n", ()),
    ("y = x.split()\n", ()),
    ("y = strip(x)\n", ()),
)

NORMALISERS = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "casefold"})


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in NORMALISERS
        and not node.keywords
        and len(node.args) <= 1
    ):
        yield Edit(node, as_operand(node.func.value))

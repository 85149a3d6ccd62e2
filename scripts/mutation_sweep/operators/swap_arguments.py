"""Swap two adjacent arguments of one kind: it runs and type-checks; only two different values show it.

``_restore(runtime, original, selected)`` called as ``_restore(runtime, selected, original)`` runs, types
check, and puts the thread on the wrong device; a log or error message with its values swapped names the
wrong device. Only a test that gives the two different values, and reads the result, sees it.

- a call's positional arguments, each adjacent pair (a string literal beside a value is a message and
  its argument, and ``isinstance``/``issubclass`` take an object and a type: not two of one kind);
- the values of a ``"..." % (a, b)`` message, each adjacent pair;
- the values of an f-string, each adjacent pair of its ``{...}`` fields, conversions and all.

A pair whose two texts are the same makes the same source, and is skipped.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from itertools import pairwise

from .base import Edit, swapped, text_of_node

name = "swap-arguments"
examples = (
    ("f(a, b, c)\n", ("f(b, a, c)\n", "f(a, c, b)\n")),
    (
        "_restore(runtime,\n         original, selected)\n",
        (
            "_restore(original,\n         runtime, selected)\n",
            "_restore(runtime,\n         selected, original)\n",
        ),
    ),
    (
        "log.error('from %d to %d', a, b.c)\n",
        ("log.error('from %d to %d', b.c, a)\n",),
    ),
    ("m = 'from %d to %d' % (a, b)\n", ("m = 'from %d to %d' % (b, a)\n",)),
    ("m = f'from {a!r} to {b}'\n", ("m = f'from {b} to {a!r}'\n",)),
    # a single argument or value, the same text twice, a starred argument, a message beside its value
    ("f(a)\nf(x, x)\nf(*a, b)\nm = f'{a}'\nm = 'at %d' % (a,)\n", ()),
    ("f('text', a)\nisinstance(x, int)\nissubclass(C, B)\n", ()),
)

_TEXT = (ast.JoinedStr,)
_OBJECT_AND_TYPE = frozenset({"isinstance", "issubclass"})


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, _TEXT) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    )


def _pairs(source: str, values: Sequence[ast.expr]) -> Iterator[Edit]:
    for first, second in pairwise(values):
        if isinstance(first, ast.Starred) or isinstance(second, ast.Starred):
            continue
        if _is_text(first) != _is_text(second):
            continue
        if text_of_node(source, first) == text_of_node(source, second):
            continue
        yield swapped(source, first, second)


def _fields(node: ast.JoinedStr) -> Iterator[Edit]:
    # Positions inside an f-string are not reliable on every Python this runs on: remake the whole string.
    fields = [i for i, part in enumerate(node.values) if isinstance(part, ast.FormattedValue)]
    for i, j in pairwise(fields):
        if ast.dump(node.values[i]) == ast.dump(node.values[j]):
            continue
        values = list(node.values)
        values[i], values[j] = values[j], values[i]
        yield Edit(node, ast.unparse(ast.JoinedStr(values=values)))


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    if isinstance(node, ast.Call):
        if not (isinstance(node.func, ast.Name) and node.func.id in _OBJECT_AND_TYPE):
            yield from _pairs(source, node.args)
    elif (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and _is_text(node.left)
        and isinstance(node.right, ast.Tuple)
    ):
        yield from _pairs(source, node.right.elts)
    elif isinstance(node, ast.JoinedStr):
        yield from _fields(node)

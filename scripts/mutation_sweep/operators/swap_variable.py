"""Read one local for another of its kind (``original`` for ``index``): only values that differ show it.

Two locals of one type are the easiest to confuse and the hardest for a type checker to catch; a test
sees the slip only if the two hold different values when the line runs and it checks the result.

A load of a function's own local or parameter becomes, in turn, each of the ``NEAREST`` other locals of
the same kind bound before it (a parameter, or an assignment whose value ends earlier), nearest binding
first. The kind is the name's annotation in the function; else the one annotation the module gives that
name elsewhere (``code: int`` in one signature types ``code`` in every function); else what every
assignment binds when that is plain (a literal's type, a comparison's bool, ``int(...)``, an instance of
a capitalised class); else unknown, which goes with any kind. A method's ``self``/``cls`` goes with
nothing. Globals, closures' free names, names bound by ``except``, ``import``, a nested scope or a
comprehension are never read nor offered.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .base import Edit, text_of_node
from .scopes import annotated_names, bindings, kinds, own_nodes

name = "swap-variable"
examples = (
    (
        "def f(a: int, b: int, s: str):\n    return g(a)\n",
        ("def f(a: int, b: int, s: str):\n    return g(b)\n",),
    ),
    (
        "def f(self, index):\n    code, original = self.get()\n    return set(index)\n",
        (
            "def f(self, index):\n    code, original = self.get()\n    return set(code)\n",
            "def f(self, index):\n    code, original = self.get()\n    return set(original)\n",
        ),
    ),
    # an unknown kind goes with any; a name's annotation elsewhere in the module types it here
    (
        "def f(a: int, s: str):\n    b = g()\n    return h(a)\n",
        ("def f(a: int, s: str):\n    b = g()\n    return h(b)\n",),
    ),
    (
        "def f(code: int):\n    pass\ndef k(code, name: str):\n    n = 1\n    return code\n",
        ("def f(code: int):\n    pass\ndef k(code, name: str):\n    n = 1\n    return n\n",),
    ),
    # an optional R holds an R where it is read
    ("def g(r: R | None, t: R):\n    return t\n", ("def g(r: R | None, t: R):\n    return r\n",)),
    # a name is bound once its value is computed: ``b = a + 1`` cannot read ``b``
    ("def f(a):\n    b = a + 1\n    return b\n", ("def f(a):\n    b = a + 1\n    return a\n",)),
    # bound only after the load, a global, another kind, a closure's free name, self: nothing to swap
    ("def f(a):\n    g(a)\n    b = 1\n", ()),
    ("def f(a):\n    global g\n    g = a\n    return g\n", ()),
    ("def f(n: int):\n    s = 'x'\n    return s\n", ()),
    ("def f(self, x: int):\n    def g():\n        return x\n    return self\n", ()),
)

NEAREST = 2
_ALTERNATIVES = "_sweep_alternatives"


def _mark(function: ast.FunctionDef | ast.AsyncFunctionDef, typed: dict[str, str]) -> None:
    own = list(own_nodes(function.body))
    declared = {n for node in own if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}
    kind = {n: k for n, k in kinds(function, typed, own).items() if n not in declared}
    bound: dict[str, list[tuple[int, int]]] = {
        n: [(0, 0)] for n in kind if n in {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    }
    where = bindings(own)
    for node in own:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in kind:
            bound.setdefault(node.id, []).append(where.get(id(node), (node.lineno, node.col_offset)))
    for load in own:
        if not (isinstance(load, ast.Name) and isinstance(load.ctx, ast.Load) and load.id in bound):
            continue
        here = (load.lineno, load.col_offset)
        near: list[tuple[int, str]] = []
        for other, places in bound.items():
            before = [line for line, col in places if (line, col) <= here]
            if other != load.id and before and _same_kind(kind[other], kind[load.id]):
                near.append((load.lineno - max(before), other))
        setattr(load, _ALTERNATIVES, tuple(other for _, other in sorted(near)[:NEAREST]))


def _same_kind(one: str, other: str) -> bool:
    return "self" not in (one, other) and (one == other or "?" in (one, other))


def prepare(tree: ast.AST) -> None:
    typed = annotated_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _mark(node, typed)


def edits(node: ast.AST, source: str) -> Iterator[Edit]:
    alternatives: tuple[str, ...] = getattr(node, _ALTERNATIVES, ())
    # a position inside an f-string is not reliable on every Python: only where it reads as the name
    if alternatives and isinstance(node, ast.Name) and text_of_node(source, node) == node.id:
        for other in alternatives:
            yield Edit(node, other)

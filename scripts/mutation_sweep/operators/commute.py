"""When two adjacent statements provably commute: swapping them changes nothing, or cannot compile.

Cheap proofs only; any pair they do not cover is swapped:
- a docstring or a bare constant (it runs nothing), a bare annotation (``x: int``: nothing to order
  under postponed annotations), a ``global``/``nonlocal`` declaration or a ``from __future__`` import
  (moved, either a SyntaxError or nothing), beside anything;
- two statements that are the same;
- two absolute imports binding different names: each binds the imported module's own objects whichever
  runs first (import order among other packages is not this package's behaviour);
- at module or class level, where an interrupt or an error ends the whole sequence and only the
  namespace it leaves counts: two definitions (``def``, ``class``, an assignment to plain names) whose
  definition-time code (decorators, bases, defaults, annotations, the value, a class body outside its
  functions) calls nothing, reads no name the other binds, and binds other names. Each binds the same
  objects either way; only the namespace's key order differs. Applying a decorator is a call, unless it
  is ``property``, ``classmethod`` or ``staticmethod``, which only wrap the function.
"""

from __future__ import annotations

import ast

from .base import is_docstring

TOP = "_sweep_at_definition_level"  # the statement is in a module's or a class's own body
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_WRAPPERS = frozenset({"property", "classmethod", "staticmethod"})
_CALLS = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)


def commutes(first: ast.stmt, second: ast.stmt) -> bool:
    if _inert(first) or _inert(second) or ast.dump(first) == ast.dump(second):
        return True
    names, other = _outside_import(first), _outside_import(second)
    if names is not None and other is not None and not names & other:
        return True
    a, b = _definition(first), _definition(second)
    return (
        bool(getattr(first, TOP, False))
        and a is not None
        and b is not None
        and not (a[0] & b[0] or a[0] & b[1] or b[0] & a[1])
    )


def _inert(node: ast.stmt) -> bool:
    return (
        is_docstring(node)
        or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        or isinstance(node, (ast.Global, ast.Nonlocal))
        or (isinstance(node, ast.ImportFrom) and node.module == "__future__")
        or (isinstance(node, ast.AnnAssign) and node.value is None)
    )


def _outside_import(node: ast.stmt) -> set[str] | None:
    """The names an absolute import binds, or None for anything else."""
    if isinstance(node, ast.Import):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if isinstance(node, ast.ImportFrom) and node.level == 0 and all(a.name != "*" for a in node.names):
        return {alias.asname or alias.name for alias in node.names}
    return None


def _reads(nodes: list[ast.AST]) -> set[str] | None:
    """The names evaluating ``nodes`` reads; None when it calls anything."""
    found = [n for node in nodes for n in ast.walk(node)]
    if any(isinstance(n, _CALLS) for n in found):
        return None
    return {n.id for n in found if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _definition(node: ast.stmt) -> tuple[set[str], set[str]] | None:
    """(names bound, names read at definition time) of a definition that calls nothing; else None."""
    if _inert(node) or isinstance(node, ast.Pass):
        return set(), set()
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return _assignment(node)
    if not isinstance(node, _DEFS) or any(
        not (isinstance(d, ast.Name) and d.id in _WRAPPERS) for d in node.decorator_list
    ):
        return None
    header: list[ast.AST] = []
    body_reads: set[str] = set()
    if isinstance(node, ast.ClassDef):
        header += [*node.bases, *node.keywords]
        for statement in node.body:
            inner = _definition(statement)
            if inner is None:
                return None
            body_reads |= inner[1]
    else:
        header += [*node.args.defaults, *(d for d in node.args.kw_defaults if d), node.args]
        header += [node.returns] if node.returns else []
    reads = _reads(header)
    return None if reads is None else ({node.name}, reads | body_reads)


def _assignment(node: ast.Assign | ast.AnnAssign) -> tuple[set[str], set[str]] | None:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if not all(isinstance(n, (ast.Name, ast.Tuple, ast.Store)) for t in targets for n in ast.walk(t)):
        return None
    names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    values = [node.value] if node.value is not None else []
    reads = _reads([*([node.annotation] if isinstance(node, ast.AnnAssign) else []), *values])
    return None if reads is None else (names, reads)

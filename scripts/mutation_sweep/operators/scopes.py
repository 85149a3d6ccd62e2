"""What one function's own scope binds, where each name takes its value, and of what kind.

``swap-variable`` reads it. A kind is a name's annotation in the function, else the one annotation the
module gives that name elsewhere (``| None`` left off), else what every assignment binds when that is
plain, else ``"?"``; a method's ``self``/``cls`` is ``"self"``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_BUILT = {"int": "int", "str": "str", "float": "float", "bool": "bool", "len": "int", "repr": "str"}


def kind_of_annotation(annotation: ast.expr) -> str:
    """The annotation's text, ``| None`` left off: an optional int holds an int where it is read."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        for one, other in ((annotation.left, annotation.right), (annotation.right, annotation.left)):
            if isinstance(other, ast.Constant) and other.value is None:
                return kind_of_annotation(one)
    return ast.unparse(annotation)


def own_nodes(nodes: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of one function's own scope, annotations and nested scopes left out."""
    stack: list[ast.AST] = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES + _COMPREHENSIONS):
            continue
        children = [
            c
            for c in ast.iter_child_nodes(node)
            if not (isinstance(node, ast.AnnAssign) and c is node.annotation)
        ]
        stack.extend(reversed(children))


def _kind_of_value(value: ast.expr | None) -> str:
    if isinstance(value, ast.Constant) and value.value is not None:
        return type(value.value).__name__
    if isinstance(value, ast.JoinedStr):
        return "str"
    if isinstance(value, ast.Compare) or (isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)):
        return "bool"
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        callee = value.func.id
        return _BUILT.get(callee, callee if callee[:1].isupper() else "?")
    return "?"


def _after(node: ast.AST) -> tuple[int, int]:
    return node.end_lineno or 0, node.end_col_offset or 0  # type: ignore[attr-defined]


def bindings(nodes: list[ast.AST]) -> dict[int, tuple[int, int]]:
    """Where each stored name takes its value: after what it is assigned from (``x = x + 1``, a loop)."""
    where: dict[int, tuple[int, int]] = {}
    for node in nodes:
        pairs: list[tuple[ast.AST, ast.AST]] = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            pairs = [(t, node.value) for t in targets]
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            pairs = [(node.target, node.iter)]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            pairs = [(i.optional_vars, i.context_expr) for i in node.items if i.optional_vars]
        for target, value in pairs:
            for name_ in ast.walk(target):
                where[id(name_)] = _after(value)
    return where


def kinds(
    function: ast.FunctionDef | ast.AsyncFunctionDef, typed: dict[str, str], own: list[ast.AST]
) -> dict[str, str]:
    found: dict[str, set[str]] = {}
    args = function.args
    params = [p for p in (*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg) if p]
    for index, param in enumerate(params):
        if index == 0 and param.arg in ("self", "cls"):
            found[param.arg] = {"self"}
        else:
            found[param.arg] = {
                kind_of_annotation(param.annotation) if param.annotation else typed.get(param.arg, "?")
            }
    plain: set[int] = set()  # the targets of single assignments, whose value says their kind
    for node in own:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            plain.add(id(node.targets[0]))
            found.setdefault(node.targets[0].id, set()).add(
                typed.get(node.targets[0].id) or _kind_of_value(node.value)
            )
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            plain.add(id(node.target))
            found.setdefault(node.target.id, set()).add(kind_of_annotation(node.annotation))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and id(node) not in plain:
            found.setdefault(node.id, set()).add(typed.get(node.id, "?"))
    return {n: next(iter(k)) if len(k) == 1 else "?" for n, k in found.items()}


def annotated_names(tree: ast.AST) -> dict[str, str]:
    """Each name the module annotates the same way wherever it annotates it (parameters, variables)."""
    seen: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            seen.setdefault(node.arg, set()).add(kind_of_annotation(node.annotation))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            seen.setdefault(node.target.id, set()).add(kind_of_annotation(node.annotation))
    return {n: next(iter(k)) for n, k in seen.items() if len(k) == 1}

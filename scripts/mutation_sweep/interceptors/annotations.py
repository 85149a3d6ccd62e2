"""What only type checkers read: annotations, type parameters, and the imports and aliases they alone use.

Under ``from __future__ import annotations`` none of it is evaluated, so a mutant there cannot be told
apart by any test; these helpers let generation count such mutants and drop them.
"""

from __future__ import annotations

import ast


def is_type_checking(node: ast.stmt) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def annotation_children(node: ast.AST) -> list[ast.AST]:
    found: list[ast.AST] = []
    if isinstance(node, ast.arg) and node.annotation is not None:
        found.append(node.annotation)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
        found.append(node.returns)
    if isinstance(node, ast.AnnAssign):
        found.append(node.annotation)
    return found


def loaded_outside_annotations(tree: ast.Module) -> set[str]:
    """Names the module reads anywhere but in annotations (``__all__`` entries count as read)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        skip.update(id(a) for a in annotation_children(node))
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if id(node) in skip:
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            visit(node.value)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            names.update(
                e.value
                for e in ast.walk(node.value)
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            )
    return names


def only_for_annotations(node: ast.stmt, loaded: set[str]) -> bool:
    """An import, or a type alias, whose names nothing but annotations reads."""
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return False
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        bound = [(a.asname or a.name).split(".")[0] for a in node.names]
    elif (
        isinstance(node, ast.Assign)
        # a type alias (X = tuple[...], A | B) or a type variable (T = TypeVar("T"), P = ParamSpec("P"))
        and (
            isinstance(node.value, (ast.Subscript, ast.BinOp))
            or (
                isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id in ("TypeVar", "ParamSpec", "TypeVarTuple")
            )
        )
        and all(isinstance(t, ast.Name) and not t.id.startswith("__") for t in node.targets)
    ):
        bound = [t.id for t in node.targets if isinstance(t, ast.Name)]
    else:
        return False
    return not any(name in loaded for name in bound)

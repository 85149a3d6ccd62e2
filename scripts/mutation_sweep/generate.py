"""Generate every mutant of every file: walk the syntax tree, ask each operator, splice its edit in.

Mutants inside annotations are counted and dropped here (``from __future__ import annotations``
means they are never evaluated), as are those inside ``if TYPE_CHECKING:`` and those whose module
compiles to the same code as the original.
"""

from __future__ import annotations
import __future__

import ast
import bisect
import dataclasses
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType

from . import cython_view
from .interceptors import compiles_the_same
from .interceptors.annotations import (
    annotation_children,
    is_type_checking,
    loaded_outside_annotations,
    only_for_annotations,
)
from .operators import ALL
from .operators.base import Edit, prepare
from .spans import byte_offset
from .work_item import Mutant

TYPE_PARAMETERS = "type parameters of a subscript"
ANNOTATION_IMPORT = "an import or alias only annotations use"
ANNOTATION, TYPE_CHECKING, SAME_CODE = (
    "inside an annotation",
    "under if TYPE_CHECKING",
    "compiles to the same code",
)
CATCH_NOTHING, CYTHON_CATCH_NOTHING = "()", "tuple()"
CYTHON_ONLY = "touches Cython's own syntax (a declaration, signature, cast or nogil block)"


@dataclass
class Generated:
    mutants: list[Mutant] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # mutant id -> the mutated module's text
    skipped: Counter[str] = field(default_factory=Counter)
    # file -> line -> why its mutants were set aside unrun: those lines were mutated all the same
    set_aside: dict[str, dict[int, set[str]]] = field(default_factory=dict)

    def set_aside_at(self, file: str, line: int, reason: str) -> None:
        self.skipped[reason] += 1
        self.set_aside.setdefault(file, {}).setdefault(line, set()).add(reason)


@dataclass(frozen=True)
class _Site:
    node: ast.AST
    scope: str
    statement: ast.stmt | ast.excepthandler  # what the mutant's lines are: a handler counts as one
    skip: str | None
    at_import: bool  # the statement runs when the module is imported: module level or a class body


def _sites(tree: ast.Module, loaded: set[str]) -> Iterator[_Site]:

    def visit(
        node: ast.AST,
        scope: str,
        statement: ast.stmt | ast.excepthandler | None,
        skip: str | None,
        top: bool,
    ) -> Iterator[_Site]:
        if isinstance(node, ast.excepthandler):
            statement = node
        if isinstance(node, ast.stmt):
            statement = node
            if top and isinstance(node, (ast.Assign, ast.AnnAssign)):
                setattr(node, "_sweep_bound_at_top", True)  # noqa: B010 - ast nodes take no typed extras
            if is_type_checking(node):
                skip = skip or TYPE_CHECKING
            if only_for_annotations(node, loaded):
                skip = skip or ANNOTATION_IMPORT
            if isinstance(node, ast.AnnAssign) and node.value is None:
                skip = skip or ANNOTATION  # a declaration only: nothing of it runs
        if statement is not None:
            yield _Site(node, scope, statement, skip, top)
        annotations = {id(a) for a in annotation_children(node)}
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple):
            annotations.add(id(node.slice))  # X[a, b] parameterises a type here; nothing indexes by tuple
        inner_scope, inner_top = scope, top
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner_scope = node.name if scope == "<module>" else f"{scope}.{node.name}"
            inner_top = top and isinstance(node, ast.ClassDef)
        for child in ast.iter_child_nodes(node):
            in_header = isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            ) and child not in getattr(node, "body", [])
            # decorators, bases and defaults run in the enclosing scope, the body in the new one
            child_scope = scope if in_header else inner_scope
            child_top = top if in_header else inner_top
            child_skip = skip
            if id(child) in annotations:
                child_skip = TYPE_PARAMETERS if isinstance(node, ast.Subscript) else ANNOTATION
            yield from visit(child, child_scope, statement, child_skip, child_top)

    for stmt in tree.body:
        yield from visit(stmt, "<module>", None, None, True)


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _inside_body(edit: Edit, statement: ast.stmt | ast.excepthandler) -> bool:
    body = getattr(statement, "body", [])
    line = edit.span[0] if edit.span is not None else getattr(edit.node, "lineno", 0)
    return bool(body) and line >= body[0].lineno and edit.node is not statement


def span_of_edit(edit: Edit) -> tuple[int, int, int, int]:
    if edit.span is not None:
        return edit.span
    node = edit.node
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]


def splice(source: str, edit: Edit) -> tuple[str, str]:
    """The mutated module and the original text of the span. Columns are UTF-8 byte offsets."""
    data = source.encode()
    line, col, end_line, end_col = span_of_edit(edit)
    start, end = byte_offset(data, line, col), byte_offset(data, end_line, end_col)
    original = data[start:end].decode()
    # Keep every later line where it was, so tracebacks and coverage line numbers still agree.
    padding = "\n" * original.count("\n")
    replacement = edit.text + padding if padding and edit.text == "pass" else edit.text
    return (data[:start] + replacement.encode() + data[end:]).decode(), original


class _TopLevel:
    """A module's top-level statements, so that a mutant's code is compared where it was made only."""

    def __init__(self, tree: ast.Module, text: str) -> None:
        self.lines = text.splitlines(keepends=True)
        self.starts = [
            min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", ()))]) for s in tree.body
        ]
        self.ends = [s.end_lineno or s.lineno for s in tree.body]
        future = [s for s in tree.body if isinstance(s, ast.ImportFrom) and s.module == "__future__"]
        self.future = {tree.body.index(s) for s in future}
        self.flags = 0
        for statement in future:
            for alias in statement.names:
                feature = getattr(__future__, alias.name, None)
                self.flags |= feature.compiler_flag if feature is not None else 0

    def around(self, edit: Edit, mutated: str) -> tuple[str, str]:
        """The top-level statement holding ``edit``, as it was and as mutated (the whole module where the
        edit is not inside one)."""
        first, _, last, _ = span_of_edit(edit)
        k = bisect.bisect_right(self.starts, first) - 1
        if k < 0 or last > self.ends[k]:
            return "".join(self.lines), mutated
        start, end = self.starts[k], self.ends[k]
        mutated_lines = mutated.splitlines(keepends=True)
        moved = len(mutated_lines) - len(self.lines)
        if moved:
            # Later statements' line numbers change, which a class keeps as a constant from 3.13 on.
            return "".join(self.lines), mutated
        # After the first statement a string is no docstring: keep one before it, as the module does (a
        # future import must come first, and is no string).
        before = "pass\n" if k and k not in self.future else ""
        return (
            before + "".join(self.lines[start - 1 : end]),
            before + "".join(mutated_lines[start - 1 : end + moved]),
        )


def generate_file(
    path: Path, rel: str, out: Generated, loaded: set[str], operators: Sequence[ModuleType] = ALL
) -> None:
    source = path.read_text(encoding="utf-8")
    # A Cython source is read through its Python view; each edit of the view is made in the source.
    seen = cython_view.view(source) if is_cython(rel) else None
    text = source if seen is None else seen.text
    tree = ast.parse(text, filename=rel)
    statements = _TopLevel(tree, text)
    prepare(operators, tree)
    made: set[str] = set()
    occurrences: dict[str, int] = {}
    for site in _sites(tree, loaded):
        for operator in operators:
            for edit in operator.edits(site.node, text):
                statement = site.statement
                if site.skip is not None:
                    out.set_aside_at(rel, statement.lineno, site.skip)
                    continue
                mutated_source, original = splice(text, edit)
                if compiles_the_same(*statements.around(edit, mutated_source), rel, statements.flags):
                    out.set_aside_at(rel, statement.lineno, SAME_CODE)
                    continue
                text_of_edit = edit.text
                if seen is not None:
                    if operator.name == "remove-handler" and edit.text == CATCH_NOTHING:
                        # Cython compiles a literal ``except ():`` as a bare ``except:``, which catches
                        # everything; an empty tuple made at run time catches nothing, as in Python.
                        text_of_edit = CYTHON_CATCH_NOTHING
                    span = seen.source_span(source, span_of_edit(edit))
                    if span is None:
                        out.set_aside_at(rel, statement.lineno, CYTHON_ONLY)
                        continue
                    mutated_source, original = splice(source, Edit(edit.node, text_of_edit, span))
                mutant = Mutant(
                    file=rel,
                    scope=site.scope,
                    operator=operator.name,
                    original=original,
                    mutated=text_of_edit,
                    line=statement.lineno,  # a decorated definition's line is its def, as coverage counts it
                    end_line=statement.end_lineno or statement.lineno,
                    column=getattr(edit.node, "col_offset", 0),
                    definition=isinstance(statement, _DEFINITIONS) and not _inside_body(edit, statement),
                    at_import=site.at_import,
                )
                if mutated_source in made:
                    # two operators making the very same module: one run answers for both
                    out.skipped["duplicate of another mutant"] += 1
                    continue
                made.add(mutated_source)
                occurrences[mutant.key] = occurrence = occurrences.get(mutant.key, 0) + 1
                if occurrence > 1:
                    mutant = dataclasses.replace(mutant, occurrence=occurrence)
                out.mutants.append(mutant)
                out.sources[mutant.id] = mutated_source


def is_cython(rel: str) -> bool:
    return rel.endswith(".pyx")


def core_built(root: Path, files: Sequence[str]) -> bool:
    """Whether every Cython file of the package has its extension built beside it, for this Python."""
    cores = [root / f for f in files if is_cython(f)]
    return bool(cores) and all(
        any(c.with_suffix(suffix).exists() for suffix in EXTENSION_SUFFIXES) for c in cores
    )


def generate(root: Path, files: Sequence[str], operators: Sequence[ModuleType] = ALL) -> Generated:
    out = Generated()
    # a name any module of the package reads outside annotations is live in all of them
    loaded: set[str] = set()
    for rel in files:
        source = (root / rel).read_text(encoding="utf-8")
        text = cython_view.view(source).text if is_cython(rel) else source
        loaded |= loaded_outside_annotations(ast.parse(text))
    for rel in files:
        generate_file(root / rel, rel, out, loaded, operators)
    out.mutants.sort(key=lambda m: m.id)
    return out

"""``delete-statement``: a statement made ``pass``: every one of the real ``.pyx`` text (``with nogil``
blocks and casts included), and every one of Python where mutmut makes no mutant (module level, class
bodies, and a function body's statement on whose first line mutmut 3.8 mutates nothing: mutmut has the
others, so no line is mutated twice). Not docstrings, ``...``, headers or ``pass``; counted but left alone:
declarations (``cdef``, ``ctypedef``, ``cimport``, extern blocks, decorators, ``global``, ``from
__future__``, a bare annotation, what ``if TYPE_CHECKING:`` holds, an import, type variable or alias only
annotations read) and what the compiler refuses alone (a one-line clause, a statement sharing its line).
An id names the file, the scope, the statement's text and its occurrence there: never its line.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import PurePosixPath

from .. import edit, scopes
from ..edit import MODULE_SCOPE, content, split_lines
from . import Found

NAME = "delete-statement"
DECLARATIONS, REFUSED, MUTMUT = "declarations", "refused by the compiler", "mutated by mutmut"
# Narrowing rules: edits that cannot change behaviour, not made.
LAST_RETURN = "rule last-return: a `return None` the function would fall off to"
_DECLARATION = re.compile(
    r"(?:cdef|cpdef|ctypedef|cimport|DEF|IF|ELIF|ELSE|include|global|nonlocal)\b|from\s+\S+\s+cimport\b|@"
)
_DECLARATION_BLOCK = re.compile(r"(?:cdef\s+extern|ctypedef|cdef\s+(?:packed\s+)?(?:struct|union|enum))\b")
_STRING = re.compile(r"[rRbBuUfF]{0,2}[\"']")


class Maker:
    """An operator's edits of one file, each named by its file, scope, the text it changes and that text's
    occurrence there: never its line."""

    def __init__(self, file: str, source: str, mutmut: set[int], operator: str = NAME) -> None:
        self.file, self.source, self.lines, self.mutmut = file, source, split_lines(source), mutmut
        self.operator, self.prefix = operator, operator.split("-", maxsplit=1)[0]
        self.found = Found()
        self.seen: Counter[tuple[str, str]] = Counter()

    def skip(self, reason: str) -> None:
        self.found.skipped[reason] += 1

    def make(self, scope: str, first: int, last: int, replacement: list[str]) -> None:
        """Lines ``first``..``last`` (0-based) made ``replacement``."""
        text = " ".join("".join(self.lines[first : last + 1]).split())
        self.seen[scope, text] += 1
        mutated = "".join([*self.lines[:first], *replacement, *self.lines[last + 1 :]])
        named = f"{self.file}|{scope}|{text}|{self.seen[scope, text]}".encode()
        stem = PurePosixPath(self.file).stem[:40]
        mutant_id = f"{self.prefix}.{stem}.{hashlib.sha256(named).hexdigest()[:12]}"
        self.found.edits.append(edit.make(self.file, scope, (self.source, mutated), mutant_id, self.operator))

    def delete(self, scope: str, first: int, last: int) -> None:
        """Lines ``first``..``last`` (0-based) made one ``pass`` at the first one's indentation."""
        line, eol = self.lines[first], self.lines[last][len(content(self.lines[last])) :]
        self.make(scope, first, last, [f"{line[: len(line) - len(line.lstrip())]}pass{eol}"])


def _type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return getattr(test, "id", getattr(test, "attr", None)) == "TYPE_CHECKING"


def _annotations(node: ast.AST) -> list[ast.expr | None]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        return [
            node.returns,
            *(x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x),
        ]
    return [node.annotation] if isinstance(node, ast.AnnAssign) else []


def _names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names the module reads when it runs (``__all__``'s among them), and those only the type checker
    reads: in postponed annotations, under TYPE_CHECKING."""
    future = any(isinstance(s, ast.ImportFrom) and s.module == "__future__" for s in tree.body)
    typed: set[int] = set()
    for node in ast.walk(tree):
        held = [*node.body, *node.orelse] if isinstance(node, ast.If) and _type_checking(node) else []
        typed |= {id(n) for h in [*held, *(_annotations(node) if future else [])] if h for n in ast.walk(h)}
    loads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    exported = [
        s.value for s in tree.body if isinstance(s, ast.Assign) and "'__all__'" in ast.dump(s.targets[0])
    ]
    runs = {n.id for n in loads if id(n) not in typed}
    runs |= {
        c.value
        for e in exported
        for c in ast.walk(e)
        if isinstance(c, ast.Constant) and isinstance(c.value, str)
    }
    return runs, {n.id for n in loads if id(n) in typed}


def _typing_only(stmt: ast.stmt, names: tuple[set[str], set[str]]) -> bool:
    """An import, a type variable or a type alias whose names only the type checker reads."""
    bound: list[str] = []
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        bound = [(a.asname or a.name).split(".")[0] for a in stmt.names]
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        value, call = stmt.value, getattr(stmt.value, "func", None)
        typing = (
            "TypeAlias" in ast.dump(getattr(stmt, "annotation", ast.Pass()))
            or getattr(call, "id", getattr(call, "attr", None))
            in ("TypeVar", "ParamSpec", "TypeVarTuple", "NewType")
            or isinstance(value, ast.Subscript)
            or (isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr))
        )
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        bound = [t.id for t in targets if isinstance(t, ast.Name) and typing]
    return bool(bound) and all(not b.startswith("__") and b not in names[0] and b in names[1] for b in bound)


def mutmut_lines(file: str, source: str) -> set[int]:
    """The lines (1-based) on which mutmut 3.8 starts a mutant of ``source``: its own generation step,
    less what it leaves alone (module level, the functions it ignores)."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider
    from mutmut.mutation.file_mutation import create_mutations

    module, mutations, _, ignored = create_mutations(file, source)
    where = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    lines = set[int]()
    for mutation in mutations:
        container = mutation.contained_by_top_level_function
        if isinstance(container, cst.FunctionDef) and container.name.value not in ignored:
            lines.add(where[mutation.original_node].start.line)
    return lines


def _none(value: ast.expr | None) -> bool:
    return value is None or (isinstance(value, ast.Constant) and value.value is None)


def _ends(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The blocks of a compound statement, last in its function, whose end falls off the function: not a
    loop's (it goes round again), not a ``try``'s beside a ``finally``, nor its body beside an ``else``."""
    if isinstance(stmt, (ast.If, ast.With, ast.AsyncWith)):
        return [stmt.body, *([stmt.orelse] if isinstance(stmt, ast.If) else [])]
    if isinstance(stmt, ast.Match):
        return [case.body for case in stmt.cases]
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        tried: ast.Try = stmt  # type: ignore[assignment]
        if tried.finalbody:
            return []
        return [*(h.body for h in tried.handlers), tried.orelse or tried.body]
    return []


def _python(
    maker: Maker,
    body: list[ast.stmt],
    scope: list[str],
    declared: bool,
    names: tuple[set[str], set[str]],
    *,
    mutmut: set[int] | None = None,  # inside a function: the lines mutmut mutates
    tail: bool = False,  # falling off this block's end returns None from the function
) -> None:
    for stmt in body:
        ending = tail and stmt is body[-1]
        if scopes.inert(stmt):
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = mutmut if mutmut is not None or isinstance(stmt, ast.ClassDef) else maker.mutmut
            function = not isinstance(stmt, ast.ClassDef)
            _python(maker, stmt.body, [*scope, stmt.name], declared, names, mutmut=inner, tail=function)
            continue
        nested = scopes.blocks(stmt)
        if nested:  # a compound statement: its blocks, not its header
            ends = {id(b) for b in _ends(stmt)} if ending else set()
            for block in nested:
                inside = declared or _type_checking(stmt)
                _python(maker, block, scope, inside, names, mutmut=mutmut, tail=id(block) in ends)
            continue
        maker.found.statements += 1
        first, last = stmt.lineno - 1, (stmt.end_lineno or stmt.lineno) - 1
        before = maker.lines[first].encode()[: stmt.col_offset].decode(errors="replace")
        after = (
            content(maker.lines[last]).encode()[stmt.end_col_offset or 0 :].decode(errors="replace").strip()
        )
        future = isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"
        bare = isinstance(stmt, ast.AnnAssign) and stmt.value is None  # an annotation alone
        typing = isinstance(stmt, (ast.Global, ast.Nonlocal)) or (not scope and _typing_only(stmt, names))
        if declared or future or bare or typing:
            maker.skip(DECLARATIONS)
        elif ending and isinstance(stmt, ast.Return) and _none(stmt.value):
            maker.skip(LAST_RETURN)
        elif mutmut is not None and stmt.lineno in mutmut:
            maker.skip(MUTMUT)
        elif before.strip() or (after and not after.startswith("#")):  # it shares its line
            maker.skip(REFUSED)
        else:
            maker.delete(".".join(scope) or MODULE_SCOPE, first, last)


def cython_walk(lines: list[str]) -> Iterator[tuple[str, scopes.Statement, bool]]:
    """Each statement of Cython ``lines``, headers included, with its scope's name and whether it is in a
    block of declarations (an extern block, a struct)."""
    stack: list[tuple[int, str | None, bool]] = []  # (indent, a definition's name, a block of declarations)
    for s in scopes.statements(lines):
        while stack and stack[-1][0] >= len(s.indent):
            stack.pop()
        declared = any(block for _, _, block in stack)
        yield ".".join(name for _, name, _ in stack if name) or MODULE_SCOPE, s, declared
        if s.header:
            match = scopes.HEADER.match(lines[s.first])
            block = declared or bool(_DECLARATION_BLOCK.match(s.code))
            stack.append((len(s.indent), match["name"] if match else None, block))


def _cython(maker: Maker) -> None:
    for scope, s, declared in cython_walk(maker.lines):
        if s.header or _STRING.match(s.code) or re.fullmatch(r"pass\s*(?:#.*)?", s.code):
            continue
        maker.found.statements += 1
        if declared or _DECLARATION.match(s.code):
            maker.skip(DECLARATIONS)
        elif s.word in scopes.CLAUSES:
            maker.skip(REFUSED)
        else:
            maker.delete(scope, s.first, s.last)


class _DeleteStatement:
    name = NAME

    def find(self, file: str, source: str, mutmut: set[int] | None = None) -> Found:
        """``mutmut``: the lines mutmut mutates in ``file`` (None: read them from mutmut)."""
        compiled = file.endswith(edit.COMPILED_SUFFIX)
        maker = Maker(
            file, source, set() if compiled else mutmut_lines(file, source) if mutmut is None else mutmut
        )
        if compiled:
            _cython(maker)
        else:
            tree = ast.parse(source)
            _python(maker, tree.body, [], False, _names(tree))
        return maker.found


OPERATOR = _DeleteStatement()

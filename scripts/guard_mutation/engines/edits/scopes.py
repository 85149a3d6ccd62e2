"""How the engine reads source. Where a scope (``Class.method``, ``function``, ``<module>``) lies in a file:
by ``ast`` in Python, by indentation in Cython (spans: 0-based inclusive lines, decorators included).
The logical lines of Python-like text, Cython's included: brackets, strings and backslashes join
physical lines; what the weave and the operators read ``.pyx`` by, since Python's parser cannot."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .edit import MODULE_SCOPE

# A definition's header in Cython: def, class, cdef/cpdef functions with a return type, cdef classes.
HEADER = re.compile(
    r"^(?P<indent>[ \t]*)(?:async\s+)?"
    r"(?:(?:def|class)\s+|(?:cdef|cpdef)\s+(?:class\s+|inline\s+)?(?:[\w.*\[\] ]+?(?:\s+|\*))?)"
    r"(?P<name>\w+)\s*[(:]"
)
_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The non-empty blocks a compound statement holds (its clauses', handlers' and cases' too); none for
    a simple statement."""
    found = [getattr(stmt, field, None) for field in ("body", "orelse", "finalbody")]
    found += [h.body for h in [*getattr(stmt, "handlers", []), *getattr(stmt, "cases", [])]]
    return [b for b in found if b]


def inert(stmt: ast.stmt) -> bool:
    """``pass``, a docstring or ``...``: a statement that does nothing to mutate."""
    constant = getattr(stmt.value, "value", None) if isinstance(stmt, ast.Expr) else None
    return isinstance(stmt, ast.Pass) or isinstance(constant, str) or constant is Ellipsis


def _defs_named(body: list[ast.stmt], name: str) -> Iterator[_Def]:
    for stmt in body:
        if isinstance(stmt, _Def) and stmt.name == name:
            yield stmt
        elif not isinstance(stmt, _Def):  # under `if TYPE_CHECKING:` or `try:`, still the enclosing scope's
            for block in blocks(stmt):
                yield from _defs_named([s for s in block if isinstance(s, ast.stmt)], name)


def python_spans(source: str, qualname: str) -> list[tuple[int, int]]:
    tree = ast.parse(source)
    if qualname == MODULE_SCOPE:
        return [(0, max((node.end_lineno or node.lineno) for node in tree.body) - 1)] if tree.body else []
    nodes: list[_Def] = []
    bodies: list[list[ast.stmt]] = [tree.body]
    for part in qualname.split("."):
        nodes = [node for body in bodies for node in _defs_named(body, part)]
        bodies = [node.body for node in nodes]
    return [
        (min([n.lineno, *(d.lineno for d in n.decorator_list)]) - 1, (n.end_lineno or n.lineno) - 1)
        for n in nodes
    ]


def cython_spans(source: str, qualname: str) -> list[tuple[int, int]]:
    """A definition runs from its header (decorators included) to the last line before the next line of
    code indented no deeper than the header."""
    lines = source.splitlines()
    spans = [(0, len(lines) - 1)]
    if qualname == MODULE_SCOPE:
        return spans if lines else []
    depth: str | None = None
    for part in qualname.split("."):
        found: list[tuple[int, int]] = []
        for start, end in spans:
            for k in range(start, end + 1):
                match = HEADER.match(lines[k])
                if match is None or match["name"] != part:
                    continue
                indent = match["indent"]
                if depth is not None and len(indent) <= len(depth):
                    continue
                first = k
                while first > start and lines[first - 1].strip().startswith("@"):
                    first -= 1
                last = k
                for j in range(k + 1, end + 1):
                    text = lines[j]
                    if text.strip() and not text.strip().startswith("#"):
                        if len(text) - len(text.lstrip()) <= len(indent):
                            break
                        last = j
                found.append((first, last))
                depth = indent
        spans = found
        if not spans:
            return []
    return spans


def spans(file: str, source: str, qualname: str) -> list[tuple[int, int]]:
    """Every definition named ``qualname`` in ``file`` (a property's getter and setter share a name)."""
    return cython_spans(source, qualname) if file.endswith(".pyx") else python_spans(source, qualname)


CLAUSES = ("elif", "else", "except", "finally")


@dataclass(frozen=True)
class Statement:
    first: int  # 0-based physical lines, inclusive
    last: int
    indent: str
    code: str  # the first line, stripped
    header: bool  # ends with ":" and owns the indented block after it
    in_string: tuple[int, ...]  # lines of it that start inside a string literal

    @property
    def word(self) -> str:
        return re.split(r"[\s:(]", self.code, maxsplit=1)[0]


def _scan(line: str, depth: int, quote: str, tail: str) -> tuple[int, str, str]:
    """One physical line read on from an open bracket depth and string quote: the depth, the quote and
    the last character of code after it."""
    k = 0
    while k < len(line):
        char = line[k]
        if quote:
            if char == "\\":
                k += 2
                continue
            if line.startswith(quote, k):
                k += len(quote)
                quote = ""
                continue
        elif char == "#":
            break
        elif char in "\"'":
            quote = char * 3 if line.startswith(char * 3, k) else char
            k += len(quote)
            continue
        else:
            depth += (char in "([{") - (char in ")]}")
            tail = tail if char.isspace() else char
        k += 1
    return depth, quote, tail


def statements(lines: Sequence[str]) -> list[Statement]:
    found: list[Statement] = []
    depth, quote, first, tail = 0, "", -1, ""
    in_string: list[int] = []
    for number, line in enumerate(lines):
        if quote:
            in_string.append(number)
        elif first < 0:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            first, in_string = number, []
        depth, quote, tail = _scan(line, depth, quote, tail)
        if quote or depth > 0 or line.rstrip("\r\n").endswith("\\"):
            continue
        code = lines[first].strip()
        indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
        found.append(Statement(first, number, indent, code, tail == ":", tuple(in_string)))
        first, tail = -1, ""
    return found


def owner(found: Sequence[Statement], index: int) -> int | None:
    """The header whose block holds statement ``index``."""
    shallower = (k for k in range(index - 1, -1, -1) if len(found[k].indent) < len(found[index].indent))
    return next(shallower, None)


def block_end(found: Sequence[Statement], index: int) -> int:
    after = (k for k in range(index + 1, len(found)) if len(found[k].indent) <= len(found[index].indent))
    return next(after, len(found)) - 1

"""``negate-condition``: the test of an ``if``, ``elif`` or ``while`` made its opposite, ``not (test)``:
every one of the real ``.pyx`` text, and every one of Python where mutmut makes no mutant on the header's
line (mutmut 3.8 never negates a test). Counted but left alone: a test of several lines, a header sharing
its line with its body, Cython's compile-time ``IF``, what declares rather than runs (``if
TYPE_CHECKING``, a declaration block). An id names the file, the scope, the header's text and its
occurrence there: never its line.
"""

from __future__ import annotations

import ast
import re

from .. import edit
from ..edit import MODULE_SCOPE, content
from ..scopes import blocks
from . import Found
from .delete_statement import DECLARATIONS, MUTMUT, Maker, cython_walk, mutmut_lines

NAME = "negate-condition"
SPANS = "a test of several lines or a body on its line"
_HEADER = re.compile(r"(?P<lead>\s*(?:if|elif|while)\s+)(?P<test>.+?)(?P<tail>\s*:\s*(?:#.*)?)")


def _negate(maker: Maker, scope: str, line: int) -> None:
    text = maker.lines[line]
    header = _HEADER.fullmatch(content(text))
    if header is None:
        maker.skip(SPANS)
        return
    eol = text[len(content(text)) :]
    maker.make(scope, line, line, [f"{header['lead']}not ({header['test']}){header['tail']}{eol}"])


def _python(maker: Maker, body: list[ast.stmt], scope: list[str], mutmut: set[int] | None) -> None:
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = mutmut if mutmut is not None or isinstance(stmt, ast.ClassDef) else maker.mutmut
            _python(maker, stmt.body, [*scope, stmt.name], inner)
            continue
        if isinstance(stmt, (ast.If, ast.While)):
            maker.found.statements += 1
            if "TYPE_CHECKING" in ast.dump(stmt.test):
                maker.skip(DECLARATIONS)
                continue
            if mutmut is not None and stmt.lineno in mutmut:
                maker.skip(MUTMUT)
            elif stmt.test.end_lineno != stmt.lineno:
                maker.skip(SPANS)
            else:
                _negate(maker, ".".join(scope) or MODULE_SCOPE, stmt.lineno - 1)
        for block in blocks(stmt):
            _python(maker, block, scope, mutmut)


class _NegateCondition:
    name = NAME

    def find(self, file: str, source: str, mutmut: set[int] | None = None) -> Found:
        """``mutmut``: the lines mutmut mutates in ``file`` (None: read them from mutmut)."""
        if file.endswith(edit.COMPILED_SUFFIX):
            maker = Maker(file, source, set(), NAME)
            for scope, s, declared in cython_walk(maker.lines):
                if s.header and s.word in ("if", "elif", "while"):
                    maker.found.statements += 1
                    if declared:
                        maker.skip(DECLARATIONS)
                    elif s.first != s.last:
                        maker.skip(SPANS)
                    else:
                        _negate(maker, scope, s.first)
            return maker.found
        maker = Maker(file, source, mutmut_lines(file, source) if mutmut is None else mutmut, NAME)
        _python(maker, ast.parse(source).body, [], None)
        return maker.found


OPERATOR = _NegateCondition()

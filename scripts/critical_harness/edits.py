"""Locate a catalogue entry's edit in its scope and apply it: the anchor rules of the module docstring."""

from __future__ import annotations

import ast
import difflib
import io
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .compiled import is_compiled
from .compiled import scope_spans as compiled_scope_spans
from .model import MODULE_SCOPE, ConfigError, DefNode, Mutant, MutantSpec


@dataclass(frozen=True)
class _Match:
    line: int  # 0-based index of the first matched line
    n_lines: int
    indent: str  # indentation of the first matched line
    col: int | None = None  # substring matches only
    end: int | None = None


def _split_lines(source: str) -> list[str]:
    # Python's own newline set (\n, \r\n, \r), not str.splitlines(), which also splits on \f etc.
    return io.StringIO(source, newline="").readlines()


def _content(line: str) -> str:
    return line.rstrip("\r\n")


def _indent_of(text: str) -> str:
    return text[: len(text) - len(text.lstrip())]


def _normalise(text: str) -> list[str]:
    lines = [line.rstrip() for line in textwrap.dedent(text.replace("\r\n", "\n")).split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _nested_bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    bodies: list[list[ast.stmt]] = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list):
            bodies.append([item for item in value if isinstance(item, ast.stmt)])
    for holder in [*getattr(stmt, "handlers", []), *getattr(stmt, "cases", [])]:
        bodies.append(list(holder.body))
    return bodies


def _defs_named(body: list[ast.stmt], name: str) -> Iterator[DefNode]:
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if stmt.name == name:
                yield stmt
        else:
            # Definitions under `if TYPE_CHECKING:` / `try:` still belong to the enclosing scope.
            for nested in _nested_bodies(stmt):
                yield from _defs_named(nested, name)


def scope_spans(tree: ast.Module, qualname: str) -> list[tuple[int, int]]:
    """0-based inclusive line ranges of every definition named `qualname` (decorators included).

    ``<module>`` is the whole file, for the few critical lines that live outside any function.
    """
    if qualname == MODULE_SCOPE:
        return [(0, max((node.end_lineno or node.lineno) for node in tree.body) - 1)] if tree.body else []
    nodes: list[DefNode] = []
    bodies: list[list[ast.stmt]] = [tree.body]
    for part in qualname.split("."):
        nodes = [node for body in bodies for node in _defs_named(body, part)]
        bodies = [node.body for node in nodes]
    spans = []
    for node in nodes:
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        spans.append((first - 1, (node.end_lineno or node.lineno) - 1))
    return spans


def _block_indent(lines: list[str], k: int, text: list[str]) -> str | None:
    first = _content(lines[k]).rstrip()
    if not first.endswith(text[0]):
        return None
    indent = first[: len(first) - len(text[0])]
    if indent.strip():
        return None
    for offset, want in enumerate(text[1:], start=1):
        have = _content(lines[k + offset]).rstrip()
        if have != (indent + want if want else ""):
            return None
    return indent


def _line_matches(lines: list[str], spans: list[tuple[int, int]], text: list[str]) -> list[_Match]:
    found = set()
    for start, end in spans:
        for k in range(start, end - len(text) + 2):
            indent = _block_indent(lines, k, text)
            if indent is not None:
                found.add(_Match(k, len(text), indent))
    return sorted(found, key=lambda m: m.line)


def _substring_matches(lines: list[str], spans: list[tuple[int, int]], needle: str) -> list[_Match]:
    found = set()
    for start, end in spans:
        for k in range(start, end + 1):
            content = _content(lines[k])
            col = content.find(needle)
            while col != -1:
                found.add(_Match(k, 1, _indent_of(content), col, col + len(needle)))
                col = content.find(needle, col + 1)
    return sorted(found, key=lambda m: (m.line, m.col or 0))


def _parses(lines: list[str]) -> bool:
    try:
        ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        return False
    return True


def _eol(line: str, fallback: str = "\n") -> str:
    return line[len(_content(line)) :] or fallback


def _replace_block(lines: list[str], match: _Match, by_lines: list[str]) -> list[str]:
    before, after = lines[: match.line], lines[match.line + match.n_lines :]
    if by_lines:
        eol = _eol(lines[match.line])
        new = [(match.indent + text if text else "") + eol for text in by_lines]
        new[-1] = new[-1][: -len(eol)] + _eol(lines[match.line + match.n_lines - 1], "")
        return before + new + after
    if _parses(before + after):
        return before + after
    padded = [*before, f"{match.indent}pass{_eol(lines[match.line])}", *after]
    return padded if _parses(padded) else before + after


def _replace_inline(lines: list[str], match: _Match, by: str) -> list[str]:
    # Substring matches always carry columns.
    assert match.col is not None
    assert match.end is not None
    line = lines[match.line]
    content = _content(line)
    by_lines = [by] if "\n" not in by else _normalise(by) or [""]
    joiner = _eol(line)
    inserted = by_lines[0] + "".join(joiner + (match.indent + t if t else "") for t in by_lines[1:])
    new = content[: match.col] + inserted + content[match.end :] + line[len(content) :]
    return [*lines[: match.line], new, *lines[match.line + 1 :]]


def _edit(spec: MutantSpec, lines: list[str], spans: list[tuple[int, int]]) -> list[str]:
    anchor = spec.delete if spec.delete is not None else spec.replace
    assert anchor is not None  # load_config demands one of them
    text = _normalise(anchor)
    inline = spec.delete is None and len(text) == 1
    matches = _substring_matches(lines, spans, text[0]) if inline else _line_matches(lines, spans, text)
    if len(matches) != 1:
        kind = "delete" if spec.delete is not None else "replace"
        count = "not found" if not matches else f"found {len(matches)} times"
        raise ConfigError(
            f"mutant {spec.id!r}: {kind} text {_preview(anchor)} {count} in scope {spec.scope!r} "
            f"of {spec.file} (it must occur exactly once)"
        )
    if inline:
        return _replace_inline(lines, matches[0], spec.by or "")
    if is_compiled(spec.file):
        # No parser to consult: a deletion that empties a block is the compiler's to refuse (invalid).
        return (
            _replace_block(lines, matches[0], _normalise(spec.by or ""))
            if spec.by
            else [
                *lines[: matches[0].line],
                *lines[matches[0].line + matches[0].n_lines :],
            ]
        )
    return _replace_block(lines, matches[0], _normalise(spec.by or ""))


def _preview(text: str) -> str:
    lines = _normalise(text)
    return repr(lines[0] + (" ..." if len(lines) > 1 else ""))


def unified_diff(file: str, original: str, mutated: str) -> str:
    diff = difflib.unified_diff(
        [_content(line) for line in _split_lines(original)],
        [_content(line) for line in _split_lines(mutated)],
        fromfile=f"a/{file}",
        tofile=f"b/{file}",
        lineterm="",
    )
    return "\n".join(diff) + "\n"


def build_mutant(spec: MutantSpec, root: Path) -> Mutant:
    try:
        source = (root / spec.file).read_bytes().decode("utf-8")
        if is_compiled(spec.file):
            spans = compiled_scope_spans(source, spec.scope)
        else:
            spans = scope_spans(ast.parse(source, filename=spec.file), spec.scope)
    except (UnicodeDecodeError, SyntaxError, ValueError) as exc:
        raise ConfigError(f"mutant {spec.id!r}: cannot parse {spec.file}: {exc}") from exc
    if not spans:
        raise ConfigError(f"mutant {spec.id!r}: scope {spec.scope!r} not found in {spec.file}")
    mutated = "".join(_edit(spec, _split_lines(source), spans))
    if mutated == source:
        raise ConfigError(f"mutant {spec.id!r}: the edit leaves {spec.file} unchanged (scope {spec.scope!r})")
    return Mutant(spec, source, mutated, unified_diff(spec.file, source, mutated))

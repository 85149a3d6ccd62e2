"""The catalogue's named edits: each ``[[mutant]]`` located in its scope and applied. The text is dedented;
one line of ``replace`` matches inside a line, a ``delete`` or several lines match whole lines. It must
occur exactly once in its scope, else the entry is an ``EngineError``: a stale catalogue never passes
quietly. ``by`` takes the match's indentation; a deletion that empties a Python block leaves ``pass``."""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from pathlib import Path

from ...config import CatalogueEntry, Config
from .. import EngineError
from . import edit, scopes
from .edit import Edit, content, split_lines

OPERATOR = "catalogue"


@dataclass(frozen=True)
class _Match:
    line: int  # 0-based, the first matched line
    n_lines: int
    indent: str
    col: int | None = None  # substring matches only
    end: int | None = None


def _normalise(text: str) -> list[str]:
    """The text dedented, trailing spaces and the blank lines around it dropped."""
    lines = [line.rstrip() for line in textwrap.dedent(text.replace("\r\n", "\n")).split("\n")]
    return "\n".join(lines).strip("\n").split("\n") if any(lines) else []


def _block_indent(lines: list[str], k: int, text: list[str]) -> str | None:
    first = content(lines[k]).rstrip()
    indent = first[: len(first) - len(text[0])]
    if not first.endswith(text[0]) or indent.strip():
        return None
    rest = [content(lines[k + i]).rstrip() for i in range(1, len(text))]
    return indent if rest == [indent + t if t else "" for t in text[1:]] else None


def _matches(lines: list[str], spans: list[tuple[int, int]], text: list[str], inline: bool) -> list[_Match]:
    found: set[_Match] = set()
    for start, end in spans:
        if inline:
            for k in range(start, end + 1):
                text_k = content(lines[k])
                col = text_k.find(text[0])
                while col != -1:
                    indent = text_k[: len(text_k) - len(text_k.lstrip())]
                    found.add(_Match(k, 1, indent, col, col + len(text[0])))
                    col = text_k.find(text[0], col + 1)
        else:
            for k in range(start, end - len(text) + 2):
                block = _block_indent(lines, k, text)
                if block is not None:
                    found.add(_Match(k, len(text), block))
    return sorted(found, key=lambda m: (m.line, m.col or 0))


def _parses(lines: list[str]) -> bool:
    try:
        ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        return False
    return True


def _eol(line: str, fallback: str = "\n") -> str:
    return line[len(content(line)) :] or fallback


def _replace_block(lines: list[str], match: _Match, by: list[str], python: bool) -> list[str]:
    before, after = lines[: match.line], lines[match.line + match.n_lines :]
    if by:
        eol = _eol(lines[match.line])
        new = [(match.indent + text if text else "") + eol for text in by]
        new[-1] = new[-1][: -len(eol)] + _eol(lines[match.line + match.n_lines - 1], "")
        return before + new + after
    if not python or _parses(before + after):  # Cython: an emptied block is the compiler's to refuse
        return before + after
    padded = [*before, f"{match.indent}pass{_eol(lines[match.line])}", *after]
    return padded if _parses(padded) else before + after


def _replace_inline(lines: list[str], match: _Match, by: str) -> list[str]:
    line, (col, end) = lines[match.line], (match.col or 0, match.end or 0)
    by_lines = [by] if "\n" not in by else _normalise(by) or [""]
    inserted = by_lines[0] + "".join(_eol(line) + (match.indent + t if t else "") for t in by_lines[1:])
    new = content(line)[:col] + inserted + content(line)[end:] + line[len(content(line)) :]
    return [*lines[: match.line], new, *lines[match.line + 1 :]]


def apply(entry: CatalogueEntry, source: str) -> str:
    """``source`` with the entry's edit made; EngineError where its text is not found exactly once."""
    where = f"catalogue entry {entry.id!r} ({entry.file}, scope {entry.scope!r})"
    try:
        spans = scopes.spans(entry.file, source, entry.scope)
    except (SyntaxError, ValueError) as exc:
        raise EngineError(f"{where}: cannot parse the file: {exc}") from exc
    if not spans:
        raise EngineError(f"{where}: no such scope in the file")
    anchor = entry.delete if entry.delete is not None else entry.replace or ""  # config.read demands one
    text = _normalise(anchor) or [""]
    inline = entry.delete is None and len(text) == 1
    lines = split_lines(source)
    found = _matches(lines, spans, text, inline)
    if len(found) != 1:
        kind = "delete" if entry.delete is not None else "replace"
        count = "is not found" if not found else f"is found {len(found)} times"
        preview = text[0] + (" ..." if len(text) > 1 else "")
        raise EngineError(f"{where}: its {kind} text {preview!r} {count} (it must occur exactly once)")
    python = not entry.file.endswith(edit.COMPILED_SUFFIX)
    by = entry.by or ""
    mutated = (
        _replace_inline(lines, found[0], by)
        if inline
        else _replace_block(lines, found[0], _normalise(by), python)
    )
    result = "".join(mutated)
    if result == source:
        raise EngineError(f"{where}: the edit leaves the file unchanged")
    return result


def edits(config: Config, root: Path) -> list[Edit]:
    """Every entry of the catalogue as an ``Edit``, in the catalogue's order."""
    made = []
    for e in config.catalogue:
        path = (root / e.file).resolve()
        if not path.is_relative_to(root.resolve()) or path.suffix not in (".py", edit.COMPILED_SUFFIX):
            raise EngineError(f"catalogue entry {e.id!r}: {e.file} is not a .py or .pyx file of the project")
        try:
            source = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise EngineError(f"catalogue entry {e.id!r}: cannot read {e.file}: {exc}") from exc
        mutated = apply(e, source)
        made.append(
            edit.make(e.file, e.scope, (source, mutated), e.id, OPERATOR, killed_by=e.killed_by, why=e.why)
        )
    return made

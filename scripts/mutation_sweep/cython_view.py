"""A Python view of a Cython source: text ``ast`` parses, every character of code kept where it stood.

The sweep's operators read Python syntax trees. Cython adds declarations, typed signatures, casts and
address-of; the view blanks or drops them so that the rest parses, and remembers per line how to map a
position back. A line the view had to rewrite (a signature, a declaration with no value, an ``extern``
block, a ``with nogil`` block) is *masked*: no mutant may touch it. Everywhere else the view's text is the
source's, so an operator's edit of the view is the same edit of the source.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .spans import between

# Whole statements Python has no words for: gone from the view, blank lines in their place.
_DROPPED = re.compile(r"\s*(?:cimport\s|from\s+\S+\s+cimport\s|ctypedef\s|include\s|DEF\s)")
_EXTERN = re.compile(r"\s*cdef\s+extern\b")
_NOGIL = re.compile(r"\s*with\s+(?:nogil|gil)\s*:")
_CLASS = re.compile(r"(?P<indent>\s*)(?:cdef\s+|cpdef\s+)?class\s+(?P<rest>.*)")
_SIGNATURE = re.compile(
    r"(?P<indent>\s*)(?:async\s+def|def|cdef|cpdef)\s+(?P<head>[^=(]*?)(?P<name>\w+)\s*\("
)
# A C declaration: its type words, then the name (a pointer's stars go with the type).
_DECLARATION = re.compile(
    r"(?P<indent>\s*)cdef\s+(?:(?:public|readonly|inline|const|unsigned|signed|long|short)\s+)*"
    r"[\w.\[\]]+(?:\s*\*+\s*|\s+)(?P<name>\w+)\s*(?:(?P<value>=.*)|#.*)?$"
)
_UNTYPED = re.compile(r"(?P<indent>\s*)cdef\s+(?P<name>\w+)\s*=")
# A cast, <T> or <T *>, where an expression starts; blanked to spaces of its width.
_CAST = re.compile(r"<\s*(?:const\s+)?[A-Za-z_][\w.]*\??(?:\s*\*+)?\s*>(?=\s*[\w(<&\[])")
# Address-of where an expression starts (after an opening bracket, a comma, an equals sign or a cast).
_ADDRESS = re.compile(r"(?:(?<=[(,=>])|(?<=[(,=] ))&(?=[A-Za-z_])")


@dataclass(frozen=True)
class View:
    """The view's text; per line (1-based) how far the source's columns lie right of the view's; the
    lines no mutant may touch."""

    text: str
    shift: dict[int, int]
    masked: frozenset[int]

    def source_span(self, source: str, span: tuple[int, int, int, int]) -> tuple[int, int, int, int] | None:
        """The source's span for a span of the view (columns as ``ast`` gives them), or None where the
        two texts differ within it (a masked line, a blanked cast or ``&``)."""
        line, col, end_line, end_col = span
        if any(n in self.masked for n in range(line, end_line + 1)):
            return None
        first = self.text.splitlines()[line - 1]
        if self.shift.get(line) and col <= len(first) - len(first.lstrip()):
            # A statement that lost its declaration in the view: moving or rewriting it from its start
            # would leave the declaration on whatever takes its place.
            return None
        mapped = (line, col + self.shift.get(line, 0), end_line, end_col + self.shift.get(end_line, 0))
        if between(self.text, span) != between(source, mapped):
            return None
        return mapped


def _code_spans(line: str, quote: str) -> tuple[list[tuple[int, int]], str]:
    """The stretches of one line outside string literals and comments, and the quote still open after it."""
    spans: list[tuple[int, int]] = []
    k, start = 0, 0 if not quote else None
    while k < len(line):
        if quote:
            if line[k] == "\\":
                k += 2
                continue
            if line.startswith(quote, k):
                k += len(quote)
                quote, start = "", k
                continue
            k += 1
            continue
        char = line[k]
        if char == "#":
            break
        if char in "\"'":
            assert start is not None
            spans.append((start, k))
            quote = char * 3 if line.startswith(char * 3, k) else char
            k += len(quote)
            continue
        k += 1
    if not quote and start is not None:
        spans.append((start, k))
    return spans, quote if len(quote) == 3 else ""


def _blank(line: str, spans: list[tuple[int, int]]) -> str:
    out = list(line)
    for start, end in spans:
        code = line[start:end]
        for pattern in (_CAST, _ADDRESS):
            for match in pattern.finditer(code):
                for k in range(start + match.start(), start + match.end()):
                    out[k] = " "
    return "".join(out)


def _parameters(text: str) -> str:
    """A typed parameter list as Python's: each parameter's name, its default kept."""
    names = []
    depth, current = 0, ""
    for char in text + ",":
        if char == "," and depth == 0:
            part = current.strip()
            current = ""
            if not part:
                continue
            default = ""
            if "=" in part:
                part, value = part.split("=", 1)
                default = "=" + value.strip()
            stars = "**" if part.strip().startswith("**") else "*" if part.strip().startswith("*") else ""
            words = re.findall(r"\w+", part)
            if not words:
                names.append(stars)
                continue
            # A C type becomes the parameter's annotation, so that operators which read kinds see it.
            typed = f": {_kind(part, words)}" if len(words) > 1 and not stars else ""
            names.append(f"{stars}{words[-1]}{typed}{default}")
            continue
        depth += (char in "([{") - (char in ")]}")
        current += char
    return ", ".join(names)


def _kind(declared: str, words: list[str]) -> str:
    """A C type as one Python name: ``PyObject *`` reads ``PyObject_p``."""
    pointer = "_p" * declared.count("*")
    return "_".join(w for w in words[:-1] if w not in ("const", "public", "readonly", "inline")) + pointer


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _blocks(lines: list[str], index: int) -> Iterator[int]:
    """The lines of the block a header at ``index`` opens (the header included)."""
    yield index
    own = _indent(lines[index])
    for k in range(index + 1, len(lines)):
        if lines[k].strip() and _indent(lines[k]) <= own:
            return
        yield k


class _Reader:
    """One pass over the source's lines, each construct rewritten by its own method; each method returns
    the index of the next line to read, or None where the line is not its construct."""

    def __init__(self, source: str) -> None:
        self.lines = source.splitlines()
        self.out = list(self.lines)
        self.shift: dict[int, int] = {}
        self.masked: set[int] = set()
        self.quote = ""

    def read(self) -> None:
        k = 0
        while k < len(self.lines):
            if self.quote:
                _, self.quote = _code_spans(self.lines[k], self.quote)
                k += 1
                continue
            if _NOGIL.match(self.lines[k]):
                # Code without the GIL: an edit there rarely builds, and never runs as Python would.
                self.masked.update(j + 1 for j in _blocks(self.lines, k))
            for step in (self.extern, self.dropped, self.signature, self.class_, self.declaration):
                after = step(k)
                if after is not None:
                    k = after
                    break
            else:
                k = self.code(k, self.lines[k])

    def blank_out(self, first: int, last: int) -> int:
        for j in range(first, last + 1):
            self.out[j] = ""
            self.masked.add(j + 1)
        return last + 1

    def extern(self, k: int) -> int | None:
        return self.blank_out(k, max(_blocks(self.lines, k))) if _EXTERN.match(self.lines[k]) else None

    def dropped(self, k: int) -> int | None:
        return self.blank_out(k, k) if _DROPPED.match(self.lines[k]) else None

    def signature(self, k: int) -> int | None:
        line = self.lines[k]
        found = _SIGNATURE.match(line)
        if found is None or _CLASS.match(line):
            return None
        # The signature may span lines: join them to the closing bracket, then the colon.
        end, joined = k, ""
        for j in range(k, len(self.lines)):
            joined += self.lines[j].split("#")[0] + " "
            end = j
            if joined.count("(") == joined.count(")") and joined.rstrip().endswith(":"):
                break
        parameters = _parameters(joined[joined.index("(", found.end() - 1) + 1 : joined.rindex(")")])
        keyword = "async def" if line.lstrip().startswith("async") else "def"
        after = self.blank_out(k, end)
        self.out[k] = f"{found['indent']}{keyword} {found['name']}({parameters}):"
        return after

    def class_(self, k: int) -> int | None:
        found = _CLASS.match(self.lines[k])
        if found is None or not self.lines[k].rstrip().endswith(":"):
            return None
        self.out[k] = f"{found['indent']}class {found['rest']}"
        self.masked.add(k + 1)
        return k + 1

    def declaration(self, k: int) -> int | None:
        line = self.lines[k]
        untyped = _UNTYPED.match(line)
        found = untyped or _DECLARATION.match(line)
        if found is None:
            return None
        name_at, indent = found.start("name"), found["indent"]
        if untyped is None and found["value"] is None:
            # A declaration alone becomes an annotation, so that operators which read kinds see it.
            declared = line[:name_at].split("cdef", 1)[1]
            kind = _kind(declared, [*re.findall(r"\w+", declared), found["name"]])
            self.out[k] = f"{indent}{found['name']}: {kind}"
            self.masked.add(k + 1)
            return k + 1
        self.shift[k + 1] = name_at - len(indent)
        return self.code(k, indent + line[name_at:])

    def code(self, k: int, line: str) -> int:
        spans, self.quote = _code_spans(line, "")
        self.out[k] = _blank(line, spans)
        return k + 1


def view(source: str) -> View:
    reader = _Reader(source)
    reader.read()
    text = "\n".join(reader.out) + ("\n" if source.endswith("\n") else "")
    return View(text, reader.shift, frozenset(reader.masked))

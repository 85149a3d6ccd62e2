"""Mutant schemata for compiled sources: every mutant of a file woven into one source, each behind a switch.

A compiled mutant judged on its own needs its extension translated and compiled again, seconds each. Woven
together, one build serves them all: each mutated region becomes

    if _harness_mutant_ == 3:
        <the region as mutant 3 has it>
    else:
        <the region as it was>

and a warm server's child selects its mutant by number before its tests run (``_harness_select_``); with
none selected the build behaves as the original. A region is grown to whole statements of one block (a
changed ``if`` header takes its body and its ``elif``/``else`` clauses along), so each branch is a block
Cython accepts. A mutant that cannot be woven is judged as before, rebuilt on its own, for the reason
given: an edit at module level or in a class body (declarations, which no ``if`` can hold), of a ``cdef``
declaration, of a definition's header, or inside a string that spans lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

SWITCH = "_harness_mutant_"
SELECT = "_harness_select_"
_INDENT = "    "
_CLAUSES = ("elif", "else", "except", "finally")
_DEFINITION = re.compile(r"(?:async\s+)?def\s|(?:cdef|cpdef)\b.*\(|(?:cdef\s+)?class\s")
_CLASS = re.compile(r"(?:cdef\s+)?class\s")
# Statements no `if` can hold in Cython, or that change what is declared rather than what runs.
_NOT_IN_A_BRANCH = re.compile(
    r"(?:@|def\s|async\s+def\s|class\s|cdef\s|cpdef\s|ctypedef\s|cimport\s|DEF\s|IF\s|from\s+\S+\s+cimport\s)"
)


@dataclass(frozen=True)
class Schema:
    """One file's mutants woven together: the source, each woven mutant's number, each other's reason."""

    source: str
    numbers: dict[str, int]
    unwoven: dict[str, str]


@dataclass(frozen=True)
class _Statement:
    first: int  # 0-based physical lines, inclusive
    last: int
    indent: str
    code: str  # the first line, stripped
    header: bool  # ends with ":" and owns the indented block after it
    in_string: tuple[int, ...]  # lines of it that start inside a string literal


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


def _statements(lines: Sequence[str]) -> list[_Statement]:
    """The logical lines of Python-like source: brackets, strings and backslashes join physical lines."""
    found: list[_Statement] = []
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
        found.append(_Statement(first, number, indent, code, tail == ":", tuple(in_string)))
        first, tail = -1, ""
    return found


def _word(statement: _Statement) -> str:
    return re.split(r"[\s:(]", statement.code, maxsplit=1)[0]


def _owner(statements: Sequence[_Statement], index: int) -> int | None:
    """The header whose block holds statement ``index``."""
    for k in range(index - 1, -1, -1):
        if len(statements[k].indent) < len(statements[index].indent):
            return k
    return None


def _block_end(statements: Sequence[_Statement], index: int) -> int:
    end = index
    while end + 1 < len(statements) and len(statements[end + 1].indent) > len(statements[index].indent):
        end += 1
    return end


def _region(statements: Sequence[_Statement], lo: int, hi: int) -> tuple[int, int] | str:
    """Statements ``lo``..``hi`` grown to whole statements of one block, or why they cannot be."""
    while True:
        before = (lo, hi)
        base = statements[lo].indent
        shallower = [k for k in range(lo, hi + 1) if len(statements[k].indent) < len(base)]
        if shallower:  # the edit leaves a block: take the block's owner
            owner = _owner(statements, lo)
            if owner is None:
                return "the edit spans module-level statements"
            lo = owner
            continue
        while _word(statements[lo]) in _CLAUSES:  # an elif/else/except/finally: back to its `if`/`try`
            k = lo - 1
            while k >= 0 and len(statements[k].indent) > len(base):
                k -= 1
            if k < 0 or statements[k].indent != base:
                return f"line {statements[lo].first + 1}: a clause without its statement"
            lo = k
        for k in range(lo, hi + 1):
            if statements[k].header:
                hi = max(hi, _block_end(statements, k))
        while hi + 1 < len(statements) and statements[hi + 1].indent == base:
            if _word(statements[hi + 1]) not in _CLAUSES:
                break
            hi = _block_end(statements, hi + 1)
        if (lo, hi) == before:
            return lo, hi


def _enclosing(statements: Sequence[_Statement], lo: int) -> str | None:
    """Why the block holding statement ``lo`` is not a function's body that takes a branch, or None."""
    owner = _owner(statements, lo)
    while owner is not None and not _DEFINITION.match(statements[owner].code):
        owner = _owner(statements, owner)
    if owner is None:
        return "the edit is at module level"
    if _CLASS.match(statements[owner].code):
        return f"the edit is in the body of a class ({statements[owner].code[:40]!r})"
    if "\t" in statements[lo].indent:
        return f"line {statements[lo].first + 1}: indented with tabs"
    return None


def _unfit(statements: Sequence[_Statement], offset: int, indent: str) -> str | None:
    """Why ``statements`` (their lines counted from ``offset``) cannot sit in a branch at ``indent``, or
    None."""
    for statement in statements:
        where = f"line {offset + statement.first + 1}"
        if _NOT_IN_A_BRANCH.match(statement.code):
            return f"{where}: a declaration or definition ({statement.code[:40]!r})"
        if statement.in_string:
            return f"line {offset + statement.in_string[0] + 1}: inside a string that spans lines"
        if not statement.indent.startswith(indent):
            return f"{where}: leaves the block ({statement.code[:40]!r})"
    return None


def _changed(original: list[str], mutated: list[str]) -> tuple[int, int] | None:
    """The 0-based physical lines of ``original`` (first, last) outside which ``mutated`` is the same."""
    head = 0
    while head < min(len(original), len(mutated)) and original[head] == mutated[head]:
        head += 1
    tail = 0
    while tail < min(len(original), len(mutated)) - head and original[-1 - tail] == mutated[-1 - tail]:
        tail += 1
    if head == len(original) == len(mutated):
        return None
    return head, max(head, len(original) - tail - 1)


def _span(statements: Sequence[_Statement], first: int, last: int) -> tuple[int, int] | None:
    touched = [k for k, s in enumerate(statements) if s.last >= first and s.first <= last]
    if not touched:  # only blank lines or comments changed: take the statement before them
        touched = [k for k, s in enumerate(statements) if s.last < first][-1:]
    return (touched[0], touched[-1]) if touched else None


def _branch(lines: Sequence[str], indent: str) -> list[str]:
    body = [line if not line.strip() else _INDENT + line for line in lines]
    if not any(line.strip() and not line.lstrip().startswith("#") for line in lines):
        body.append(f"{indent}{_INDENT}pass\n")
    return body


def _lines(source: str) -> list[str]:
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines


class _Place(NamedTuple):
    first: int  # the lines of the original a mutant's branch replaces, inclusive
    last: int
    indent: str  # the block's


def _between(mutated: list[str], original: list[str], first: int, last: int) -> list[str]:
    """The mutant's lines where the original has ``first``..``last``: the rest of both is the same."""
    return mutated[first : len(mutated) - (len(original) - last - 1)]


def _place(lines: list[str], statements: Sequence[_Statement], mutated: list[str]) -> _Place | str:
    """Where in ``lines`` a mutant's branch goes, or why it cannot have one."""
    changed = _changed(lines, mutated)
    span = None if changed is None else _span(statements, *changed)
    if changed is None or span is None:
        return "the mutant changes no statement"
    grown = _region(statements, *span)
    if isinstance(grown, str):
        return grown
    lo, hi = grown
    place = _Place(statements[lo].first, statements[hi].last, statements[lo].indent)
    problem = _enclosing(statements, lo) or _unfit(statements[lo : hi + 1], 0, place.indent)
    if problem is not None:
        return problem
    if not place.first <= changed[0] <= changed[1] <= place.last:  # blank lines or comments beyond them
        return "the edit reaches past the statements it changes"
    branch = _statements(_between(mutated, lines, place.first, place.last))
    problem = _unfit(branch, place.first, place.indent)
    return place if problem is None else f"the mutant's {problem}"


def weave(original: str, mutants: Sequence[tuple[str, str]]) -> Schema:
    """``original`` with each ``(id, mutated source)`` behind a switch, numbered from 1 in the order given."""
    lines = _lines(original)
    statements = _statements(lines)
    regions: list[tuple[_Place, str, list[str]]] = []  # where, the mutant's id, its lines
    unwoven: dict[str, str] = {}
    for mutant_id, source in mutants:
        mutated = _lines(source)
        place = _place(lines, statements, mutated)
        if isinstance(place, str):
            unwoven[mutant_id] = place
        else:
            regions.append((place, mutant_id, mutated))
    numbers = {mutant_id: n for n, (mutant_id, _) in enumerate(mutants, 1) if mutant_id not in unwoven}
    # Overlapping regions share one `if` chain over their union; in each branch, the union as its mutant
    # has it. The first region of a group starts the union, so its indent is the union's.
    regions.sort(key=lambda region: region[0].first)
    groups: list[tuple[_Place, list[tuple[_Place, str, list[str]]]]] = []
    for region in regions:
        if groups and region[0].first <= groups[-1][0].last:
            union, members = groups[-1]
            groups[-1] = (union._replace(last=max(union.last, region[0].last)), [*members, region])
        else:
            groups.append((region[0], [region]))
    out: list[str] = []
    done = 0
    for union, members in groups:
        out += lines[done : union.first]
        keyword = "if"
        for _, mutant_id, mutated in sorted(members, key=lambda region: numbers[region[1]]):
            out.append(f"{union.indent}{keyword} {SWITCH} == {numbers[mutant_id]}:\n")
            out += _branch(_between(mutated, lines, union.first, union.last), union.indent)
            keyword = "elif"
        out.append(f"{union.indent}else:\n")
        out += _branch(lines[union.first : union.last + 1], union.indent)
        done = union.last + 1
    out += lines[done:]
    out.append(
        f"\n\ncdef int {SWITCH} = 0\n\n\ndef {SELECT}(int number):\n"
        f"{_INDENT}global {SWITCH}\n{_INDENT}{SWITCH} = number\n"
    )
    return Schema("".join(out), numbers, unwoven)

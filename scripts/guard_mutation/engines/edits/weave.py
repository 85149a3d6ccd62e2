"""Every compiled mutant of a file woven into one source, each behind a switch: one build serves them all.

Each mutated region, grown to whole statements of one block (an ``if`` header takes its body and clauses),
becomes ``if _harness_on_(3): <as mutant 3 has it> else: <as it was>``; ``_harness_on_`` also notes the
region reached, which ``_harness_reached_()`` hands over: the map of which test reaches which mutant. A
warm child turns its mutant on by ``_harness_select_(n)``, a process importing the build by
``GUARD_MUTATION_SWITCH=module:n``. What no branch can hold (module level, class bodies, declarations,
headers, inside a string spanning lines) is left out, with the reason: it is rebuilt alone.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .edit import changed_span, module_name
from .scopes import CLAUSES, Statement, block_end, owner, statements

log = logging.getLogger("guard_mutation.engines.edits")
SWITCH_ENV = "GUARD_MUTATION_SWITCH"
_TRIES = 4  # weaves, each leaving out the mutants the compiler refused in the one before
_INDENT = "    "
_DEFINITION = re.compile(r"(?:async\s+)?def\s|(?:cdef|cpdef)\b.*\(|(?:cdef\s+)?class\s")
_CLASS = re.compile(r"(?:cdef\s+)?class\s")
# Statements no `if` can hold in Cython, or that change what is declared rather than what runs.
_NOT_IN_A_BRANCH = re.compile(
    r"(?:@|def\s|async\s+def\s|class\s|cdef\s|cpdef\s|ctypedef\s|cimport\s|DEF\s|IF\s|from\s+\S+\s+cimport\s)"
)


@dataclass(frozen=True)
class Schema:
    """One file's mutants woven together: the source, each woven mutant's number, each other's reason,
    and which mutant's branch each line of the source (1-based) belongs to."""

    source: str
    numbers: dict[str, int]
    unwoven: dict[str, str]
    owners: dict[int, str]


class _Place(NamedTuple):
    first: int  # the lines of the original a mutant's branch replaces, inclusive
    last: int
    indent: str  # the block's


def _region(found: Sequence[Statement], lo: int, hi: int) -> tuple[int, int] | str:
    """Statements ``lo``..``hi`` grown to whole statements of one block, or why they cannot be."""
    while True:
        before = (lo, hi)
        base = found[lo].indent
        if any(len(found[k].indent) < len(base) for k in range(lo, hi + 1)):
            up = owner(found, lo)  # the edit leaves a block: take the block's owner
            if up is None:
                return "the edit spans module-level statements"
            lo = up
            continue
        while found[lo].word in CLAUSES:  # an elif/else/except/finally: back to its `if`/`try`
            lo = max(k for k in range(lo) if len(found[k].indent) <= len(base))
        hi = max([hi, *(block_end(found, k) for k in range(lo, hi + 1) if found[k].header)])
        while hi + 1 < len(found) and found[hi + 1].indent == base and found[hi + 1].word in CLAUSES:
            hi = block_end(found, hi + 1)
        if (lo, hi) == before:
            return lo, hi


def _enclosing(found: Sequence[Statement], lo: int) -> str | None:
    """Why the block holding statement ``lo`` is not a function's body that takes a branch, or None."""
    up = owner(found, lo)
    while up is not None and not _DEFINITION.match(found[up].code):
        up = owner(found, up)
    if up is None:
        return "the edit is at module level"
    if _CLASS.match(found[up].code):
        return f"the edit is in the body of a class ({found[up].code[:40]!r})"
    if "\t" in found[lo].indent:
        return f"line {found[lo].first + 1}: indented with tabs"
    return None


def _unfit(found: Sequence[Statement], offset: int, indent: str) -> str | None:
    for s in found:
        if _NOT_IN_A_BRANCH.match(s.code) or not s.indent.startswith(indent) or s.in_string:
            what = "inside a string that spans lines" if s.in_string else "a declaration, or leaves the block"
            return f"line {offset + s.first + 1}: {what} ({s.code[:40]!r})"
    return None


def _span(found: Sequence[Statement], first: int, last: int) -> tuple[int, int] | None:
    touched = [k for k, s in enumerate(found) if s.last >= first and s.first <= last]
    if not touched:  # only blank lines or comments changed: take the statement before them
        touched = [k for k, s in enumerate(found) if s.last < first][-1:]
    return (touched[0], touched[-1]) if touched else None


def _between(mutated: list[str], original: list[str], first: int, last: int) -> list[str]:
    """The mutant's lines where the original has ``first``..``last``: the rest of both is the same."""
    return mutated[first : len(mutated) - (len(original) - last - 1)]


def _place(lines: list[str], found: Sequence[Statement], mutated: list[str]) -> _Place | str:
    changed = changed_span(lines, mutated)
    span = None if changed is None else _span(found, *changed)
    if changed is None or span is None:
        return "the mutant changes no statement"
    grown = _region(found, *span)
    if isinstance(grown, str):
        return grown
    lo, hi = grown
    place = _Place(found[lo].first, found[hi].last, found[lo].indent)
    problem = _enclosing(found, lo) or _unfit(found[lo : hi + 1], 0, place.indent)
    if problem is not None:
        return problem
    if not place.first <= changed[0] <= changed[1] <= place.last:
        return "the edit reaches past the statements it changes"
    problem = _unfit(statements(_between(mutated, lines, place.first, place.last)), place.first, place.indent)
    return place if problem is None else f"the mutant's {problem}"


def _branch(lines: Sequence[str], indent: str) -> list[str]:
    body = [line if not line.strip() else _INDENT + line for line in lines]
    if not any(line.strip() and not line.lstrip().startswith("#") for line in lines):
        body.append(f"{indent}{_INDENT}pass\n")
    return body


def _lines(source: str) -> list[str]:
    return (source if source.endswith("\n") or not source else source + "\n").splitlines(keepends=True)


def weave(original: str, mutants: Sequence[tuple[str, str]], module: str, *, fixed: bool = False) -> Schema:
    """``original`` (of ``module``) with each ``(id, mutated source)`` behind a switch, from 1 in order.
    ``fixed``: the switch is the C macro ``GUARD_MUTATION_MUTANT`` (0 unless the compiler is told), which
    the optimiser folds: a build of mutant n alone, for the compiler's equivalence check."""
    lines = _lines(original)
    found = statements(lines)
    placed = [
        (_place(lines, found, _lines(source)), mutant_id, _lines(source)) for mutant_id, source in mutants
    ]
    unwoven = {mutant_id: place for place, mutant_id, _ in placed if isinstance(place, str)}
    regions = [(place, i, m) for place, i, m in placed if not isinstance(place, str)]
    numbers = {mutant_id: n for n, (mutant_id, _) in enumerate(mutants, 1) if mutant_id not in unwoven}
    # Overlapping regions share one `if` chain over their union; each branch: the union as its mutant has it.
    regions.sort(key=lambda region: region[0].first)
    groups: list[tuple[_Place, list[tuple[_Place, str, list[str]]]]] = []
    for region in regions:
        if groups and region[0].first <= groups[-1][0].last:
            union, members = groups[-1]
            groups[-1] = (union._replace(last=max(union.last, region[0].last)), [*members, region])
        else:
            groups.append((region[0], [region]))
    # The switch is set before any code runs: after the docstring and `from __future__`.
    start = next(
        (s.first for s in found if s.code[:1] not in "\"'" and "__future__" not in s.code), len(lines)
    )
    out = [*lines[:start], "cdef int _harness_mutant_ = _harness_from_env_()\n"]
    owners: dict[int, str] = {}
    done = start
    for union, members in groups:
        out += lines[done : union.first]
        keyword = "if"
        for _, mutant_id, mutated in sorted(members, key=lambda region: numbers[region[1]]):
            owners[len(out) + 1] = mutant_id
            out.append(f"{union.indent}{keyword} _harness_on_({numbers[mutant_id]}):\n")
            branch = _branch(_between(mutated, lines, union.first, union.last), union.indent)
            owners |= {len(out) + 1 + k: mutant_id for k in range(len(branch))}
            out += branch
            keyword = "elif"
        out.append(f"{union.indent}else:\n")
        out += _branch(lines[union.first : union.last + 1], union.indent)
        done = union.last + 1
    out += lines[done:]
    out.append(_TAIL.format(size=len(mutants) + 1, module=module, env=SWITCH_ENV))
    out.append(_FIXED if fixed else _ON)
    return Schema("".join(out), numbers, unwoven, owners)


_TAIL = """

cdef unsigned char _harness_seen_[{size}]

cdef int _harness_from_env_() except -1:
    module, _, number = __import__("os").environ.get("{env}", "").rpartition(":")
    return int(number) if module == "{module}" and number.isdigit() else 0

def _harness_select_(int number):
    global _harness_mutant_
    _harness_mutant_ = number

def _harness_reached_():
    reached = [n for n in range(1, {size}) if _harness_seen_[n]]
    for n in reached:
        _harness_seen_[n] = 0
    return reached
"""


_ON = """
cdef inline bint _harness_on_(int number) noexcept nogil:
    _harness_seen_[number] = 1
    return _harness_mutant_ == number
"""
_FIXED = '''
cdef extern from *:
    """
    #ifndef GUARD_MUTATION_MUTANT
    #define GUARD_MUTATION_MUTANT 0
    #endif
    """
    const int GUARD_MUTATION_MUTANT

cdef inline bint _harness_on_(int number) noexcept nogil:
    return GUARD_MUTATION_MUTANT == number
'''


def culprits(schema: Schema, file: str, output: str) -> set[str]:
    """The mutants whose branches the compiler's errors (in ``output``) point at."""
    lines = re.findall(rf"^\s*{re.escape(file)}:(\d+):\d+:", output, flags=re.MULTILINE)
    return {schema.owners[int(n)] for n in lines if int(n) in schema.owners}


class Built(NamedTuple):
    schemas: dict[str, Schema]  # file -> its woven source, as it built
    refused: frozenset[str]  # the mutants whose branches the compiler refused, left out


def weave_built(
    files: Mapping[str, tuple[str, Sequence[tuple[str, str]]]],
    build: Callable[[dict[str, Schema]], str | None],
    *,
    fixed: bool = False,
) -> Built | str:
    """Weave each file's mutants (file -> its original, its mutants) and ``build`` them: None where it
    built, else the compiler's output, its errors named by the file names given. Where those errors point
    into mutants' branches, those mutants are left out and the rest woven again; else the output, or after
    a few weaves a sentence saying so, comes back: nothing built."""
    refused: set[str] = set()
    for _ in range(_TRIES):
        schemas = {
            file: weave(original, [m for m in mutants if m[0] not in refused], module_name(file), fixed=fixed)
            for file, (original, mutants) in files.items()
        }
        output = build(schemas)
        if output is None:
            return Built(schemas, frozenset(refused))
        bad = set().union(*(culprits(schema, file, output) for file, schema in schemas.items()))
        if not bad:
            return output
        log.info("[weave] the compiler refuses %d woven mutants: they are left out of the weave", len(bad))
        refused |= bad
    return f"the compiler still refused woven mutants after {_TRIES} weaves"

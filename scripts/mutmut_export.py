"""Reading mutmut's verdicts: mutants/*.meta, each mutant located in its source file, exported as Results.

mutmut and libcst are imported only where a mutant's function text is read (``mutmut_child``, the one
module that imports mutmut), so reading the .meta files and listing survivors work without them.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mutation_common import (
    MutantRecord,
    Results,
    natural_key,
    parse_mutant_name,
    status_for_exit_code,
    universe_of,
)
from mutation_io import InputError
from mutation_scope import mutable_units
from mutmut_child import function_texts

RUN_COMMAND = "python scripts/mutation_run.py"


# --- reading mutmut's state -------------------------------------------------------------------------


def read_meta(mutants_dir: Path) -> dict[str, tuple[str, int | None, float | None]]:
    """name -> (source path, exit code, duration) from every ``mutants/**/*.py.meta``.

    The .meta files are mutmut's own record of verdicts: ``mutmut results`` and
    ``mutmut export-cicd-stats`` are both computed from them, but the first is human-oriented text
    that hides killed mutants unless ``--all true`` and the second only has totals.
    """
    if not mutants_dir.is_dir():
        raise InputError(f"{mutants_dir}/ does not exist. Run `mutmut run` (or `{RUN_COMMAND} run`) first.")
    found: dict[str, tuple[str, int | None, float | None]] = {}
    for meta in sorted(mutants_dir.rglob("*.py.meta")):
        source = meta.relative_to(mutants_dir).as_posix().removesuffix(".meta")
        if not Path(source).is_file():
            # a meta file left behind by a deleted source file is not a current mutant
            continue
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
            exit_codes: dict[str, int | None] = data["exit_code_by_key"]
            durations: dict[str, float] = data.get("durations_by_key", {})
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InputError(f"{meta}: unreadable mutmut meta file ({exc}). Re-run `mutmut run`.") from exc
        for name, code in exit_codes.items():
            found[name] = (source, code, durations.get(name))
    if not found:
        raise InputError(f"no mutants recorded under {mutants_dir}/. Run `mutmut run` first.")
    return found


# --- where a mutant is in the original file ---------------------------------------------------------


@dataclass
class Located:
    diff: str
    line: int
    column: int
    end_line: int
    end_column: int
    original: str
    replacement: str
    mutator: str


_DEF_RE = re.compile(r"^\s*(async\s+)?def\s")


def locate(name: str, source_path: str, source: str, orig_code: str, mutant_code: str) -> Located:
    """Map the mutant's change (function-relative, as ``mutmut show`` diffs it) onto the source file."""
    diff = "\n".join(
        difflib.unified_diff(
            orig_code.split("\n"),
            mutant_code.split("\n"),
            fromfile=source_path,
            tofile=source_path,
            lineterm="",
        )
    )
    orig_lines = orig_code.split("\n")
    mut_lines = mutant_code.split("\n")
    matcher = difflib.SequenceMatcher(a=orig_lines, b=mut_lines, autojunk=False)
    changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    qualname = parse_mutant_name(name).qualname
    span = next((s for s in mutable_units(source) if s.qualname == qualname), None)
    if not changes or span is None:
        line = span.def_line if span else 1
        return Located(diff, line, 1, line, 1, "", "", "Mutation")
    i1, j1 = changes[0][1], changes[0][3]
    i2, j2 = changes[-1][2], changes[-1][4]
    old_text = "\n".join(orig_lines[i1:i2])
    new_text = "\n".join(mut_lines[j1:j2])
    prefix = _common_prefix(old_text, new_text)
    suffix = _common_suffix(old_text[prefix:], new_text[prefix:])
    # widen to whole tokens: "<" -> "<=" reads better in a report than "" -> "="
    prefix -= _token_run(old_text[:prefix][::-1])
    suffix -= _token_run(old_text[len(old_text) - suffix :]) if suffix else 0
    original = old_text[prefix : len(old_text) - suffix]
    replacement = new_text[prefix : len(new_text) - suffix]

    def_index = next((i for i, text in enumerate(orig_lines) if _DEF_RE.match(text)), 0)
    file_lines = source.splitlines()
    anchor = orig_lines[min(i1, len(orig_lines) - 1)]
    first_line = span.def_line + (i1 - def_index)
    # Trust the arithmetic only if it lands on the same text; otherwise search inside the function.
    if not _same_line(file_lines, first_line, anchor):
        first_line = next(
            (n for n in range(span.start, span.end + 1) if _same_line(file_lines, n, anchor)), span.def_line
        )
    # methods come back dedented from libcst; shift columns by the file's extra indentation
    file_text = file_lines[first_line - 1] if 1 <= first_line <= len(file_lines) else anchor
    indent = (len(file_text) - len(file_text.lstrip())) - (len(anchor) - len(anchor.lstrip()))

    def position(offset: int) -> tuple[int, int]:
        line_start = old_text.rfind("\n", 0, offset) + 1
        return first_line + old_text.count("\n", 0, offset), offset - line_start + 1 + indent

    line, column = position(prefix)
    end_line, end_column = position(len(old_text) - suffix)
    return Located(
        diff=diff,
        line=max(line, 1),
        column=max(column, 1),
        end_line=max(end_line, 1),
        end_column=max(end_column, 1),
        original=original,
        replacement=replacement,
        mutator=mutator_name(original, replacement),
    )


_WORD = re.compile(r"[\w.]")
_OPERATOR = re.compile(r"[<>=!+\-*/%&|^~@]")


def _token_run(text: str) -> int:
    """Length of the run at the start of ``text`` made of one kind of token character."""
    if not text:
        return 0
    kind = _WORD if _WORD.match(text[0]) else _OPERATOR if _OPERATOR.match(text[0]) else None
    if kind is None:
        return 0
    n = 0
    while n < len(text) and kind.match(text[n]):
        n += 1
    return n


def _same_line(file_lines: list[str], number: int, text: str) -> bool:
    return 1 <= number <= len(file_lines) and file_lines[number - 1].strip() == text.strip()


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _common_suffix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


_OPERATOR_TEXT = re.compile(r"([<>=!+\-*/%&|^~@]+|and|or|not|is|in|is not|not in)")


def mutator_name(original: str, replacement: str) -> str:  # noqa: PLR0911 - a flat decision table
    """A category for the report; mutmut does not record which operator made a mutant."""
    o, r = original.strip(), replacement.strip()
    if r == "None":
        return "NoneReplacement"
    if {o, r} <= {"True", "False"}:
        return "BooleanLiteral"
    if "XX" in r or (r[-1:] in {"'", '"'} and o[-1:] in {"'", '"'}):
        return "StringLiteral"
    if re.fullmatch(r"-?[\d.]+(e-?\d+)?j?", o) and re.fullmatch(r"-?[\d.]+(e-?\d+)?j?", r):
        return "NumberLiteral"
    if {o, r} <= {"break", "continue", "return"}:
        return "KeywordReplacement"
    if _OPERATOR_TEXT.fullmatch(o) and _OPERATOR_TEXT.fullmatch(r):
        return "OperatorReplacement"
    if not r or (len(r) < len(o) and r in o):
        return "Removal"
    return "Mutation"


def export(
    names: Sequence[str] | None,
    *,
    scope: dict[str, Any],
    shard: dict[str, int] | None,
    universe: Sequence[str] | None = None,
) -> Results:
    """Results for ``names`` (default: every mutant); ``universe`` is the list a shard was cut from."""
    meta = read_meta(Path("mutants"))
    wanted = sorted(meta, key=natural_key) if names is None else list(names)
    unknown = [n for n in wanted if n not in meta]
    if unknown:
        raise InputError(f"export: {len(unknown)} selected mutant(s) are not in mutants/: {unknown[:5]}")
    sources: dict[str, str] = {}
    records: list[MutantRecord] = []
    for name in wanted:
        path, exit_code, duration = meta[name]
        if path not in sources:
            sources[path] = Path(path).read_text(encoding="utf-8")
        orig, mutant = function_texts(name, path)
        where = locate(name, path, sources[path], orig, mutant)
        records.append(
            MutantRecord(
                name=name,
                file=path,
                status=status_for_exit_code(exit_code),
                exit_code=exit_code,
                diff=where.diff,
                line=where.line,
                column=where.column,
                end_line=where.end_line,
                end_column=where.end_column,
                replacement=where.replacement,
                original=where.original,
                mutator=where.mutator,
                duration=duration,
            )
        )
    return Results(
        mutants=records,
        scope=scope,
        shard=shard,
        universe=universe_of(wanted if universe is None else universe),
        sources=sources,
        mutmut_version=_mutmut_version(),
    )


def _mutmut_version() -> str:
    try:
        return importlib.metadata.version("mutmut")
    except importlib.metadata.PackageNotFoundError:
        return ""


def survivor_lines(results: Results) -> list[str]:
    """Every not-killed mutant as a ``# name: status  (file:line)`` heading, its diff and a blank line."""
    lines: list[str] = []
    for mutant in sorted(results.mutants, key=lambda m: natural_key(m.name)):
        if mutant.status in {"killed", "caught by type check", "timeout", "segfault"}:
            continue
        lines += [f"# {mutant.name}: {mutant.status}  ({mutant.file}:{mutant.line})", mutant.diff, ""]
    return lines

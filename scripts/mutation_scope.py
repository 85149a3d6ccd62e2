"""Scoping a mutmut run by change: the code changed since a commit (``mutation_changes``), to functions.

Nothing here imports mutmut, pytest or guard_lib.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mutation_changes import Changes, changed_since, function_of
from mutation_common import natural_key, parse_mutant_name


def module_for_path(path: str | Path) -> str:
    """``guard_lib/device_guard.py`` -> ``guard_lib.device_guard``, the way mutmut names modules."""
    p = Path(path)
    dotted = ".".join(p.with_suffix("").parts)
    dotted = dotted.removeprefix("src.")
    return dotted.removesuffix(".__init__")


@dataclass(frozen=True)
class FunctionSpan:
    """A function mutmut can put a trampoline on: module-level ``def`` or a method of a module-level class."""

    qualname: str
    start: int  # first decorator line, else the def line
    end: int
    def_line: int
    def_col: int


def mutable_units(source: str) -> list[FunctionSpan]:
    """Top-level functions and methods of top-level classes: mutmut's unit of mutation and naming.

    Nested functions and classes belong to the enclosing unit (mutmut names their mutants after it).
    """
    tree = ast.parse(source)
    spans: list[FunctionSpan] = []

    def add(node: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str) -> None:
        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        end = node.end_lineno or node.lineno
        spans.append(FunctionSpan(qualname, start, end, node.lineno, node.col_offset))

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            add(node, node.name)
        elif isinstance(node, ast.ClassDef):
            for child in node.body:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    add(child, f"{node.name}.{child.name}")
    return spans


def functions_touching(source: str, lines: set[int]) -> set[str]:
    units = mutable_units(source)
    return {span.qualname for span in units if any(span.start <= n <= span.end for n in lines)}


def git_changed_functions(ref: str, paths: Sequence[str], repo: Path) -> set[str]:
    """``module:qualname`` of every mutable unit whose code changed since ``ref`` (committed, staged or
    not, or new), under ``paths``; a change to comments or spacing alone changes no unit."""
    changes = changed_since(ref, repo)
    roots = tuple(p.rstrip("/") for p in paths)
    result: set[str] = set()
    for path, lines in sorted(changes.lines.items()):
        if not path.endswith(".py") or not any(path == r or path.startswith(f"{r}/") for r in roots):
            continue
        source = (repo / path).read_text(encoding="utf-8")
        result.update(f"{module_for_path(path)}:{q}" for q in functions_touching(source, set(lines)))
    return result


def functions_reached_by(
    by_function: Mapping[str, Sequence[str]], changed: Callable[[str], bool]
) -> set[str]:
    """``module:qualname`` of every function a test ``changed`` accepts (a node id) ran, by a record of
    mutmut's stats (``associations``)."""
    return {
        parse_mutant_name(f"{mangled}__mutmut_1").function
        for mangled, ran in by_function.items()
        if any(changed(test) for test in ran)
    }


def associations(record: Path) -> dict[str, list[str]] | None:
    """A mutmut stats record's ``tests_by_mangled_function_name``; None where it cannot be read as one."""
    try:
        found = json.loads(record.read_text(encoding="utf-8"))["tests_by_mangled_function_name"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(found, dict) or not all(
        isinstance(ran, list) and all(isinstance(t, str) for t in ran) for ran in found.values()
    ):
        return None
    return found


def merge_associations(record: Path, more: dict[str, list[str]]) -> None:
    """Add ``more`` to the tests each function reaches in mutmut's record, leaving the rest of it as it
    was: what mutmut's own stats run of new tests adds, so that its run gives each function those tests."""
    data = json.loads(record.read_text(encoding="utf-8"))
    by_function: dict[str, list[str]] = data["tests_by_mangled_function_name"]
    for function, tests in more.items():
        by_function[function] = sorted({*by_function.get(function, []), *tests})
    record.write_text(json.dumps(data, indent=4), encoding="utf-8")


def named(test: str, targets: Collection[str]) -> bool:
    """Whether ``targets`` (``stats_targets``) name the node id ``test``."""
    file, function = function_of(test)
    return file in targets or f"{file}::{function}" in targets


def stats_targets(changes: Changes, tests: Collection[str]) -> list[str]:
    """What a stats run of the changed tests among ``tests`` (files) runs: a file whose change lies inside
    some of its tests, those (``file::Class.test_x``); any other, the whole file."""
    return [
        target
        for file in sorted(tests)
        for target in (
            [f"{file}::{name}" for name in sorted(changes.test_functions[file])]
            if file in changes.test_functions
            else [file]
        )
    ]


def filter_by_functions(names: Iterable[str], functions: set[str]) -> list[str]:
    return sorted((n for n in names if parse_mutant_name(n).function in functions), key=natural_key)

"""Which of guard_lib's function code mutmut 3.8 can mutate, and which it never looks at.

mutmut only mutates code inside a *mutable unit*: a module-level ``def`` or a method of a
module-level class (mutmut.mutation.file_mutation: OuterFunctionProvider and
combine_mutations_to_source). Within that it skips (MutationVisitor._skip_node_and_children):

- a decorated unit, unless its only decorator is the bare name ``staticmethod`` or ``classmethod``
  (so @property, @contextmanager, @overload, @functools.cache ... are skipped whole);
- units named ``__getattribute__``, ``__setattr__``, ``__new__``; ``__init__`` and
  ``_generate_next_value_`` of Enum/IntEnum/StrEnum/Flag/IntFlag subclasses;
- methods of a class whose body is on its ``class`` line, and everything in nested classes' methods
  (their mutants have no top-level unit to hang a trampoline on);
- lines carrying ``# pragma: no mutate`` (and ``block``/``start``/``end`` regions), lines matching
  ``do_not_mutate_patterns``, files matched by ``do_not_mutate``;
- (inside a unit) annotations, ``len(...)``/``isinstance(...)`` calls and non-literal parameter
  defaults: counted here as visible lines, since the rest of such a line still is.

Module-level code (constants, class attributes, imports) is never mutated; it is reported separately.
Lines counted are a function's body lines that hold code (not blank, not comment-only, not the
docstring). Output: text, or ``--json``. Exit status 0, or 2 when a path cannot be read.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mutation_io import InputError, read_toml

ALLOWED_DECORATORS = {"staticmethod", "classmethod"}
NEVER_MUTATE_FUNCTIONS = {"__getattribute__", "__setattr__", "__new__"}
NEVER_MUTATE_ENUM_FUNCTIONS = {"__init__", "_generate_next_value_"}
ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}
_PRAGMA = re.compile(r"#\s*pragma:.*no mutate(?P<tail>.*)$")


@dataclass
class Unit:
    file: str
    qualname: str
    line: int
    code_lines: int
    skipped: str | None  # why mutmut ignores it, or None
    pragma_lines: int = 0


@dataclass
class FileReport:
    file: str
    excluded_by_config: bool
    units: list[Unit] = field(default_factory=list)
    module_level_lines: int = 0


def _code_lines(source_lines: list[str], first: int, last: int, skip: set[int]) -> set[int]:
    found: set[int] = set()
    for number in range(first, last + 1):
        text = source_lines[number - 1].strip() if number <= len(source_lines) else ""
        if text and not text.startswith("#") and number not in skip:
            found.add(number)
    return found


def _docstring_lines(node: ast.AST) -> set[int]:
    body = getattr(node, "body", [])
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return set()


def pragma_lines(source_lines: list[str]) -> set[int]:
    """Lines ``# pragma: no mutate`` keeps mutmut away from (bare, ``start``..``end``)."""
    ignored: set[int] = set()
    start: int | None = None
    for number, text in enumerate(source_lines, start=1):
        match = _PRAGMA.search(text)
        if not match:
            continue
        token = match["tail"].lstrip(": ").split(",", 1)[0].split()
        kind = token[0] if token else "bare"
        if kind == "start":
            start = number
        elif kind == "end" and start is not None:
            ignored.update(range(start, number + 1))
            start = None
        else:
            ignored.add(number)
    return ignored


def _block_pragma(text: str) -> bool:
    """mutmut skips the whole statement (a def: the whole function) that this pragma opens."""
    match = _PRAGMA.search(text)
    return match is not None and match["tail"].lstrip(": ").split(",", 1)[0].split()[:1] == ["block"]


def _skip_reason(node: ast.FunctionDef | ast.AsyncFunctionDef, in_enum: bool) -> str | None:
    decorators = node.decorator_list
    if decorators:
        only = decorators[0]
        if not (len(decorators) == 1 and isinstance(only, ast.Name) and only.id in ALLOWED_DECORATORS):
            return "decorated: " + ", ".join("@" + ast.unparse(d) for d in decorators)
    if node.name in NEVER_MUTATE_FUNCTIONS:
        return f"mutmut never mutates {node.name}"
    if in_enum and node.name in NEVER_MUTATE_ENUM_FUNCTIONS:
        return f"mutmut never mutates Enum.{node.name}"
    return None


def _is_enum(node: ast.ClassDef) -> bool:
    for base in node.bases:
        name = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""
        if name in ENUM_BASES:
            return True
    return False


def _units(tree: ast.Module, source_lines: list[str]) -> Iterator[tuple[str, ast.AST, str | None]]:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node, _skip_reason(node, in_enum=False)
        elif isinstance(node, ast.ClassDef):
            one_line = node.body and node.body[0].lineno == node.lineno
            enum = _is_enum(node)
            for child in node.body:
                qualname = f"{node.name}.{child.name}" if hasattr(child, "name") else node.name
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    reason = "class body on the class line" if one_line else _skip_reason(child, in_enum=enum)
                    yield qualname, child, reason
                elif isinstance(child, ast.ClassDef):
                    yield qualname, child, "nested class: mutmut only mutates top-level classes' methods"


def analyse_file(path: Path, root: Path, excluded: bool, patterns: Sequence[str]) -> FileReport:
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (OSError, UnicodeDecodeError, SyntaxError) as exc:
        raise InputError(f"{path}: cannot analyse: {exc}") from exc
    lines = source.splitlines()
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    report = FileReport(file=rel, excluded_by_config=excluded)
    ignored = pragma_lines(lines) | {
        n for n, text in enumerate(lines, start=1) for p in patterns if re.search(p, text)
    }
    in_units: set[int] = set()
    for qualname, node, reason in _units(tree, lines):
        first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])  # type: ignore[attr-defined]
        last = node.end_lineno or node.lineno  # type: ignore[attr-defined]
        in_units.update(range(first, last + 1))
        header_end = node.body[0].lineno - 1 if getattr(node, "body", None) else node.lineno  # type: ignore[attr-defined]
        body = _code_lines(lines, header_end + 1, last, _docstring_lines(node))
        pragma = _block_pragma(lines[node.lineno - 1])  # type: ignore[attr-defined]
        skip = "# pragma: no mutate block" if reason is None and pragma else reason
        why = "file excluded by do_not_mutate" if excluded and skip is None else skip
        blocked = body & ignored
        report.units.append(Unit(rel, qualname, node.lineno, len(body), why, len(blocked)))  # type: ignore[attr-defined]
    module_lines = _code_lines(lines, 1, len(lines), in_units | _docstring_lines(tree))
    report.module_level_lines = len(module_lines)
    return report


def analyse(paths: Sequence[Path], config: dict[str, Any], root: Path) -> dict[str, Any]:
    do_not_mutate = list(config.get("do_not_mutate", []))
    patterns = list(config.get("do_not_mutate_patterns", []))
    files: list[FileReport] = []
    for base in paths:
        candidates = sorted(base.rglob("*.py")) if base.is_dir() else [base]
        for path in candidates:
            rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
            excluded = any(fnmatch.fnmatch(rel, p) for p in do_not_mutate)
            files.append(analyse_file(path, root, excluded, patterns))
    units = [u for f in files for u in f.units]
    total = sum(u.code_lines for u in units)
    visible = sum(u.code_lines - u.pragma_lines for u in units if u.skipped is None)
    return {
        "function_body_lines": total,
        "visible_lines": visible,
        "visible_fraction": (visible / total) if total else 1.0,
        "module_level_lines": sum(f.module_level_lines for f in files),
        "skipped": [asdict(u) for u in units if u.skipped is not None],
        "pragma_lines": sum(u.pragma_lines for u in units if u.skipped is None),
        "files": [
            {
                "file": f.file,
                "excluded_by_config": f.excluded_by_config,
                "function_body_lines": sum(u.code_lines for u in f.units),
                "visible_lines": sum(u.code_lines - u.pragma_lines for u in f.units if u.skipped is None),
                "module_level_lines": f.module_level_lines,
            }
            for f in files
        ],
    }


def render_text(result: dict[str, Any]) -> str:
    out = [
        f"mutmut sees {result['visible_lines']} of {result['function_body_lines']} function-body lines "
        f"({100 * result['visible_fraction']:.1f}%); {result['module_level_lines']} module-level lines "
        "are never mutated",
        "",
        "per file (visible/body lines):",
    ]
    for f in result["files"]:
        note = "  [do_not_mutate]" if f["excluded_by_config"] else ""
        out.append(f"  {f['file']}: {f['visible_lines']}/{f['function_body_lines']}{note}")
    out += ["", f"skipped functions ({len(result['skipped'])}):"]
    for u in sorted(result["skipped"], key=lambda u: (u["file"], u["line"])):
        out.append(f"  {u['file']}:{u['line']} {u['qualname']} ({u['code_lines']} lines): {u['skipped']}")
    if result["pragma_lines"]:
        out.append(f"\n{result['pragma_lines']} line(s) inside mutable functions carry # pragma: no mutate")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mutmut_coverage.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "paths", nargs="*", type=Path, help="files/packages (default: [tool.mutmut] source_paths)"
    )
    parser.add_argument("--pyproject", type=Path, default=Path("pyproject.toml"))
    parser.add_argument(
        "--config", type=Path, help="TOML with a [tool.mutmut] table to use instead of --pyproject's"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    try:
        source = args.config or args.pyproject
        config: dict[str, Any] = {}
        if source.is_file():
            config = read_toml(source).get("tool", {}).get("mutmut", {})
        paths = args.paths or [Path(p) for p in config.get("source_paths", ["guard_lib"])]
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise InputError(f"no such path(s): {', '.join(missing)}")
        result = analyse(paths, config, Path.cwd())
    except InputError as exc:
        print(f"mutmut_coverage: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2) if args.json else render_text(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

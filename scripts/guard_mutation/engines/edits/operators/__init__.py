"""The generated operators, by name (``[edits] operators`` names those a run applies). An operator is a
module of this package holding ``OPERATOR``: a ``name`` and ``find(file, source)``, every ``Edit`` it
makes of one file, with the statements it looked at and those it left alone, by reason. Another
operator is one more module, and one more entry in ``_all()``."""

from __future__ import annotations

import fnmatch
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ....config import Config
from ... import EngineError
from ..edit import COMPILED_SUFFIX, Edit

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib


@dataclass
class Found:
    edits: list[Edit] = field(default_factory=list)
    statements: int = 0  # what the operator looked at
    skipped: Counter[str] = field(default_factory=Counter)  # why it left some alone: how many


class Operator(Protocol):
    name: str

    def find(self, file: str, source: str, mutmut: set[int] | None = None) -> Found: ...


def _all() -> list[Operator]:
    from . import delete_statement, negate_condition

    return [delete_statement.OPERATOR, negate_condition.OPERATOR]


def _left_by_mutmut(root: Path) -> Callable[[str], bool]:
    """Whether mutmut leaves a file's functions alone: no ``[tool.mutmut]`` in pyproject.toml, a file
    outside its ``source_paths`` (mutmut's guess, ``src``, without them) or ``only_mutate``, or one in
    ``do_not_mutate``."""
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
        table = tomllib.loads(text).get("tool", {}).get("mutmut")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        table = None
    if not isinstance(table, dict):
        return lambda file: True
    paths = [str(p).rstrip("/") for p in table.get("source_paths") or ["src"]]
    only, skipped = (list(map(str, table.get(key) or [])) for key in ("only_mutate", "do_not_mutate"))

    def alone(file: str) -> bool:
        inside = any(file == p or file.startswith(f"{p}/") for p in paths)
        chosen = not only or any(fnmatch.fnmatch(file, p) for p in only)
        return not (inside and chosen) or any(fnmatch.fnmatch(file, p) for p in skipped)

    return alone


def generate(config: Config, root: Path, catalogue: Sequence[Edit]) -> tuple[list[Edit], list[str]]:
    """Every edit of the configured operators over the package's files (less ``[edits] exclude``), and a
    note per operator and implementation: how many statements it mutated of how many. An edit the
    catalogue already makes is left to it."""
    known = {op.name: op for op in _all()}
    for name in config.edits.operators:
        if name not in known:
            raise EngineError(f"[edits] operators: no operator {name!r} (known: {', '.join(sorted(known))})")
    where = root / config.harness.package
    found = sorted(where.rglob("*")) if where.is_dir() else [root / f"{config.harness.package}.py"]
    files = [p.relative_to(root).as_posix() for p in found if p.suffix in (".py", COMPILED_SUFFIX)]
    files = [f for f in files if f not in config.edits.exclude and "__pycache__" not in f]
    from .delete_statement import mutmut_lines

    alone, mutmut = _left_by_mutmut(root), dict[str, set[int]]()  # each file's mutmut lines, read once
    taken, made, notes = {(e.file, e.mutated) for e in catalogue}, list[Edit](), list[str]()
    for name, compiled in ((name, c) for name in config.edits.operators for c in (True, False)):
        chosen = [f for f in files if f.endswith(COMPILED_SUFFIX) == compiled]
        total, skipped, before = 0, Counter[str](), len(made)
        for file in chosen:
            source = (root / file).read_text(encoding="utf-8")
            if not compiled and file not in mutmut:
                mutmut[file] = set() if alone(file) else mutmut_lines(file, source)
            one = known[name].find(file, source, mutmut.get(file, set()))
            total, skipped = total + one.statements, skipped + one.skipped
            skipped["made by the catalogue"] += sum((e.file, e.mutated) in taken for e in one.edits)
            made += [e for e in one.edits if (e.file, e.mutated) not in taken]
            taken |= {(e.file, e.mutated) for e in one.edits}
        what = chosen[0].rsplit("/", 1)[-1] if len(chosen) == 1 else f"the {len(chosen)} .py files"
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items()) if n) or "none"
        notes += (
            [f"{name}: {what} {len(made) - before} of {total} statements mutated ({why} skipped)"]
            if chosen
            else []
        )
    return made, notes

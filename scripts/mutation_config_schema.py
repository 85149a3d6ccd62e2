"""The schema of mutation_config.toml: every table's keys and their types, and the one check of them.

Each tool reads its tables only after ``check`` has passed, so a key of the wrong type, an unknown key or a
missing one is refused in one format, whichever tool meets the file first:
``PATH: [table] 'key' must be WHAT, got VALUE`` (``[[table]] #N`` for an entry of an array of tables, with
``(engine)`` after it for a review). What a value means (a path that exists, an operator that exists, a
test that names a mutant) each tool checks itself, after this.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet


class SchemaError(Exception):
    """A table, key or value the schema refuses; the message names the file, the table and the key."""


@dataclass(frozen=True)
class Kind:
    says: str  # what a value must be, as the error message puts it
    accepts: Callable[[object], bool]


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _texts(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(_text(v) for v in value)


def _number(value: object) -> bool:
    # bool is an int to Python, never a number to a reader of the file
    return isinstance(value, int | float) and not isinstance(value, bool)


def _specifier(value: object) -> bool:
    try:
        SpecifierSet(value)  # type: ignore[arg-type]
    except (InvalidSpecifier, TypeError):
        return False
    return isinstance(value, str)


TEXT = Kind("a non-empty string", _text)
STRING = Kind("a string", lambda v: isinstance(v, str))
NAME = Kind("a package name (an identifier)", lambda v: isinstance(v, str) and v.isidentifier())
TEXTS = Kind("a non-empty list of non-empty strings", _texts)
STRINGS = Kind("a list of strings", lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v))
MODULES = Kind(
    "a non-empty list of module names (dotted identifiers)",
    lambda v: _texts(v) and all(p.isidentifier() for s in v for p in s.split(".")),  # type: ignore[attr-defined]
)
# inf and nan are floats too, and pass a plain "> 0" test (nan by failing every comparison)
SECONDS = Kind("a finite number of seconds > 0", lambda v: _number(v) and 0 < v < math.inf)  # type: ignore[operator]
PERCENT = Kind("a number from 0 to 100", lambda v: _number(v) and 0 <= v <= 100)  # type: ignore[operator]
JOBS = Kind('"auto" or an integer >= 1', lambda v: v == "auto" or (type(v) is int and v >= 1))
COUNT = Kind("an integer >= 1", lambda v: type(v) is int and v >= 1)
ENGINE = Kind("", lambda v: True)  # a review's engine: checked against REVIEW_KEYS, which names them
SPECIFIER = Kind("a version specifier such as '<3.12'", _specifier)


@dataclass(frozen=True)
class Key:
    kind: Kind
    required: bool = False


@dataclass(frozen=True)
class Table:
    reader: str  # the tool that reads it
    keys: Mapping[str, Key]
    array: bool = False  # [[name]]: each entry a table


TABLES: dict[str, Table] = {
    "harness": Table(
        "critical harness (guard-mutation run catalogue)",
        {
            "package": Key(NAME, required=True),
            "tests": Key(TEXTS),
            "pytest_args": Key(TEXTS),
            "timeout_s": Key(SECONDS),
            "jobs": Key(JOBS),
            "canary": Key(TEXT),
            "preload": Key(MODULES),
        },
    ),
    "mutant": Table(
        "critical harness (guard-mutation run catalogue)",
        {
            "id": Key(TEXT, required=True),
            "file": Key(TEXT, required=True),
            "scope": Key(TEXT, required=True),
            "why": Key(TEXT, required=True),
            "killed_by": Key(TEXTS, required=True),
            "delete": Key(TEXT),
            "replace": Key(TEXT),
            "by": Key(STRING),
        },
        array=True,
    ),
    "gate": Table("gate (guard-mutation gate)", {"min_score": Key(PERCENT)}),
    "sweep": Table(
        "sweep (guard-mutation run sweep)",
        {
            "package": Key(NAME, required=True),
            "exclude": Key(STRINGS),
            "operators": Key(STRINGS),
            "pytest_args": Key(STRINGS),
            "timeout_s": Key(SECONDS),
        },
    ),
    "reviewed": Table(
        "every engine: the reviewed survivors, each naming its engine",
        {"engine": Key(ENGINE, required=True), "reason": Key(TEXT, required=True), "python": Key(SPECIFIER)},
        array=True,
    ),
}
# engine -> the keys, beside ``engine``, ``reason`` and ``python``, that find its mutant among its own
REVIEW_KEYS: dict[str, Mapping[str, Key]] = {
    "mutmut": {"function": Key(TEXT, required=True), "diff": Key(TEXT, required=True), "removed": Key(TEXT)},
    "sweep": {
        "file": Key(TEXT, required=True),
        "scope": Key(TEXT, required=True),
        "operator": Key(TEXT, required=True),
        "original": Key(TEXT, required=True),
        "mutated": Key(TEXT, required=True),
        "occurrence": Key(COUNT),
    },
    "core-deletions": {"scope": Key(TEXT, required=True), "text": Key(TEXT, required=True)},
}


def check(data: Mapping[str, Any], path: Path) -> None:
    """Every table of ``data`` (the parsed file at ``path``) against the schema; SchemaError at the first
    fault."""
    unknown = sorted(set(data) - set(TABLES))
    if unknown:
        raise SchemaError(
            f"{path}: unknown top-level key(s) {', '.join(map(repr, unknown))}; the tables are "
            + ", ".join(sorted(TABLES))
        )
    for name, table in TABLES.items():
        if name not in data:
            continue
        value = data[name]
        if not table.array:
            _check_table(value, table.keys, f"{path}: [{name}]")
            continue
        if not isinstance(value, list):
            raise SchemaError(f"{path}: '{name}' must be an array of tables ([[{name}]])")
        for number, entry in enumerate(value, start=1):
            where = f"{path}: [[{name}]] #{number}"
            keys = table.keys
            if name == "reviewed":
                engine = entry.get("engine") if isinstance(entry, dict) else None
                if engine not in REVIEW_KEYS:
                    engines = ", ".join(REVIEW_KEYS)
                    raise SchemaError(f"{where}: 'engine' must be one of {engines}, got {engine!r}")
                where, keys = f"{where} ({engine})", {**keys, **REVIEW_KEYS[engine]}
            _check_table(entry, keys, where)


def _check_table(value: object, keys: Mapping[str, Key], where: str) -> None:
    if not isinstance(value, dict):
        raise SchemaError(f"{where} must be a table")
    unknown = sorted(set(value) - set(keys))
    missing = sorted(k for k, key in keys.items() if key.required and k not in value)
    if unknown or missing:
        faults = [f"unknown key(s) {', '.join(map(repr, unknown))}"] if unknown else []
        faults += [f"missing key(s) {', '.join(map(repr, missing))}"] if missing else []
        required = sorted(k for k, key in keys.items() if key.required)
        optional = sorted(k for k, key in keys.items() if not key.required)
        raise SchemaError(
            f"{where}: {'; '.join(faults)}; its keys are {', '.join(required) or 'none required'}"
            f", optionally {', '.join(optional) or 'none'}"
        )
    for name, key in keys.items():
        if name in value and not key.kind.accepts(value[name]):
            raise SchemaError(f"{where}: '{name}' must be {key.kind.says}, got {value[name]!r}")

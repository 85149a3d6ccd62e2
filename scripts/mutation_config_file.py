"""The one reader of ``mutation_config.toml``: every tool takes its tables from here.

The file holds each engine's tables side by side; reading it once, here, means one set of rules for
what a malformed file, an unreadable one or an unknown table says, whichever tool meets it first.
``[[reviewed]]`` is the one table of reviewed survivors for every engine: each entry names its ``engine``,
the keys that engine finds a mutant by, and one ``reason``; ``python``, a version specifier ("<3.12"),
limits an entry to the Pythons on which the review holds (elsewhere it is not read: the mutant is judged
as if nobody had reviewed it).
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

# table -> the tool that reads it
TABLES = {
    "harness": "critical harness (scripts/critical_mutants.py)",
    "mutant": "critical harness (scripts/critical_mutants.py)",
    "gate": "gate (scripts/mutation_gate.py)",
    "sweep": "sweep (scripts/mutation_sweep.py)",
    "reviewed": "every engine: the reviewed survivors, each naming its engine",
}
# engine -> the keys, beside ``engine`` and ``reason``, that find its mutant: (required, optional)
REVIEW_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "mutmut": (frozenset({"function", "diff"}), frozenset({"removed"})),
    "sweep": (frozenset({"file", "scope", "operator", "original", "mutated"}), frozenset({"occurrence"})),
    "core-deletions": (frozenset({"scope", "text"}), frozenset()),
}


class ConfigFileError(Exception):
    """The file is missing, unreadable, not TOML, or holds a table no tool reads."""


def read_config(path: Path) -> dict[str, Any]:
    """The parsed file; a table no tool reads is an error naming the tables there are."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigFileError(f"{path}: no such config file") from None
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot read it: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"{path}: not UTF-8: {exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # the message carries "(at line L, column C)"; keep it verbatim
        raise ConfigFileError(f"{path}: malformed TOML: {exc}") from exc
    unknown = sorted(set(data) - set(TABLES))
    if unknown:
        raise ConfigFileError(
            f"{path}: unknown top-level key(s) {', '.join(map(repr, unknown))}; the tables are "
            + ", ".join(sorted(TABLES))
        )
    _reviews(data, path)
    return data


def reviewed(data: dict[str, Any], path: Path, engine: str) -> list[tuple[int, dict[str, Any]]]:
    """``engine``'s entries of ``[[reviewed]]`` that hold on this Python, each with its number in the
    whole table."""
    running = ".".join(map(str, sys.version_info[:3]))
    return [
        (number, entry)
        for number, entry in _reviews(data, path)
        if entry["engine"] == engine and running in SpecifierSet(entry.get("python", ""))
    ]


def _reviews(data: dict[str, Any], path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every entry of ``[[reviewed]]``, checked: whichever tool reads the file reports a bad one alike."""
    raw = data.get("reviewed", [])
    if not isinstance(raw, list):
        raise ConfigFileError(f"{path}: 'reviewed' must be an array of tables ([[reviewed]])")
    entries: list[tuple[int, dict[str, Any]]] = []
    for number, entry in enumerate(raw, start=1):
        where = f"{path}: [[reviewed]] #{number}"
        if not isinstance(entry, dict):
            raise ConfigFileError(f"{where} must be a table")
        named = entry.get("engine")
        if named not in REVIEW_KEYS:
            raise ConfigFileError(f"{where}: engine must be one of {', '.join(REVIEW_KEYS)}, got {named!r}")
        required, optional = REVIEW_KEYS[named]
        _check_keys(entry, required | {"engine", "reason"}, optional | {"python"}, f"{where} ({named})")
        try:
            SpecifierSet(entry.get("python", ""))
        except (InvalidSpecifier, TypeError):
            raise ConfigFileError(
                f"{where} ({named}): python must be a version specifier such as '<3.12', "
                f"got {entry['python']!r}"
            ) from None
        entries.append((number, entry))
    return entries


def _check_keys(
    entry: dict[str, Any], required: Collection[str], optional: Collection[str], where: str
) -> None:
    unknown = sorted(set(entry) - set(required) - set(optional))
    missing = sorted(set(required) - set(entry))
    if unknown or missing:
        raise ConfigFileError(
            f"{where}: unknown key(s) {unknown}, missing key(s) {missing}; "
            f"its keys are {', '.join(sorted(required))}, optionally {', '.join(sorted(optional)) or 'none'}"
        )
    for key in required:
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise ConfigFileError(f"{where}: '{key}' must be a non-empty string")

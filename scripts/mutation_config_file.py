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
from pathlib import Path
from typing import Any

from mutation_config_schema import REVIEW_KEYS, SchemaError, check
from mutation_config_schema import TABLES as SCHEMA
from packaging.specifiers import SpecifierSet

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

__all__ = ["REVIEW_KEYS", "TABLES", "ConfigFileError", "read_config", "reviewed"]

# table -> the tool that reads it
TABLES = {name: table.reader for name, table in SCHEMA.items()}


class ConfigFileError(Exception):
    """The file is missing, unreadable, not TOML, or not what the schema (mutation_config_schema) says."""


def read_config(path: Path) -> dict[str, Any]:
    """The parsed file, checked whole against the schema: a fault in any table is an error here."""
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
    try:
        check(data, path)
    except SchemaError as exc:
        raise ConfigFileError(str(exc)) from exc
    return data


def reviewed(data: dict[str, Any], path: Path, engine: str) -> list[tuple[int, dict[str, Any]]]:
    """``engine``'s entries of ``[[reviewed]]`` (of a file ``read_config`` read) that hold on this Python,
    each with its number in the whole table."""
    running = ".".join(map(str, sys.version_info[:3]))
    return [
        (number, entry)
        for number, entry in enumerate(data.get("reviewed", []), start=1)
        if entry["engine"] == engine and running in SpecifierSet(entry.get("python", ""))
    ]

"""The one reader of ``mutation_config.toml``: every tool takes its tables from here.

The file holds each engine's tables side by side; reading it once, here, means one set of rules for
what a malformed file, an unreadable one or an unknown table says, whichever tool meets it first.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

# table -> the tool that reads it
TABLES = {
    "harness": "critical harness (scripts/critical_mutants.py)",
    "mutant": "critical harness (scripts/critical_mutants.py)",
    "gate": "gate (scripts/mutation_gate.py)",
    "equivalent": "gate (scripts/mutation_gate.py)",
    "sweep": "sweep (scripts/mutation_sweep.py)",
    "sweep_equivalent": "sweep (scripts/mutation_sweep.py)",
    "core_deletion_equivalent": "compiled core's deletions (scripts/core_deletions.py)",
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
    return data

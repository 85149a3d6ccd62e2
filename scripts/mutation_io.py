"""The mutation CLIs' shared edges: the input error, TOML and config reading, checked outputs, repo files.

Nothing here imports mutmut, pytest or guard_lib.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from mutation_config_file import ConfigFileError, read_config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib


class InputError(Exception):
    """Bad or missing input: the CLI turns it into exit status 2 with the message."""


def repo_text(path: str, root: Path) -> str | None:
    """The text of ``path`` when it is a file inside ``root`` (links resolved), else None: a report
    never copies in a file from elsewhere on the machine."""
    try:
        resolved = (root / path).resolve()
        resolved.relative_to(root.resolve())
        return resolved.read_text(encoding="utf-8") if resolved.is_file() else None
    except (ValueError, OSError, UnicodeDecodeError):
        return None


def check_output(path: Path, option: str) -> None:
    """A file the tool will write: not a folder, its folder made and writable, before any work starts."""
    if path.is_dir():
        raise InputError(f"{option} {path} is a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot create its folder ({exc.strerror})") from exc
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise InputError(f"{option} {path}: not writable")


def read_toml(path: Path) -> dict[str, Any]:
    """Any TOML file (pyproject.toml, an override); mutation_config.toml goes through read_mutation_config."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"{path}: cannot parse TOML: {exc}") from exc


def read_mutation_config(path: Path) -> dict[str, Any]:
    try:
        return read_config(path)
    except ConfigFileError as exc:
        raise InputError(str(exc)) from exc


def add_input_arguments(parser: argparse.ArgumentParser, *, critical_help: str) -> None:
    """The inputs the gate and the report both read: mutmut's results, the config, the harness's JSON."""
    parser.add_argument("--results", type=Path, default=Path("reports/mutmut-results.json"))
    parser.add_argument("--config", type=Path, default=Path("mutation_config.toml"))
    parser.add_argument("--critical", type=Path, help=critical_help)
    parser.add_argument(
        "--sweep", type=Path, help="the sweep's results (python scripts/mutation_sweep.py run)"
    )
    parser.add_argument(
        "--core-deletions",
        type=Path,
        help="the core deletions' results (python scripts/core_deletions.py --json FILE)",
    )

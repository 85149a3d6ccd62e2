"""Load and validate the catalogue (``[harness]`` and ``[[mutant]]`` of mutation_config.toml)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

from mutation_config_file import ConfigFileError, read_config

from .compiled import COMPILED_SUFFIX
from .edits import build_mutant
from .model import SAFE_ID, Config, ConfigError, Harness, MutantSpec
from .workspace import CACHE_DIRS, ROOT_EXCLUDES


def _jobs(value: object) -> int:
    return (os.cpu_count() or 1) if value == "auto" else int(value)  # type: ignore[call-overload]


def _inside_root(root: Path, rel: str, where: str, key: str) -> Path:
    if Path(rel).is_absolute() or PurePosixPath(rel).is_absolute():
        raise ConfigError(f"{where}: {key} {rel!r} must be a path relative to the project root {root}")
    resolved = (root / rel).resolve()
    if not resolved.is_relative_to(root):
        raise ConfigError(f"{where}: {key} {rel!r} is outside the project root {root}")
    relative = resolved.relative_to(root)
    if relative.parts and (relative.parts[0] in ROOT_EXCLUDES or CACHE_DIRS & set(relative.parts)):
        raise ConfigError(f"{where}: {key} {rel!r} lies in a directory the harness does not copy")
    return resolved


def _parse_harness(value: object, root: Path) -> Harness:
    # read_config checked every key's type (mutation_config_schema); what the values mean is checked here
    where = "[harness]"
    if value is None:
        raise ConfigError(f"{where}: no [harness] table; it names at least the package")
    table: dict[str, Any] = value  # type: ignore[assignment]
    package: str = table["package"]
    if not (root / package).is_dir() and not (root / f"{package}.py").is_file():
        raise ConfigError(f"{where}: package {package!r} not found under the project root {root}")
    tests: list[str] = table.get("tests", ["tests"])
    for test in tests:
        if not _inside_root(root, test.split("::")[0], where, "tests path").exists():
            raise ConfigError(f"{where}: tests path {test!r} does not exist under {root}")
    return Harness(
        package=package,
        tests=tuple(tests),
        pytest_args=tuple(table.get("pytest_args", ())),
        timeout_s=float(table.get("timeout_s", 30)),
        jobs=_jobs(table.get("jobs", "auto")),
        canary=table.get("canary"),
        preload=tuple(table.get("preload", ())),
    )


def _parse_mutant(table: dict[str, Any], index: int, root: Path) -> MutantSpec:
    mutant_id: str = table["id"]
    if not SAFE_ID.fullmatch(mutant_id):
        raise ConfigError(
            f"[[mutant]] #{index}: id {mutant_id!r} must be 1-80 characters of ASCII letters, digits, "
            "'.', '_' and '-', starting with a letter or digit (it names tables, files and JUnit cases)"
        )
    where = f"mutant {mutant_id!r}"
    file: str = table["file"]
    path = _inside_root(root, file, where, "file")
    if path.suffix not in (".py", COMPILED_SUFFIX) or not path.is_file():
        raise ConfigError(f"{where}: file {file!r} does not exist or is not a .py or {COMPILED_SUFFIX} file")
    delete, replace, by = table.get("delete"), table.get("replace"), table.get("by")
    if (delete is None) == (replace is None):
        raise ConfigError(f"{where}: give exactly one of 'delete' or 'replace' (with 'by')")
    if delete is not None and by is not None:
        raise ConfigError(f"{where}: 'by' only goes with 'replace'")
    if replace is not None and by is None:
        raise ConfigError(f"{where}: 'replace' needs 'by'")
    return MutantSpec(
        id=mutant_id,
        file=path.relative_to(root).as_posix(),
        scope=table["scope"],
        why=table["why"],
        killed_by=tuple(table["killed_by"]),
        delete=delete,
        replace=replace,
        by=by,
    )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return read_config(path)
    except ConfigFileError as exc:
        raise ConfigError(str(exc)) from exc


def project_root(given: Path | None, config: Path) -> Path:
    """``--root`` when given; else the git top-level of the working directory; else the config's folder."""
    if given is not None:
        if not given.is_dir():
            raise ConfigError(f"--root {given}: not a directory")
        return given.resolve()
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        top = None
    if top is not None and top.returncode == 0 and top.stdout.strip():
        return Path(top.stdout.strip()).resolve()
    return config.resolve().parent


def load_config(path: Path, root: Path | None = None) -> Config:
    """Parse and validate the whole file, and build every mutant; raise ConfigError on any fault.

    Paths in the file are relative to ``root``, the project (default: the file's own folder).
    """
    path = path.resolve()
    data = _read_toml(path)
    root = path.parent if root is None else root.resolve()
    harness = _parse_harness(data.get("harness"), root)
    entries = data.get("mutant")
    if not entries:
        raise ConfigError(f"config {path.name}: no [[mutant]] entries")
    specs = [_parse_mutant(entry, number, root) for number, entry in enumerate(entries, start=1)]
    ids = [spec.id for spec in specs]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ConfigError(f"duplicate mutant id(s): {', '.join(map(repr, duplicates))}")
    if harness.canary is not None and harness.canary not in ids:
        raise ConfigError(f"[harness]: canary {harness.canary!r} is not a mutant id")
    return Config(path, root, harness, tuple(build_mutant(spec, root) for spec in specs))

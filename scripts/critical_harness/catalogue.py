"""Load and validate the catalogue (``[harness]`` and ``[[mutant]]`` of mutation_config.toml)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path, PurePosixPath

if sys.version_info >= (3, 11):
    pass
else:
    pass

from mutation_config_file import ConfigFileError, read_config

from .compiled import COMPILED_SUFFIX
from .edits import build_mutant
from .model import SAFE_ID, Config, ConfigError, Harness, MutantSpec
from .workspace import CACHE_DIRS, ROOT_EXCLUDES

_HARNESS_KEYS = frozenset({"package", "tests", "pytest_args", "timeout_s", "jobs", "canary", "preload"})
_MUTANT_KEYS = frozenset({"id", "file", "scope", "delete", "replace", "by", "why", "killed_by"})


def _table(value: object, where: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table")
    return value


def _reject_unknown(table: dict[str, object], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}")


def _string(table: dict[str, object], key: str, where: str, *, required: bool) -> str | None:
    value = table.get(key)
    if value is None:
        if required:
            raise ConfigError(f"{where}: missing required key {key!r}")
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {key!r} must be a non-empty string")
    return value


def _required_string(table: dict[str, object], key: str, where: str) -> str:
    value = _string(table, key, where, required=True)
    assert value is not None  # _string raised otherwise
    return value


def _string_list(table: dict[str, object], key: str, where: str, default: list[str] | None) -> list[str]:
    value = table.get(key, default)
    if value is None:
        raise ConfigError(f"{where}: missing required key {key!r}")
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where}: {key!r} must be a non-empty list of strings")
    if not all(isinstance(item, str) and item.strip() for item in value):
        raise ConfigError(f"{where}: {key!r} must be a non-empty list of strings")
    return [str(item) for item in value]


def _positive_number(value: object, where: str) -> float:
    # inf and nan are floats too, and pass a plain "> 0" test (nan by failing every comparison)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ConfigError(f"{where}: 'timeout_s' must be a finite, positive number of seconds, got {value!r}")
    return float(value)


def _jobs(value: object, where: str) -> int:
    if value == "auto":
        return os.cpu_count() or 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: 'jobs' must be \"auto\" or a positive integer")
    return value


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
    where = "[harness]"
    table = _table(value, where)
    _reject_unknown(table, _HARNESS_KEYS, where)
    package = _required_string(table, "package", where)
    if not package.isidentifier():
        raise ConfigError(f"{where}: package {package!r} must be a top-level import name")
    if not (root / package).is_dir() and not (root / f"{package}.py").is_file():
        raise ConfigError(f"{where}: package {package!r} not found under the project root {root}")
    tests = _string_list(table, "tests", where, ["tests"])
    for test in tests:
        if not _inside_root(root, test.split("::")[0], where, "tests path").exists():
            raise ConfigError(f"{where}: tests path {test!r} does not exist under {root}")
    return Harness(
        package=package,
        tests=tuple(tests),
        pytest_args=tuple(_string_list(table, "pytest_args", where, None)) if "pytest_args" in table else (),
        timeout_s=_positive_number(table.get("timeout_s", 30), where),
        jobs=_jobs(table.get("jobs", "auto"), where),
        canary=_string(table, "canary", where, required=False),
        preload=_module_names(table, "preload", where),
    )


def _module_names(table: dict[str, object], key: str, where: str) -> tuple[str, ...]:
    names = _string_list(table, key, where, []) if key in table else []
    for name in names:
        if not all(part.isidentifier() for part in name.split(".")):
            raise ConfigError(f"{where}: {key} entry {name!r} is not a module name (dotted identifiers)")
    return tuple(names)


def _parse_mutant(value: object, index: int, root: Path) -> MutantSpec:
    table = _table(value, f"[[mutant]] number {index}")
    mutant_id = _required_string(table, "id", f"[[mutant]] number {index}")
    if not SAFE_ID.fullmatch(mutant_id):
        raise ConfigError(
            f"[[mutant]] number {index}: id {mutant_id!r} must be 1-80 characters of ASCII letters, digits, "
            "'.', '_' and '-', starting with a letter or digit (it names tables, files and JUnit cases)"
        )
    where = f"mutant {mutant_id!r}"
    _reject_unknown(table, _MUTANT_KEYS, where)
    file = _required_string(table, "file", where)
    path = _inside_root(root, file, where, "file")
    if path.suffix not in (".py", COMPILED_SUFFIX) or not path.is_file():
        raise ConfigError(f"{where}: file {file!r} does not exist or is not a .py or {COMPILED_SUFFIX} file")
    delete = table.get("delete")
    replace, by = table.get("replace"), table.get("by")
    if (delete is None) == (replace is None):
        raise ConfigError(f"{where}: give exactly one of 'delete' or 'replace' (with 'by')")
    if delete is not None and by is not None:
        raise ConfigError(f"{where}: 'by' only goes with 'replace'")
    if replace is not None and by is None:
        raise ConfigError(f"{where}: 'replace' needs 'by'")
    if by is not None and not isinstance(by, str):
        raise ConfigError(f"{where}: 'by' must be a string")
    return MutantSpec(
        id=mutant_id,
        file=path.relative_to(root).as_posix(),
        scope=_required_string(table, "scope", where),
        why=_required_string(table, "why", where),
        killed_by=tuple(_string_list(table, "killed_by", where, None)),
        delete=_string(table, "delete", where, required=False),
        replace=_string(table, "replace", where, required=False),
        by=by,
    )


def _read_toml(path: Path) -> dict[str, object]:
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
    harness = _parse_harness(data.get("harness", {}), root)
    entries = data.get("mutant")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"config {path.name}: no [[mutant]] entries")
    specs = [_parse_mutant(entry, number, root) for number, entry in enumerate(entries, start=1)]
    ids = [spec.id for spec in specs]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ConfigError(f"duplicate mutant id(s): {', '.join(map(repr, duplicates))}")
    if harness.canary is not None and harness.canary not in ids:
        raise ConfigError(f"[harness]: canary {harness.canary!r} is not a mutant id")
    return Config(path, root, harness, tuple(build_mutant(spec, root) for spec in specs))

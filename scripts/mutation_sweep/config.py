"""The sweep's settings and reviewed equivalents, read from ``mutation_config.toml``.

``[sweep]`` names the package, the files it leaves out and the pytest arguments; each
``[[sweep_equivalent]]`` is a reviewed survivor, keyed by file, scope, operator, original and mutated
text (never by line), with a one-line reason.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover - exercised only on 3.10
    pass

from mutation_config_file import ConfigFileError, read_config
from mutation_model import mutant_key

from .operators import ALL
from .work_item import Mutant


class ConfigError(Exception):
    """mutation_config.toml cannot be used; nothing was run."""


@dataclass(frozen=True)
class Equivalent:
    file: str
    scope: str
    operator: str
    original: str
    mutated: str
    reason: str
    index: int
    occurrence: int | None = None  # which of several identical edits in the scope, when not all

    @property
    def key(self) -> str:
        return mutant_key(self.file, self.scope, self.operator, self.original, self.mutated)

    def matches(self, mutant: Mutant) -> bool:
        return mutant.key == self.key and self.occurrence in (None, mutant.occurrence)

    def describe(self) -> str:
        change = f"{self.original!r} -> {self.mutated!r}"
        return f"[[sweep_equivalent]] #{self.index} ({self.file} {self.scope} {self.operator}: {change})"


@dataclass(frozen=True)
class SweepConfig:
    package: str
    exclude: tuple[str, ...]
    pytest_args: tuple[str, ...]
    timeout_s: float
    equivalents: tuple[Equivalent, ...]
    # the operators a whole run applies, by name; None: every operator there is
    operators: tuple[str, ...] | None = None


_SWEEP_KEYS = {"package", "exclude", "pytest_args", "timeout_s", "operators"}
_EQUIVALENT_KEYS = {"file", "scope", "operator", "original", "mutated", "reason"}
_OPTIONAL_KEYS = {"occurrence"}


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return tuple(value)


def _operators(value: object, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = _strings(value, where)
    known = sorted(operator.name for operator in ALL)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ConfigError(f"{where}: {unknown[0]!r} names no operator; one of: {', '.join(known)}")
    return names


def load(path: Path) -> SweepConfig:
    try:
        data = read_config(path)
    except ConfigFileError as exc:
        raise ConfigError(str(exc)) from exc
    table = data.get("sweep")
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: no [sweep] table")
    unknown = sorted(set(table) - _SWEEP_KEYS)
    if unknown:
        raise ConfigError(f"{path}: [sweep]: unknown key(s) {unknown}; known: {sorted(_SWEEP_KEYS)}")
    package = table.get("package")
    if not isinstance(package, str) or not package.isidentifier():
        raise ConfigError(f"{path}: [sweep] package must be a package name, got {package!r}")
    timeout = table.get("timeout_s", 60)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise ConfigError(
            f"{path}: [sweep] timeout_s must be a finite number of seconds > 0, got {timeout!r}"
        )
    raw = data.get("sweep_equivalent", [])
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: sweep_equivalent must be an array of tables ([[sweep_equivalent]])")
    entries: list[Equivalent] = []
    for index, entry in enumerate(raw, start=1):
        where = f"{path}: [[sweep_equivalent]] #{index}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where} must be a table")
        unknown = sorted(set(entry) - _EQUIVALENT_KEYS - _OPTIONAL_KEYS)
        missing = sorted(_EQUIVALENT_KEYS - set(entry))
        if unknown or missing:
            raise ConfigError(f"{where}: unknown key(s) {unknown}, missing key(s) {missing}")
        if not all(isinstance(entry[k], str) for k in _EQUIVALENT_KEYS) or not entry["reason"].strip():
            raise ConfigError(f"{where}: every key is a string, and the reason is not empty")
        occurrence = entry.get("occurrence")
        if occurrence is not None and (type(occurrence) is not int or occurrence < 1):
            raise ConfigError(f"{where}: occurrence must be an integer >= 1, got {occurrence!r}")
        entries.append(
            Equivalent(
                file=entry["file"],
                scope=entry["scope"],
                operator=entry["operator"],
                original=entry["original"],
                mutated=entry["mutated"],
                reason=entry["reason"].strip(),
                index=index,
                occurrence=occurrence,
            )
        )
    return SweepConfig(
        package,
        _strings(table.get("exclude", []), f"{path}: [sweep] exclude"),
        _strings(table.get("pytest_args", []), f"{path}: [sweep] pytest_args"),
        float(timeout),
        tuple(entries),
        _operators(table.get("operators"), f"{path}: [sweep] operators"),
    )

"""The sweep's settings and reviewed equivalents, read from ``mutation_config.toml``.

``[sweep]`` names the package, the files it leaves out and the pytest arguments; each ``[[reviewed]]``
entry with ``engine = "sweep"`` is a reviewed survivor, keyed by file, scope, operator, original and
mutated text (never by line), with a one-line reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mutation_config_file import ConfigFileError, read_config, reviewed
from mutation_model import Mutant as ModelMutant
from mutation_model import mutant_key

from .operators import ALL
from .work_item import Mutant


def test_paths(pytest_args: Sequence[str], root: Path) -> list[str]:
    """The test files and folders ``pytest_args`` names (what the sweep's suite runs), else ``tests``."""
    return [a for a in pytest_args if not a.startswith("-") and (root / a).exists()] or ["tests"]


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

    def matches(self, mutant: Mutant | ModelMutant) -> bool:
        return mutant.key == self.key and self.occurrence in (None, mutant.occurrence)

    def describe(self) -> str:
        change = f"{self.original!r} -> {self.mutated!r}"
        return f"[[reviewed]] #{self.index} (sweep, {self.file} {self.scope} {self.operator}: {change})"


@dataclass(frozen=True)
class SweepConfig:
    package: str
    exclude: tuple[str, ...]
    pytest_args: tuple[str, ...]
    timeout_s: float
    equivalents: tuple[Equivalent, ...]
    # the operators a whole run applies, by name; None: every operator there is
    operators: tuple[str, ...] | None = None
    # what a warm server imports once before it forks (``[harness] preload``, shared with the harness)
    preload: tuple[str, ...] = ()


def _operators(value: list[str] | None, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = tuple(value)
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
    if table is None:
        raise ConfigError(f"{path}: no [sweep] table")
    # read_config checked every key's type (mutation_config_schema); what the values mean is checked here
    mine = reviewed(data, path, "sweep")
    entries: list[Equivalent] = []
    for index, entry in mine:
        entries.append(
            Equivalent(
                file=entry["file"],
                scope=entry["scope"],
                operator=entry["operator"],
                original=entry["original"],
                mutated=entry["mutated"],
                reason=entry["reason"].strip(),
                index=index,
                occurrence=entry.get("occurrence"),
            )
        )
    return SweepConfig(
        table["package"],
        tuple(table.get("exclude", [])),
        tuple(table.get("pytest_args", [])),
        float(table.get("timeout_s", 60)),
        tuple(entries),
        _operators(table.get("operators"), f"{path}: [sweep] operators"),
        tuple(data.get("harness", {}).get("preload", ())),
    )

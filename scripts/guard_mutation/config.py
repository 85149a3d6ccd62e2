"""``mutation_config.toml`` read once into typed tables, with one error format: ``FILE: table[N].key: what``.

Tables: ``[harness]`` (how the tests run), ``[[mutant]]`` (the catalogue of critical mutants), ``[edits]``
(the edits engine's generated operators), ``[[reviewed]]`` (the hand reviews, every engine's), ``[gate]``.
A file holding ``[harness]`` and ``[[mutant]]`` alone (a user's own catalogue) is a whole config.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib


class ConfigError(Exception):
    """The config is missing, not TOML, or not what this module reads: bad input (exit 2)."""


@dataclass(frozen=True)
class Harness:
    package: str = "guard_lib"
    tests: tuple[str, ...] = ("tests",)
    pytest_args: tuple[str, ...] = ()
    timeout_s: float = 60.0
    jobs: int = 1
    canary: str | None = None
    preload: tuple[str, ...] = ()  # imported once by each warm server before it forks


@dataclass(frozen=True)
class CatalogueEntry:
    """One ``[[mutant]]``: an edit of the text ``replace`` (or ``delete``) in ``scope`` of ``file``."""

    id: str
    file: str
    scope: str
    why: str
    killed_by: tuple[str, ...]
    replace: str | None = None
    by: str | None = None
    delete: str | None = None


@dataclass(frozen=True)
class Review:
    """One ``[[reviewed]]``: the mutant of ``engine`` in ``function`` whose changed lines hold ``diff``
    (and ``removed``, where given) survives because, as ``reason`` says, nothing observable changes."""

    number: int  # its place in the table, from 1
    engine: str
    function: str  # "package.module:Qualified.name"
    diff: str
    reason: str
    removed: str | None = None
    python: str = ""  # a version specifier: the review holds on these Pythons alone

    def holds_here(self) -> bool:
        return ".".join(map(str, sys.version_info[:3])) in SpecifierSet(self.python)


@dataclass(frozen=True)
class Edits:
    operators: tuple[str, ...] = ()  # the generated operators a whole run applies
    exclude: tuple[str, ...] = ()  # files of the package no operator mutates


@dataclass(frozen=True)
class Config:
    path: Path
    root: Path
    harness: Harness
    catalogue: tuple[CatalogueEntry, ...]
    edits: Edits
    reviews: tuple[Review, ...]
    min_score: float = 100.0


def read(path: Path, root: Path | None = None) -> Config:
    """The config at ``path``; ``root`` (the project) defaults to the file's folder."""
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: malformed TOML: {exc}") from exc
    reader = _Reader(path)
    reader.only(data, "", {"harness", "mutant", "edits", "reviewed", "gate"})
    harness = _harness(reader, reader.table(data, "harness"))
    catalogue = tuple(
        _entry(reader, e, f"mutant[{i}]") for i, e in enumerate(reader.tables(data, "mutant"), 1)
    )
    ids = [e.id for e in catalogue]
    for i, entry_id in enumerate(ids, 1):
        if entry_id in ids[: i - 1]:
            raise ConfigError(f"{path}: mutant[{i}].id: {entry_id!r} appears twice")
    if harness.canary is not None and harness.canary not in ids:
        raise ConfigError(f"{path}: harness.canary: no [[mutant]] has id {harness.canary!r}")
    edits_table = reader.table(data, "edits")
    reader.only(edits_table, "edits", {"operators", "exclude"})
    edits = Edits(
        reader.strings(edits_table, "edits", "operators", ()),
        reader.strings(edits_table, "edits", "exclude", ()),
    )
    reviews = tuple(_review(reader, r, i) for i, r in enumerate(reader.tables(data, "reviewed"), 1))
    gate = reader.table(data, "gate")
    reader.only(gate, "gate", {"min_score"})
    min_score = reader.get(gate, "gate", "min_score", (int, float), 100.0)
    if not 0 <= min_score <= 100:
        raise ConfigError(f"{path}: gate.min_score: {min_score} is not a percentage")
    return Config(path, (root or path.parent).resolve(), harness, catalogue, edits, reviews, float(min_score))


def _harness(reader: _Reader, table: Mapping[str, Any]) -> Harness:
    keys = {"package", "tests", "pytest_args", "timeout_s", "jobs", "canary", "preload"}
    reader.only(table, "harness", keys)
    jobs_value = table.get("jobs", 1)
    if jobs_value == "auto":
        jobs = os.cpu_count() or 1
    elif isinstance(jobs_value, int) and not isinstance(jobs_value, bool) and jobs_value > 0:
        jobs = jobs_value
    else:
        raise ConfigError(f'{reader.path}: harness.jobs: {jobs_value!r} is not a positive number or "auto"')
    timeout = reader.get(table, "harness", "timeout_s", (int, float), 60.0)
    if timeout <= 0:
        raise ConfigError(f"{reader.path}: harness.timeout_s: {timeout} is not positive")
    return Harness(
        package=reader.get(table, "harness", "package", (str,), "guard_lib"),
        tests=reader.strings(table, "harness", "tests", ("tests",)),
        pytest_args=reader.strings(table, "harness", "pytest_args", ()),
        timeout_s=float(timeout),
        jobs=jobs,
        canary=reader.get(table, "harness", "canary", (str,), None),
        preload=reader.strings(table, "harness", "preload", ()),
    )


def _entry(reader: _Reader, table: Mapping[str, Any], where: str) -> CatalogueEntry:
    reader.only(table, where, {"id", "file", "scope", "replace", "by", "delete", "why", "killed_by"})
    text: Callable[[str], str] = lambda key: reader.required(table, where, key)  # noqa: E731
    replace, by, delete = (reader.get(table, where, k, (str,), None) for k in ("replace", "by", "delete"))
    if (replace is None) == (delete is None) or (replace is None) != (by is None):
        raise ConfigError(f"{reader.path}: {where}: give `replace` and `by`, or `delete` alone")
    killed_by = reader.strings(table, where, "killed_by", ())
    if not killed_by:
        raise ConfigError(f"{reader.path}: {where}.killed_by: name at least one test that must kill it")
    entry = CatalogueEntry(
        text("id"), text("file"), text("scope"), text("why"), killed_by, replace, by, delete
    )
    if not entry.id.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise ConfigError(f"{reader.path}: {where}.id: {entry.id!r} may hold letters, digits, '-', '_', '.'")
    return entry


def _review(reader: _Reader, table: Mapping[str, Any], number: int) -> Review:
    where = f"reviewed[{number}]"
    reader.only(table, where, {"engine", "function", "diff", "removed", "reason", "python"})
    python = reader.get(table, where, "python", (str,), "")
    try:
        SpecifierSet(python)
    except InvalidSpecifier:
        raise ConfigError(f"{reader.path}: {where}.python: {python!r} is not a version specifier") from None
    function = reader.required(table, where, "function")
    if ":" not in function:
        raise ConfigError(f"{reader.path}: {where}.function: {function!r} is not 'package.module:name'")
    return Review(
        number,
        reader.required(table, where, "engine"),
        function,
        reader.required(table, where, "diff"),
        reader.required(table, where, "reason"),
        reader.get(table, where, "removed", (str,), None),
        python,
    )


@dataclass(frozen=True)
class _Reader:
    path: Path

    def fail(self, where: str, what: str) -> ConfigError:
        return ConfigError(f"{self.path}: {where}: {what}")

    def only(self, table: Mapping[str, Any], where: str, keys: set[str]) -> None:
        unknown = sorted(set(table) - keys)
        if unknown:
            name = f"{where}.{unknown[0]}" if where else unknown[0]
            raise self.fail(name, f"unknown key (known: {', '.join(sorted(keys))})")

    def table(self, data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
        value = data.get(name, {})
        if not isinstance(value, dict):
            raise self.fail(name, "a table, [" + name + "]")
        return value

    def tables(self, data: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
        value = data.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.fail(name, "an array of tables, [[" + name + "]]")
        return value

    def get(
        self, table: Mapping[str, Any], where: str, key: str, kinds: tuple[type, ...], default: Any
    ) -> Any:
        if key not in table:
            return default
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise self.fail(f"{where}.{key}", f"{value!r} is not {' or '.join(k.__name__ for k in kinds)}")
        return value

    def required(self, table: Mapping[str, Any], where: str, key: str) -> str:
        value = self.get(table, where, key, (str,), None)
        if not value:
            raise self.fail(f"{where}.{key}", "missing or empty")
        return str(value)

    def strings(
        self, table: Mapping[str, Any], where: str, key: str, default: tuple[str, ...]
    ) -> tuple[str, ...]:
        value = table.get(key, list(default))
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(f"{where}.{key}", "a list of text")
        return tuple(value)

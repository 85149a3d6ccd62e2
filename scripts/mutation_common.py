"""The mutmut results file: mutant names, exported records and statuses, loading and writing.

Nothing here imports mutmut, pytest or guard_lib, so the gate, the report and the merge step run on
a machine that only has the exported JSON (a CI job that downloaded shard artifacts).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from mutation_io import InputError

RESULTS_FORMAT = "guard-lib-mutmut-results"
RESULTS_VERSION = 1

# Mirrors mutmut 3.8's ``mutmut.stats.status_by_exit_code`` (a test pins the two together), copied
# so reading results never needs mutmut importable. Anything unmapped is "suspicious", as in mutmut.
STATUS_BY_EXIT_CODE: dict[int | None, str] = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    2: "check was interrupted by user",
    None: "not checked",
    33: "no tests",
    34: "skipped",
    35: "suspicious",
    36: "timeout",
    37: "caught by type check",
    -24: "timeout",
    24: "timeout",
    152: "timeout",
    255: "timeout",
    -11: "segfault",
    -9: "segfault",
}

CLASS_SEPARATOR = "ǁ"


def status_for_exit_code(exit_code: int | None) -> str:
    return STATUS_BY_EXIT_CODE.get(exit_code, "suspicious")


@dataclass(frozen=True)
class MutantName:
    """A mutmut mutant name split into the parts that stay stable when code elsewhere changes."""

    name: str
    module: str
    mangled: str  # x_func / xǁClassǁmethod, without the __mutmut_N suffix
    qualname: str  # func / Class.method
    number: int

    @property
    def function(self) -> str:
        """``module:qualname``: the key reviewers write in mutmut's ``[[reviewed]]`` entries."""
        return f"{self.module}:{self.qualname}"

    @property
    def function_key(self) -> str:
        """The prefix mutmut itself uses for stats and globs (``module.mangled``)."""
        return f"{self.module}.{self.mangled}"


_NAME_RE = re.compile(r"^(?P<prefix>.+)__mutmut_(?P<number>\d+)$")


def parse_mutant_name(name: str) -> MutantName:
    match = _NAME_RE.match(name)
    if not match:
        raise InputError(f"not a mutmut mutant name: {name!r}")
    prefix = match["prefix"]
    parts = prefix.split(".")
    # Scan from the right: a module may itself be called x_something, the function part is last.
    for index in range(len(parts) - 1, -1, -1):
        if parts[index].startswith(("x_", "x" + CLASS_SEPARATOR)):
            module = ".".join(parts[:index])
            mangled = ".".join(parts[index:])
            break
    else:
        raise InputError(f"mutant name has no x_/x{CLASS_SEPARATOR} function part: {name!r}")
    if mangled.startswith("x" + CLASS_SEPARATOR):
        _, class_name, method = mangled.split(CLASS_SEPARATOR, 2)
        qualname = f"{class_name}.{method}"
    else:
        qualname = mangled[2:]
    number = int(match["number"])
    return MutantName(name=name, module=module, mangled=mangled, qualname=qualname, number=number)


def mangle(qualname: str) -> str:
    """``Class.method`` -> ``xǁClassǁmethod``; ``func`` -> ``x_func`` (mutmut's scheme)."""
    if "." in qualname:
        class_name, method = qualname.split(".", 1)
        return f"x{CLASS_SEPARATOR}{class_name}{CLASS_SEPARATOR}{method}"
    return f"x_{qualname}"


def diff_sides(diff: str) -> tuple[list[str], list[str]]:
    """The removed and added lines of a unified diff, without the +/- marker and outer whitespace."""
    removed: list[str] = []
    added: list[str] = []
    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("-"):
            removed.append(line[1:].strip())
        elif line.startswith("+"):
            added.append(line[1:].strip())
    return removed, added


def normalise_code(text: str) -> str:
    """Whitespace-insensitive form of code lines, so reviewed entries survive reformatting."""
    lines = [re.sub(r"\s+", " ", line.strip().removeprefix("+").strip()) for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


@dataclass
class MutantRecord:
    """One mutmut mutant as exported: what the gate and the report need, without mutants/."""

    name: str
    file: str
    status: str
    exit_code: int | None
    diff: str = ""
    line: int = 1
    column: int = 1
    end_line: int = 1
    end_column: int = 1
    replacement: str = ""
    original: str = ""
    mutator: str = "Mutation"
    duration: float | None = None
    tests: list[str] = field(default_factory=list)  # the test files that reach its function
    depends: str = ""  # the digest of what its verdict depends on (``mutmut_reuse``)

    @property
    def parsed(self) -> MutantName:
        return parse_mutant_name(self.name)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> MutantRecord:
        missing = {"name", "file", "status", "exit_code"} - set(data)
        if missing:
            raise InputError(f"{where}: mutant entry {_label(data)} lacks {sorted(missing)}")
        for key, kinds in _RECORD_TYPES.items():
            if key in data and not _is(data[key], kinds):
                wanted = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
                got = type(data[key]).__name__
                raise InputError(f"{where}: mutant {_label(data)}: {key!r} must be {wanted}, not {got}")
        file = PurePosixPath(data["file"])
        if file.is_absolute() or ".." in file.parts or not data["file"].strip():
            raise InputError(
                f"{where}: mutant {_label(data)}: 'file' {data['file']!r} must be a path inside the "
                "repository, relative to its root"
            )
        record = cls(**{k: data[k] for k in data if k in cls.__dataclass_fields__})
        record.parsed  # noqa: B018 - validates the name early, with the file in the message
        return record


_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "file": (str,),
    "status": (str,),
    "exit_code": (int, type(None)),
    "diff": (str,),
    "line": (int,),
    "column": (int,),
    "end_line": (int,),
    "end_column": (int,),
    "replacement": (str,),
    "original": (str,),
    "mutator": (str,),
    "duration": (int, float, type(None)),
    "tests": (list,),
    "depends": (str,),
}


def _is(value: object, kinds: tuple[type, ...]) -> bool:
    return isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)


def _label(data: Mapping[str, Any]) -> str:
    name = data.get("name")
    return repr(name) if isinstance(name, str) else "(unnamed)"


@dataclass
class Results:
    """The exported result of one mutmut run, one shard, or the merge of shards."""

    mutants: list[MutantRecord]
    scope: dict[str, Any] = field(default_factory=lambda: {"kind": "full"})
    shard: dict[str, int] | None = None
    universe: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    mutmut_version: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RESULTS_FORMAT,
            "version": RESULTS_VERSION,
            "mutmut_version": self.mutmut_version,
            "scope": self.scope,
            "shard": self.shard,
            "universe": self.universe,
            "sources": self.sources,
            "mutants": [asdict(m) for m in sorted(self.mutants, key=lambda m: natural_key(m.name))],
        }

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def natural_key(name: str) -> tuple[str, int]:
    """Sort ``f__mutmut_10`` after ``f__mutmut_9``."""
    head, _, number = name.rpartition("__mutmut_")
    return (head, int(number) if number.isdigit() else -1)


def load_results(path: Path, *, hint: str) -> Results:
    """Read an exported results file; ``hint`` says which command produces it."""
    if not path.is_file():
        raise InputError(f"{path}: no such results file. Run `{hint}` first.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: cannot read results ({exc}). Re-run `{hint}`.") from exc
    if not isinstance(data, dict) or data.get("format") != RESULTS_FORMAT:
        raise InputError(f"{path}: not a {RESULTS_FORMAT} file. Run `{hint}` to produce one.")
    if data.get("version") != RESULTS_VERSION:
        raise InputError(f"{path}: results version {data.get('version')!r}, expected {RESULTS_VERSION}.")
    raw_mutants = data.get("mutants")
    if not isinstance(raw_mutants, list):
        raise InputError(f"{path}: 'mutants' must be a list.")
    mutants = [MutantRecord.from_json(m, str(path)) for m in raw_mutants if isinstance(m, dict)]
    if len(mutants) != len(raw_mutants):
        raise InputError(f"{path}: every entry of 'mutants' must be an object.")
    scope = data.get("scope") or {"kind": "full"}
    if not isinstance(scope, dict) or not isinstance(scope.get("kind", "full"), str):
        raise InputError(f"{path}: 'scope' must be an object with a string 'kind', got {scope!r}")
    shard = data.get("shard")
    if shard is not None and not (
        isinstance(shard, dict)
        and all(_is(shard.get(k), (int,)) for k in ("index", "count"))
        and 1 <= shard["index"] <= shard["count"]
    ):
        raise InputError(f"{path}: 'shard' must be null or {{'index': I, 'count': N}} with 1 <= I <= N")
    universe = data.get("universe") or {}
    if not isinstance(universe, dict):
        raise InputError(f"{path}: 'universe' must be an object")
    sources = data.get("sources") or {}
    if not isinstance(sources, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in sources.items()
    ):
        raise InputError(f"{path}: 'sources' must map file names to their text")
    return Results(
        mutants=mutants,
        scope=dict(scope),
        shard=shard,
        universe=dict(universe),
        sources=dict(sources),
        mutmut_version=str(data.get("mutmut_version", "")),
    )


def universe_of(names: Iterable[str]) -> dict[str, Any]:
    """Fingerprint of the full mutant list, so merge can prove all shards split the same list."""
    ordered = sorted(names, key=natural_key)
    digest = hashlib.sha256("\n".join(ordered).encode()).hexdigest()
    return {"count": len(ordered), "sha256": digest}

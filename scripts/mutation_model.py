"""The one model of a mutant, whichever engine made and ran it.

``Record`` is a ``Mutant`` and its ``Outcome``; ``Run`` one engine's records and what its run covered;
``JudgedMutant`` a record with the gate's verdict.

Every engine's adapter (``mutation_records``) writes its run as a ``Run`` of records into the one store;
the gate and the report read runs and nothing else, and classify each record against the reviews into a
``JudgedMutant``: the counts, the report's rows and the HTML page read only that.

Where things go: a new engine is one adapter in ``mutation_records`` that makes its ``Run``; a new class of
verdict is one more member of ``Verdict``; a new report format reads ``JudgedMutant`` and nothing else.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The words the engines share for what their runs saw; each engine has a few more of its own (mutmut's
# "no tests", the harness's "wrong-reason", ...), kept verbatim in ``JudgedMutant.status``.
KILLED, SURVIVED, TIMEOUT = "killed", "survived", "timeout"

MUTMUT, SWEEP, CRITICAL, CORE_DELETIONS = "mutmut", "sweep", "critical", "core-deletions"
ENGINES = (MUTMUT, SWEEP, CRITICAL, CORE_DELETIONS)
CRITICAL_OPERATOR = "CriticalMutant"  # the harness's kind of edit, beside mutmut's mutators and the sweep's
DELETION_OPERATOR = "delete-line"  # the core deletions' one edit: a line of the core made ``pass``


class Verdict(enum.Enum):
    """What the gate makes of a mutant: every mutant is counted as exactly one of these."""

    KILLED = "killed"
    EQUIVALENT = "reviewed equivalent"  # it survived, and a review says no test could tell it apart
    SKIPPED = "skipped"  # the engine set it aside without running it (mutmut's "skipped")
    NOT_KILLED = "not killed"


def mutant_key(file: str, scope: str, operator: str, original: str, mutated: str) -> str:
    """A mutant named by what it does, never by where: stays valid when code elsewhere moves.

    Whitespace inside the texts does not count, so a reformatted line keeps its key.
    """
    return "|".join((file, scope, operator, _one_line(original), _one_line(mutated)))


class RecordError(ValueError):
    """A record, or a run of them, that is not what this model writes: the message names the field."""


@dataclass(frozen=True)
class Mutant:
    """One edit, as its engine made it."""

    engine: str  # MUTMUT, SWEEP, CRITICAL, or a plug-in's own name
    id: str  # unique within its engine: mutmut's name, the sweep's digest, the catalogue's id
    key: str  # what it does (``mutant_key``), as its engine names the edit
    file: str  # relative to the project root, with forward slashes; "" when the engine did not say
    scope: str  # the qualified name of the enclosing def or class, or "<module>"
    operator: str  # the kind of edit: mutmut's mutator, the sweep's operator, "CriticalMutant"
    original: str
    mutated: str
    line: int = 1
    end_line: int = 1
    column: int = 1
    end_column: int = 1
    diff: str = ""
    occurrence: int = 1  # which of several identical edits in one scope, in source order

    @property
    def function(self) -> str:
        """``package.module:qualname``, as reviews name a function."""
        parts = self.file.removesuffix(".py").removesuffix(".pyx").split("/")
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        return f"{module}:{self.scope}"


@dataclass(frozen=True)
class Outcome:
    """What running one mutant's tests saw."""

    status: str  # the engine's own word: "killed", "survived", mutmut's "no tests", ...
    killed_by: tuple[str, ...] = ()  # the tests that failed against it, where the engine says
    duration: float | None = None  # seconds, where the engine measured it
    detail: str = ""  # what the engine said beside the status (why a mutant was set aside; the entry's why)


@dataclass(frozen=True)
class Record:
    mutant: Mutant
    outcome: Outcome

    def to_json(self) -> dict[str, Any]:
        m, o = self.mutant, self.outcome
        return {
            **{name: getattr(m, name) for name in _MUTANT_FIELDS},
            "status": o.status,
            "killed_by": list(o.killed_by),
            "duration": o.duration,
            "detail": o.detail,
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> Record:
        if not isinstance(data, Mapping):
            raise RecordError(f"{where}: a record must be an object, not {type(data).__name__}")
        label = f"{where}: record {data.get('id')!r}" if isinstance(data.get("id"), str) else where
        for name, kinds in _FIELD_TYPES.items():
            value = data.get(name)
            if name not in data:
                raise RecordError(f"{label}: '{name}' is missing")
            if not isinstance(value, kinds) or isinstance(value, bool):
                wanted = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
                raise RecordError(f"{label}: '{name}' must be {wanted}, not {type(value).__name__}")
        unknown = sorted(set(data) - set(_FIELD_TYPES))
        if unknown:
            raise RecordError(f"{label}: unknown field '{unknown[0]}'")
        if not data["engine"] or not data["id"]:
            raise RecordError(f"{label}: 'engine' and 'id' must not be empty")
        killed_by = data["killed_by"]
        if not all(isinstance(t, str) for t in killed_by):
            raise RecordError(f"{label}: 'killed_by' must list test ids")
        duration = data["duration"]
        if duration is not None and not (math.isfinite(duration) and duration >= 0):
            raise RecordError(f"{label}: 'duration' must be seconds >= 0, not {duration!r}")
        mutant = Mutant(**{name: data[name] for name in _MUTANT_FIELDS})
        return cls(mutant, Outcome(data["status"], tuple(killed_by), duration, data["detail"]))


_MUTANT_FIELDS = tuple(Mutant.__dataclass_fields__)
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    **{name: (str,) for name in _MUTANT_FIELDS},
    **{name: (int,) for name in ("line", "end_line", "column", "end_column", "occurrence")},
    "status": (str,),
    "killed_by": (list,),
    "duration": (int, float, type(None)),
    "detail": (str,),
}


@dataclass(frozen=True)
class Run:
    """One engine's records, and what its run covered: the one thing an engine puts into the store.

    ``shard`` is (index, count) for a part of a run judged alone; ``functions`` the functions a run scoped
    to a change covered (None: every one); ``facts`` what the engine knows of its run as a whole that the
    report shows (mutmut's version and the sources it saw; the sweep's executable lines, what it set aside).
    """

    engine: str
    records: tuple[Record, ...]
    shard: tuple[int, int] | None = None
    scope: str = "full"
    functions: tuple[str, ...] | None = None
    facts: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "shard": None if self.shard is None else {"index": self.shard[0], "count": self.shard[1]},
            "scope": self.scope,
            "functions": None if self.functions is None else list(self.functions),
            "facts": dict(self.facts),
            "records": [r.to_json() for r in self.records],
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> Run:
        if not isinstance(data, Mapping) or not isinstance(data.get("engine"), str) or not data["engine"]:
            raise RecordError(f"{where}: a run must be an object naming its engine")
        shard = data.get("shard")
        if shard is not None and not (
            isinstance(shard, Mapping)
            and all(type(shard.get(k)) is int for k in ("index", "count"))
            and 1 <= shard["index"] <= shard["count"]
        ):
            raise RecordError(f"{where}: 'shard' must be null or {{'index': I, 'count': N}}, 1 <= I <= N")
        functions = data.get("functions")
        if functions is not None and not (
            isinstance(functions, list) and all(isinstance(f, str) for f in functions)
        ):
            raise RecordError(f"{where}: 'functions' must be null or a list of names")
        if not isinstance(data.get("scope"), str) or not isinstance(data.get("facts"), Mapping):
            raise RecordError(f"{where}: 'scope' must be a string and 'facts' an object")
        records = data.get("records")
        if not isinstance(records, list):
            raise RecordError(f"{where}: 'records' must be a list")
        parsed = tuple(Record.from_json(r, f"{where}: records[{i}]") for i, r in enumerate(records))
        strays = [r.mutant.id for r in parsed if r.mutant.engine != data["engine"]]
        if strays:
            raise RecordError(f"{where}: record {strays[0]!r} is not {data['engine']}'s")
        return cls(
            data["engine"],
            parsed,
            None if shard is None else (shard["index"], shard["count"]),
            data["scope"],
            None if functions is None else tuple(functions),
            dict(data["facts"]),
        )


@dataclass(frozen=True)
class JudgedMutant:
    engine: str  # one of ENGINES
    id: str  # unique within its engine: mutmut's name, the sweep's digest, the catalogue's id
    key: str  # what it does (``mutant_key``), as its engine names the edit
    file: str  # relative to the project root, with forward slashes; "" when the engine did not say
    scope: str  # the qualified name of the enclosing def or class, or "<module>"
    operator: str  # the kind of edit: mutmut's mutator, the sweep's operator, "CriticalMutant"
    original: str
    replacement: str
    status: str  # the engine's own word for what its run saw
    verdict: Verdict
    line: int = 1
    end_line: int = 1
    column: int = 1
    end_column: int = 1
    note: str = ""  # why: the review's reason, the catalogue's why, or what the status means
    killed_by: tuple[str, ...] = ()  # the tests that failed against it, where the engine says
    duration: float | None = None  # seconds, where the engine measured it
    diff: str = ""

    @classmethod
    def of(cls, record: Record, verdict: Verdict, note: str = "") -> JudgedMutant:
        m, o = record.mutant, record.outcome
        return cls(
            engine=m.engine,
            id=m.id,
            key=m.key,
            file=m.file,
            scope=m.scope,
            operator=m.operator,
            original=m.original,
            replacement=m.mutated,
            status=o.status,
            verdict=verdict,
            line=m.line,
            end_line=m.end_line,
            column=m.column,
            end_column=m.end_column,
            note=note,
            killed_by=o.killed_by,
            duration=o.duration,
            diff=m.diff,
        )

    @property
    def report_id(self) -> str:
        """Unique across engines: mutmut's names as they are, the others' prefixed by their engine."""
        return self.id if self.engine == MUTMUT else f"{self.engine}:{self.id}"


def _one_line(text: str) -> str:
    return " ".join(text.split())

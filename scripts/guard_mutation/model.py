"""The one record of the tool: a ``Mutant`` as its engine made it and the ``Outcome`` its engine judged.

Every stage reads and writes these and nothing else: an engine makes a ``Mutant`` when it generates and an
``Outcome`` when it judges; the store keeps them as they are; the reviews, the gate and the report read
them. One verdict vocabulary (``VERDICTS``) serves every engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

KILLED = "killed"  # a test failed (for a critical mutant: one of the tests it names)
SURVIVED = "survived"  # every test that reached it passed
NO_TESTS = "no-tests"  # no test reached it
TIMEOUT = "timeout"  # its tests ran past the time limit: a hang the suite notices
WRONG_REASON = "wrong-reason"  # a critical mutant killed, but by none of the tests it names
INVALID = "invalid"  # the mutant could not be judged: it did not build or its tests could not start
EQUIVALENT = "equivalent"  # proven the same program by a machine before any test ran (``Outcome.detail``)
VERDICTS = (KILLED, SURVIVED, NO_TESTS, TIMEOUT, WRONG_REASON, INVALID, EQUIVALENT)


class RecordError(ValueError):
    """A record that is not what this model writes: the message names the field."""


@dataclass(frozen=True)
class Mutant:
    """One edit, as its engine generated it. ``id`` is stable: it names what the edit does, not where."""

    engine: str
    id: str
    file: str  # relative to the project root, forward slashes
    line: int  # 1-based, first line the edit touches
    end_line: int
    operator: str  # the kind of edit: a mutmut mutator, an operator of the edits engine, "catalogue"
    diff: str  # a unified diff of the one edit
    function: str = ""  # "package.module:Qualified.name" of the enclosing definition; "<module>" at top
    killed_by: tuple[str, ...] = ()  # a critical mutant: the tests that must kill it; () any test
    why: str = ""  # a critical mutant: the bug it stands for

    @property
    def critical(self) -> bool:
        return bool(self.killed_by)

    def changed_lines(self) -> tuple[str, ...]:
        """The diff's removed and added lines, stripped: what a review matches."""
        return tuple(
            line[1:].strip()
            for line in self.diff.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        )

    def to_json(self) -> dict[str, Any]:
        return _plain(self)

    @classmethod
    def from_json(cls, document: Mapping[str, Any], where: str = "mutant") -> Mutant:
        return cls(**_fields(document, where, _MUTANT_TYPES))


@dataclass(frozen=True)
class Outcome:
    """What judging one mutant found."""

    verdict: str
    killers: tuple[str, ...] = ()  # the tests that failed (the first, where the engine stops there)
    seconds: float = 0.0
    detail: str = ""  # one line: the first failure's message, why it is invalid, the equivalence proof
    depends: str = ""  # the digest of everything the verdict depends on (``reuse``); "" never reused
    reused: bool = False  # taken from an earlier run whose inputs were the same

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise RecordError(f"verdict {self.verdict!r} is not one of {', '.join(VERDICTS)}")

    def to_json(self) -> dict[str, Any]:
        return _plain(self)

    @classmethod
    def from_json(cls, document: Mapping[str, Any], where: str = "outcome") -> Outcome:
        try:
            return cls(**_fields(document, where, _OUTCOME_TYPES))
        except RecordError as exc:
            raise RecordError(f"{where}: {exc}") from exc


@dataclass(frozen=True)
class Record:
    mutant: Mutant
    outcome: Outcome

    def to_json(self) -> dict[str, Any]:
        return {"mutant": self.mutant.to_json(), "outcome": self.outcome.to_json()}

    @classmethod
    def from_json(cls, document: Any, where: str) -> Record:
        if not isinstance(document, Mapping) or set(document) != {"mutant", "outcome"}:
            raise RecordError(f"{where}: a record is an object with 'mutant' and 'outcome'")
        return cls(
            Mutant.from_json(document["mutant"], f"{where}.mutant"),
            Outcome.from_json(document["outcome"], f"{where}.outcome"),
        )


@dataclass(frozen=True)
class Run:
    """One engine's records. ``whole``: it judged every mutant the engine makes, not a part of them."""

    engine: str
    records: tuple[Record, ...]
    whole: bool = True
    notes: tuple[str, ...] = field(default=())  # what the engine wants said beside its figures

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "whole": self.whole,
            "notes": list(self.notes),
            "records": [r.to_json() for r in self.records],
        }

    @classmethod
    def from_json(cls, document: Any, where: str) -> Run:
        if not isinstance(document, Mapping):
            raise RecordError(f"{where}: a run is an object")
        engine, whole, records = document.get("engine"), document.get("whole"), document.get("records")
        notes = document.get("notes", [])
        if not isinstance(engine, str) or not isinstance(whole, bool) or not isinstance(records, list):
            raise RecordError(
                f"{where}: a run has 'engine' (text), 'whole' (true/false) and 'records' (a list)"
            )
        if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            raise RecordError(f"{where}.notes: a list of text")
        read = tuple(Record.from_json(r, f"{where}.records[{i}]") for i, r in enumerate(records))
        for i, record in enumerate(read):
            if record.mutant.engine != engine:
                raise RecordError(
                    f"{where}.records[{i}]: a mutant of {record.mutant.engine!r} in {engine!r}'s run"
                )
        ids = [r.mutant.id for r in read]
        if len(set(ids)) != len(ids):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            raise RecordError(f"{where}: mutant ids appear twice: {', '.join(twice[:5])}")
        return cls(engine, read, whole, tuple(notes))


_MUTANT_TYPES: dict[str, tuple[type, ...]] = {
    "engine": (str,),
    "id": (str,),
    "file": (str,),
    "line": (int,),
    "end_line": (int,),
    "operator": (str,),
    "diff": (str,),
    "function": (str,),
    "killed_by": (list, tuple),
    "why": (str,),
}
_OUTCOME_TYPES: dict[str, tuple[type, ...]] = {
    "verdict": (str,),
    "killers": (list, tuple),
    "seconds": (int, float),
    "detail": (str,),
    "depends": (str,),
    "reused": (bool,),
}
_REQUIRED = {"engine", "id", "file", "line", "end_line", "operator", "diff", "verdict"}


def _plain(record: Mutant | Outcome) -> dict[str, Any]:
    """A record as JSON holds it: its tuples as lists."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(record).items()}


def _fields(document: Any, where: str, types: Mapping[str, tuple[type, ...]]) -> dict[str, Any]:
    """The document's fields, each checked against ``types``, its lists made tuples (records are frozen)."""
    if not isinstance(document, Mapping):
        raise RecordError(f"{where}: an object")
    unknown = sorted(set(document) - set(types))
    if unknown:
        raise RecordError(f"{where}: unknown field {unknown[0]!r}")
    missing = sorted((_REQUIRED & set(types)) - set(document))
    if missing:
        raise RecordError(f"{where}: missing field {missing[0]!r}")
    for key, value in document.items():
        wanted = types[key]
        if (isinstance(value, bool) and bool not in wanted) or not isinstance(value, wanted):
            raise RecordError(f"{where}.{key}: {type(value).__name__}, not {wanted[0].__name__}")
        if isinstance(value, (list, tuple)) and not all(isinstance(v, str) for v in value):
            raise RecordError(f"{where}.{key}: a list of text")
    return {k: tuple(v) if isinstance(v, list) else v for k, v in document.items()}

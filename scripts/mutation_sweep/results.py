"""The sweep's results file: written by ``run``, combined by ``merge``, judged by the gate and the report."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .carry import Suite
from .work_item import VERDICTS, Mutant, Result

FORMAT, VERSION = "guard-lib-sweep-results", 1


class ResultsError(Exception):
    """A results file that is missing, unreadable, or not a whole run or declared shard."""


@dataclass
class SweepResults:
    results: list[Result]
    universe: dict[str, Any]
    shard: dict[str, int] | None = None
    skipped: dict[str, int] = field(default_factory=dict)
    executable: dict[str, list[int]] = field(default_factory=dict)
    seconds: float = 0.0
    # file -> line -> why the mutants made there were set aside unrun (annotations, same code)
    set_aside: dict[str, dict[int, list[str]]] = field(default_factory=dict)
    # what the run judged with, test by test (``carry``): None for a run that did not record it
    suite: Suite | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "universe": self.universe,
            "shard": self.shard,
            "skipped": self.skipped,
            "executable": self.executable,
            "seconds": self.seconds,
            "set_aside": {
                f: {str(line): sorted(reasons) for line, reasons in sorted(lines.items())}
                for f, lines in sorted(self.set_aside.items())
            },
            **({"suite": self.suite.to_json()} if self.suite is not None else {}),
            "mutants": [_result_json(r) for r in sorted(self.results, key=lambda r: r.mutant.id)],
        }

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)


def universe_of(ids: Iterable[str]) -> dict[str, Any]:
    ordered = sorted(ids)
    return {"count": len(ordered), "sha256": hashlib.sha256("\n".join(ordered).encode()).hexdigest()}


def select_shard(mutants: Sequence[Mutant], index: int, count: int) -> list[Mutant]:
    return sorted(mutants, key=lambda m: m.id)[index - 1 :: count]


def _result_json(result: Result) -> dict[str, Any]:
    data = asdict(result.mutant)
    data.update(id=result.mutant.id, verdict=result.verdict, tests=list(result.tests), failed=result.failed)
    data["duration"] = result.duration
    if result.detail:
        data["detail"] = result.detail
    if result.depends:
        data["depends"] = result.depends
    return data


_FIELDS = {
    "file": str,
    "scope": str,
    "operator": str,
    "original": str,
    "mutated": str,
    "line": int,
    "end_line": int,
}


def _parse_result(entry: object, where: str) -> Result:
    if not isinstance(entry, dict):
        raise ResultsError(f"{where}: every mutant must be an object")
    for key, kind in _FIELDS.items():
        if not isinstance(entry.get(key), kind) or isinstance(entry.get(key), bool):
            raise ResultsError(f"{where}: mutant {entry.get('id')!r}: {key!r} must be a {kind.__name__}")
    if entry.get("verdict") not in VERDICTS:
        raise ResultsError(f"{where}: mutant {entry.get('id')!r}: unknown verdict {entry.get('verdict')!r}")
    tests = entry.get("tests", [])
    if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
        raise ResultsError(f"{where}: mutant {entry.get('id')!r}: 'tests' must be a list of strings")
    mutant = Mutant(
        **{k: entry[k] for k in _FIELDS},
        column=int(entry.get("column") or 0),
        definition=bool(entry.get("definition")),
        at_import=bool(entry.get("at_import")),
        occurrence=int(entry.get("occurrence") or 1),
    )
    if entry.get("id") != mutant.id:
        raise ResultsError(
            f"{where}: mutant {entry.get('id')!r} does not match its own key (edited by hand?)"
        )
    duration = entry.get("duration")
    return Result(
        mutant,
        str(entry["verdict"]),
        tuple(tests),
        str(entry.get("failed") or ""),
        float(duration) if isinstance(duration, (int, float)) and not isinstance(duration, bool) else 0.0,
        str(entry.get("detail") or ""),
        str(entry.get("depends") or ""),
    )


def load(path: Path, *, whole: bool = True) -> SweepResults:
    """The results in ``path``; unless ``whole`` is False (a run scoped to a change), refused where they
    are neither their whole run nor a declared shard of it."""
    hint = f"python scripts/mutation_sweep.py run --out {path}"
    if not path.is_file():
        raise ResultsError(f"{path}: no such sweep results file; run `{hint}` first")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsError(f"{path}: cannot read sweep results ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise ResultsError(f"{path}: not a {FORMAT} file (version {VERSION}); run `{hint}`")
    raw = data.get("mutants")
    if not isinstance(raw, list):
        raise ResultsError(f"{path}: 'mutants' must be a list")
    results = [_parse_result(entry, str(path)) for entry in raw]
    universe = data.get("universe")
    if (
        not isinstance(universe, dict)
        or not isinstance(universe.get("count"), int)
        or not universe.get("sha256")
    ):
        raise ResultsError(f"{path}: no 'universe': cannot tell whether the run is complete")
    shard = data.get("shard")
    if shard is not None and not (
        isinstance(shard, dict)
        and all(
            isinstance(shard.get(k), int) and not isinstance(shard.get(k), bool) for k in ("index", "count")
        )
        and 1 <= shard["index"] <= shard["count"]
    ):
        raise ResultsError(f"{path}: 'shard' must be null or {{'index': I, 'count': N}} with 1 <= I <= N")
    executable = data.get("executable") or {}
    if not isinstance(executable, dict):
        raise ResultsError(f"{path}: 'executable' must be an object")
    skipped = data.get("skipped") or {}
    seconds = data.get("seconds") or 0.0
    set_aside = _parse_set_aside(data.get("set_aside") or {}, str(path))
    try:
        suite = Suite.from_json(data["suite"]) if "suite" in data else None
    except ValueError as exc:
        raise ResultsError(f"{path}: {exc}") from exc
    loaded = SweepResults(
        results, universe, shard, dict(skipped), dict(executable), float(seconds), set_aside, suite
    )
    if whole:
        check_complete(loaded, str(path))
    return loaded


def _parse_set_aside(raw: object, where: str) -> dict[str, dict[int, list[str]]]:
    shape = f"{where}: 'set_aside' must map file -> line number -> list of reasons"
    if not isinstance(raw, dict):
        raise ResultsError(shape)
    parsed: dict[str, dict[int, list[str]]] = {}
    for file, lines in raw.items():
        if not isinstance(lines, dict):
            raise ResultsError(shape)
        for line, reasons in lines.items():
            if not (isinstance(line, str) and line.isdigit()) or not (
                isinstance(reasons, list) and all(isinstance(r, str) for r in reasons)
            ):
                raise ResultsError(shape)
            parsed.setdefault(file, {})[int(line)] = list(reasons)
    return parsed


def check_complete(results: SweepResults, where: str) -> None:
    """A whole run holds its universe exactly; a declared shard holds its share of it."""
    ids = [r.mutant.id for r in results.results]
    if len(set(ids)) != len(ids):
        raise ResultsError(f"{where}: a mutant appears twice")
    count = results.universe["count"]
    if results.shard is None:
        if universe_of(ids) != results.universe:
            raise ResultsError(
                f"{where}: holds {len(ids)} of the {count} mutants of its run, and declares no shard; "
                "a partial run cannot pass the gate"
            )
        return
    index, shards = results.shard["index"], results.shard["count"]
    expected = len(range(index - 1, count, shards))
    if len(ids) != expected:
        raise ResultsError(
            f"{where}: shard {index}/{shards} of {count} mutants must hold {expected}, holds {len(ids)}"
        )


def merge(parts: Sequence[SweepResults]) -> SweepResults:
    if not parts:
        raise ResultsError("merge: no results files given")
    if len({json.dumps(p.universe, sort_keys=True) for p in parts}) != 1:
        raise ResultsError("merge: the shards were cut from different mutant lists")
    if any(p.shard is None for p in parts):
        raise ResultsError("merge: every part must be a declared shard")
    counts = {p.shard["count"] for p in parts if p.shard}
    indices = sorted(p.shard["index"] for p in parts if p.shard)
    if len(counts) != 1 or indices != list(range(1, counts.pop() + 1)):
        raise ResultsError(f"merge: expected shards 1..N once each, got {indices}")
    merged = SweepResults(
        [r for p in parts for r in p.results],
        parts[0].universe,
        None,
        parts[0].skipped,
        parts[0].executable,
        round(sum(p.seconds for p in parts), 3),
        parts[0].set_aside,
        # shards of one run judge one tree: where they differ, none carries test by test
        parts[0].suite if all(p.suite == parts[0].suite for p in parts) else None,
    )
    check_complete(merged, "merge")
    return merged

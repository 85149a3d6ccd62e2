"""The one results file every engine writes into and the report and the gate read.

A store holds, per engine, its whole run as the one model (``runs``: ``mutation_model.Run``, a record of
each mutant and its outcome), which is all the report and the gate read; beside it, the engine's own
results document (``engines``), kept so that the engine can reuse its verdicts and shards can merge.
A whole run replaces the engine's earlier whole run; a shard joins only other shards of the same run
(``shards``), and never a whole run: a store that holds a whole run is never overwritten by a part of one.
Version 1 stores (documents alone) are read, their runs made from their documents.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mutation_model import RecordError, Run

from .engines import ENGINES, EngineError

FORMAT, VERSION = "guard-mutation-store", 2
READS = (1, 2)


class StoreError(Exception):
    """A store that cannot be read, or an engine's results that cannot go into it: bad input (exit 2)."""


@dataclass(frozen=True)
class Store:
    engines: Mapping[str, Mapping[str, Any]] = field(
        default_factory=dict
    )  # whole runs, as engines wrote them
    shards: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)  # runs still coming
    runs: Mapping[str, Run] = field(default_factory=dict)  # the whole runs as records, by engine

    def _whole(self, engine: str, document: Mapping[str, Any], where: str) -> Store:
        try:
            run = ENGINES[engine].run_of(document, f"{engine}'s results")
        except EngineError as exc:
            raise StoreError(f"{where}: {exc}") from exc
        shards = {k: v for k, v in self.shards.items() if k != engine}
        return Store({**self.engines, engine: document}, shards, {**self.runs, engine: run})

    def with_results(self, engine: str, document: Mapping[str, Any], where: str) -> Store:
        """This store with ``document`` (``engine``'s results, read from ``where``) put in.

        A whole run replaces the engine's earlier one; a shard waits beside the others of its run, and
        once all of them are here they become the engine's whole run.
        """
        adapter = ENGINES[engine]
        if not adapter.is_shard(document):
            return self._whole(engine, document, where)
        if engine in self.engines:
            raise StoreError(
                f"{where}: a shard of {engine}'s run cannot join the whole run this store holds; "
                "write it into a store of its own and merge the stores"
            )
        index, count = _shard_of(document, where)
        held = self.shards.get(engine, ())
        counts = {_shard_of(d, where)[1] for d in held}
        if counts and counts != {count}:
            raise StoreError(
                f"{where}: shard {index}/{count} of {engine}, but this store holds shards of {counts.pop()}"
            )
        if index in {_shard_of(d, where)[0] for d in held}:
            raise StoreError(f"{where}: this store already holds shard {index}/{count} of {engine}")
        parts = (*held, document)
        if len(parts) < count:
            return Store(self.engines, {**self.shards, engine: parts}, self.runs)
        try:
            whole = adapter.merge(sorted(parts, key=lambda d: _shard_of(d, where)[0]))
        except EngineError as exc:
            raise StoreError(f"{where}: {exc}") from exc
        return self._whole(engine, whole, where)

    def missing(self) -> list[str]:
        """What the shards held here still wait for, one phrase per engine."""
        out = []
        for engine, parts in sorted(self.shards.items()):
            count = _shard_of(parts[0], engine)[1]
            have = sorted(_shard_of(d, engine)[0] for d in parts)
            out.append(f"{engine} has shards {', '.join(map(str, have))} of {count}")
        return out

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "runs": {name: run.to_json() for name, run in sorted(self.runs.items())},
            "engines": dict(sorted(self.engines.items())),
        }
        if self.shards:
            data["shards"] = {k: list(v) for k, v in sorted(self.shards.items())}
        return data


def _shard_of(document: Mapping[str, Any], where: str) -> tuple[int, int]:
    shard = document.get("shard")
    if not isinstance(shard, Mapping) or not all(isinstance(shard.get(k), int) for k in ("index", "count")):
        raise StoreError(f"{where}: a shard without its index and count")
    return int(shard["index"]), int(shard["count"])


def _json(path: Path, missing: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StoreError(f"{path}: {missing}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(f"{path}: not readable JSON ({exc})") from exc


def load(path: Path) -> Store:
    data = _json(path, f"no such store; `guard-mutation run --store {path}` writes one")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StoreError(f"{path}: not a {FORMAT} file")
    if data.get("version") not in READS:
        reads = " and ".join(map(str, READS))
        raise StoreError(f"{path}: {FORMAT} version {data.get('version')!r}; this tool reads {reads}")
    engines = data.get("engines")
    if not isinstance(engines, dict) or not all(isinstance(d, dict) for d in engines.values()):
        raise StoreError(f"{path}: 'engines' must map each engine's name to its results")
    unknown = sorted(set(engines) - set(ENGINES))
    if unknown:
        raise StoreError(f"{path}: unknown engine {unknown[0]!r}; one of: {', '.join(ENGINES)}")
    shards = data.get("shards", {})
    if not isinstance(shards, dict) or not all(
        name in ENGINES and isinstance(parts, list) and all(isinstance(d, dict) for d in parts)
        for name, parts in shards.items()
    ):
        raise StoreError(f"{path}: 'shards' must map engines' names to lists of their shards' results")
    checked = [(name, d) for name, d in engines.items()] + [(n, d) for n, ps in shards.items() for d in ps]
    for name, document in checked:
        try:
            ENGINES[name].check(document, f"its {name} results")
        except EngineError as exc:
            raise StoreError(f"{path}: {exc}") from exc
    store = Store(shards={name: tuple(parts) for name, parts in shards.items()})
    for name, document in engines.items():
        store = store._whole(name, document, str(path))
    if data["version"] >= 2:
        _check_runs(data.get("runs"), store, path)
    return store


def _check_runs(runs: object, store: Store, path: Path) -> None:
    """The runs a store holds are the records of its engines' results, read anew: nothing edited by hand."""
    if not isinstance(runs, dict) or set(runs) != set(store.engines):
        raise StoreError(f"{path}: 'runs' must hold one run for each engine in 'engines'")
    for name, data in runs.items():
        try:
            held = Run.from_json(data, f"{path}: runs.{name}")
        except RecordError as exc:
            raise StoreError(str(exc)) from exc
        if held != store.runs[name]:
            raise StoreError(f"{path}: runs.{name} differs from {name}'s results it was made from")


def load_or_empty(path: Path) -> Store:
    return load(path) if path.exists() else Store()


def write(store: Store, path: Path) -> None:
    """Written whole or not at all: a reader never sees half a store."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(store.to_json(), out, indent=1, ensure_ascii=False)
            out.write("\n")
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_results(engine: str, path: Path) -> dict[str, Any]:
    """An engine's own results file, checked as that engine reads it."""
    document = _json(path, "no such results file")
    if not isinstance(document, dict):
        raise StoreError(f"{path}: not {engine}'s results")
    try:
        ENGINES[engine].read(path)
    except EngineError as exc:
        raise StoreError(str(exc)) from exc
    return document

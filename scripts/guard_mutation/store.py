"""The one results file every engine writes into and the report and the gate read.

A store holds, per engine, that engine's results document as the engine wrote it (whole, or shards merged
into one). A whole run replaces the engine's earlier whole run; a shard joins only other shards of the
same run, and never a whole run: a store that holds a whole run is never overwritten by a part of one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .engines import ENGINES, EngineError

FORMAT, VERSION = "guard-mutation-store", 1


class StoreError(Exception):
    """A store that cannot be read, or an engine's results that cannot go into it: bad input (exit 2)."""


@dataclass(frozen=True)
class Store:
    engines: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def with_results(self, engine: str, document: Mapping[str, Any], where: str) -> Store:
        """This store with ``document`` (``engine``'s results, read from ``where``) put in."""
        adapter = ENGINES[engine]
        held = self.engines.get(engine)
        if held is not None and adapter.is_shard(document):
            if not adapter.is_shard(held):
                raise StoreError(
                    f"{where}: a shard of {engine}'s run cannot join the whole run this store holds; "
                    "write it into a store of its own and merge the stores"
                )
            try:
                document = adapter.merge([held, document])
            except EngineError as exc:
                raise StoreError(f"{where}: {exc}") from exc
        return Store({**self.engines, engine: document})

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "engines": dict(sorted(self.engines.items()))}


def load(path: Path) -> Store:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StoreError(f"{path}: no such store; `guard-mutation run --store {path}` writes one") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(f"{path}: not a readable store ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StoreError(f"{path}: not a {FORMAT} file")
    if data.get("version") != VERSION:
        raise StoreError(f"{path}: {FORMAT} version {data.get('version')!r}; this tool reads {VERSION}")
    engines = data.get("engines")
    if not isinstance(engines, dict) or not all(isinstance(d, dict) for d in engines.values()):
        raise StoreError(f"{path}: 'engines' must map each engine's name to its results")
    unknown = sorted(set(engines) - set(ENGINES))
    if unknown:
        raise StoreError(f"{path}: unknown engine {unknown[0]!r}; one of: {', '.join(ENGINES)}")
    for name, document in engines.items():
        try:
            ENGINES[name].check(document, f"its {name} results")
        except EngineError as exc:
            raise StoreError(f"{path}: {exc}") from exc
    return Store(engines)


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
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_results(engine: str, path: Path) -> dict[str, Any]:
    """An engine's own results file, checked as that engine reads it."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StoreError(f"{path}: no such results file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(document, dict):
        raise StoreError(f"{path}: not {engine}'s results")
    try:
        ENGINES[engine].read(path)
    except EngineError as exc:
        raise StoreError(str(exc)) from exc
    return document

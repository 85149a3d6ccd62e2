"""The one results file: each engine's latest whole run, as the records it made. Every report reads it.

A whole run replaces the engine's earlier one. A part that an engine's own option makes (the catalogue
alone) is stored only where no whole run of its engine is held, and the gate and the report name it a
part; a selection (``--only``, ``--changed-since``) is judged where it ran and never stored. Writes go
through a temporary file and a rename: an interrupted write leaves the store as it was.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .model import RecordError, Run

FORMAT, VERSION = "guard-mutation-store", 3


class StoreError(Exception):
    """A store that cannot be read or written: bad input (exit 2)."""


@dataclass(frozen=True)
class Store:
    runs: Mapping[str, Run] = field(default_factory=dict)  # by engine

    def with_run(self, run: Run) -> Store:
        held = self.runs.get(run.engine)
        if not run.whole and held is not None and held.whole:
            raise StoreError(f"a part of {run.engine}'s run never replaces the whole run the store holds")
        return Store({**self.runs, run.engine: run})


def load(path: Path) -> Store:
    """The store at ``path``; an empty one where there is no file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Store()
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: cannot read it: {exc}") from exc
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(f"{path}: not JSON: {exc}") from exc
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise StoreError(f"{path}: not a {FORMAT} file")
    if document.get("version") != VERSION:
        raise StoreError(
            f"{path}: store version {document.get('version')!r}; this tool reads {VERSION}: "
            "run the engines again"
        )
    runs = document.get("runs")
    if not isinstance(runs, dict):
        raise StoreError(f"{path}: 'runs' is not an object")
    try:
        read = {name: Run.from_json(run, f"{path}: runs.{name}") for name, run in runs.items()}
    except RecordError as exc:
        raise StoreError(str(exc)) from exc
    for name, run in read.items():
        if run.engine != name:
            raise StoreError(f"{path}: runs.{name}: holds {run.engine!r}'s run")
    return Store(read)


def save(store: Store, path: Path) -> None:
    document = {
        "format": FORMAT,
        "version": VERSION,
        "runs": {name: run.to_json() for name, run in sorted(store.runs.items())},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=1)
            out.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise

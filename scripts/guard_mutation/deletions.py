"""The core deletions as an engine: every one-line statement of ``_core.pyx`` made ``pass`` in turn.

Registered by entry point like the others (scripts/pyproject.toml); its module, ``core_deletions``, runs
the deletions and writes their JSON, which ``mutation_records.read_core_deletions`` makes records of.
It reaches what the sweep's view of the Cython leaves alone: statements with casts, ``with nogil``
blocks, the C declarations and the type set-up at import.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .engines import Engine, EngineError, RunOptions, _records
from .scoped import Judged

NAME = "core-deletions"


def _run(options: RunOptions, out: Path) -> int:
    from core_deletions import main

    if options.shard:
        sys.stderr.write(f"{NAME}: runs whole, never in shards\n")
        return 2
    argv = ["--json", str(out)]
    if options.jobs is not None:
        argv += ["--jobs", str(options.jobs)]
    if options.changed_since is not None:
        argv += ["--changed-since", options.changed_since]
    return main(argv)


def _deletions() -> list[Any]:
    from core_deletions import ROOT, SOURCE, candidates

    return candidates((ROOT / SOURCE).read_text(encoding="utf-8"))


def _list(args: Sequence[str]) -> int:
    from core_deletions import SOURCE

    if args:
        sys.stderr.write(f"{NAME}: list takes no options, got {' '.join(args)}\n")
        return 2
    for d in _deletions():
        sys.stdout.write(f"{d.id}  {SOURCE}:{d.line}  {d.scope}  delete: {d.text!r}\n")
    return 0


def _show(mutant_id: str) -> int:
    from core_deletions import SOURCE

    found = [d for d in _deletions() if d.id == mutant_id]
    if not found:
        sys.stderr.write(f"{NAME}: no deletion {mutant_id!r}; `guard-mutation list {NAME}` names them\n")
        return 2
    d = found[0]
    sys.stdout.write(f"--- {SOURCE}\n+++ {SOURCE}\n@@ -{d.line} +{d.line} @@ {d.scope}\n-{d.text}\n+pass\n")
    return 0


def _merge(documents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    raise EngineError(f"{NAME} runs whole, never in shards: there is nothing to merge")


def _judge(results: Path, config: Path) -> Judged:
    from mutation_engine_inputs import deletion_reviews
    from mutation_records import read_core_deletions

    records = read_core_deletions(results, whole=False).records
    reviews = deletion_reviews(config)
    killed = sum(r.outcome.status == "killed" for r in records)
    skipped = sum(r.outcome.status == "invalid" for r in records)
    survived = [r for r in records if r.outcome.status == "survived"]
    reviewed = [r for r in survived if (r.mutant.scope, r.mutant.original) in reviews]
    alive = tuple(r for r in survived if r not in reviewed)
    return Judged(NAME, killed, len(reviewed), skipped, alive)


_read = _records("mutation_records", "read_core_deletions")

CORE_DELETIONS = Engine(
    NAME,
    "every one-line statement of the compiled core made pass, rebuilt and judged by the behaviour suite",
    _run,
    _read,
    _list,
    _show,
    _merge,
    _judge,
    _read,
)

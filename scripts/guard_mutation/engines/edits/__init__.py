"""The engine of edits: the catalogue's named critical edits and the generated operators' edits of the
package's ``.py`` and ``.pyx`` text, judged by one runner. ``catalogue`` and ``operators`` make them;
``orchestrate`` judges them in copies, warm where a server holds them (``warm``, ``server``; ``woven``,
``weave``: the compiled ones on one build), ``judge`` gives the verdict, ``depends`` what it rests on.
Options (``--option``): ``engine=cold`` judges every mutant in a fresh interpreter; ``generated=no`` runs
the catalogue alone, a part of the engine's run. Only this module loads
with the engine; the rest when it runs. The pytest plugin (``plugin``) loads nothing else of it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .. import EngineError, Request

if TYPE_CHECKING:
    from ...model import Mutant, Outcome, Run
    from .edit import Edit

log = logging.getLogger("guard_mutation.engines.edits")
OPTIONS = {"engine": ("warm", "cold"), "generated": ("yes", "no")}


class EditsEngine:
    name = "edits"

    def _made(self, request: Request) -> tuple[list[Edit], list[Edit], list[str]]:
        from . import catalogue, operators

        named = catalogue.edits(request.config, request.root)
        generated, notes = operators.generate(request.config, request.root, named)
        taken = {e.id for e in named} & {e.id for e in generated}
        if taken:
            raise EngineError(f"a generated mutant has the id of a catalogue entry: {sorted(taken)[0]}")
        return named, generated, notes

    def _chosen(self, request: Request, edits: list[Edit]) -> list[Edit]:
        unknown = sorted(set(request.only) - {e.id for e in edits})
        if unknown:
            raise EngineError(f"no mutant of the edits engine has the id {unknown[0]!r}")
        chosen = [e for e in edits if not request.only or e.id in request.only]
        change = request.change
        if change is None:
            return chosen
        touched = [e for e in chosen if change.touches(e.file, e.mutant.line, e.mutant.end_line)]
        tested = [e for e in chosen if any(change.changed_test(t) for t in e.mutant.killed_by)]
        return [e for e in chosen if e in touched or e in tested or e.mutant.function in change.functions]

    def mutants(self, request: Request) -> Sequence[Mutant]:
        named, generated, _ = self._made(request)
        return [e.mutant for e in self._chosen(request, named + generated)]

    def run(self, request: Request) -> Run:
        from dataclasses import replace

        from ...model import Record, Run
        from ...reuse import kept
        from .depends import digests
        from .orchestrate import execute

        if any(value not in OPTIONS.get(key, ()) for key, value in request.options.items()):
            known = ", ".join(f"{k}={v}" for k, values in OPTIONS.items() for v in values)
            raise EngineError(f"edits: unknown option in {request.options} (known: {known})")
        named, generated, notes = self._made(request)
        catalogue_alone = request.options.get("generated") == "no" and bool(generated)
        if catalogue_alone:  # the catalogue alone is a part of the engine's run
            generated, notes = [], ["the catalogue alone: the generated operators did not run"]
        chosen = self._chosen(request, named + generated)
        canary = next((e for e in named if e.id == (request.config.harness.canary or named[0].id)), None)
        listed = chosen + ([canary] if canary is not None and canary not in chosen else [])
        depends = digests(request.config, request.root, listed, request.runtime, request.full)
        outcomes = {e.id: o for e in chosen if (o := kept(request.previous, e.id, depends[e.id])) is not None}
        todo = [e for e in chosen if e.id not in outcomes]
        if todo and canary is not None and canary not in todo:
            todo.insert(0, canary)  # the canary runs whenever anything else does, and is judged now
        if todo:
            jobs = request.jobs or request.config.harness.jobs
            equivalent, note = _proven(todo, jobs)
            outcomes |= equivalent
            notes = [*notes, note]
            todo = [e for e in todo if e.id not in equivalent]
        log.info(
            "edits: %d mutants, %d outcomes kept or proven, %d to judge",
            len(chosen),
            len(outcomes),
            len(todo),
        )
        if todo:
            warm = request.options.get("engine") != "cold"
            run = {"jobs": jobs, "full": request.full, "runtime": request.runtime, "warm": warm}
            outcomes |= execute(request.config, request.root, todo, canary if canary in todo else None, **run)
        records = tuple(
            Record(e.mutant, replace(outcomes[e.id], depends=depends[e.id]))
            for e in listed
            if e.id in outcomes
        )
        return Run(self.name, records, request.whole and not catalogue_alone, tuple(notes))


def _proven(todo: list[Edit], jobs: int) -> tuple[dict[str, Outcome], str]:
    """The generated mutants the compiler proves equivalent (``equivalence``): never run."""
    import tempfile
    import time
    from collections import Counter

    from ...model import EQUIVALENT, Outcome
    from .equivalence import proven

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="guard-mutation-equivalence-") as tmp:
        found = proven(todo, Path(tmp), jobs)
    seconds = time.monotonic() - started
    looked = Counter(f"{e.mutant.operator} on {e.impl}" for e in todo if e.generated)
    hits = Counter(f"{e.mutant.operator} on {e.impl}" for e in todo if e.id in found)
    each = ", ".join(f"{what} {hits[what]} of {n}" for what, n in sorted(looked.items())) or "none generated"
    note = f"compiler equivalence: {each} proven, in {seconds:.1f}s; those are not run"
    log.info("edits: %s", note)
    share = seconds / max(1, len(found))
    return {i: Outcome(EQUIVALENT, seconds=round(share, 3), detail=proof) for i, proof in found.items()}, note


ENGINE = EditsEngine()

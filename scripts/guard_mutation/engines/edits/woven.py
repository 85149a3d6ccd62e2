"""The compiled mutants' woven build: one copy, one build, green with no switch on, then served warm.

Every compiled mutant ``weave`` places behind a switch is judged in a child of a warm server on this build,
its switch on; the rest, and those whose branch the compiler refuses, are rebuilt alone. The baseline on
it, no switch on, also maps which test reaches which switch. Where the build fails or is red, every
compiled mutant is rebuilt alone, after a baseline on the unmutated core.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

from .context import Context, Plan, make_copy
from .edit import Edit, module_name
from .judge import tail
from .outcomes import TestRun
from .warm import GoCold
from .weave import Schema, weave_built

log = logging.getLogger("guard_mutation.engines.edits")


def _weave(ctx: Context, where: Path, compiled: Sequence[Edit]) -> dict[str, tuple[str, int]] | None:
    """Weave and build in ``where``: the switches, or None where the build fails."""
    files = {
        file: (
            next(e.original for e in compiled if e.file == file),
            [(e.id, e.mutated) for e in compiled if e.file == file],
        )
        for file in sorted({e.file for e in compiled})
    }

    def build(schemas: dict[str, Schema]) -> str | None:
        for file, schema in schemas.items():
            (where / file).write_text(schema.source, encoding="utf-8")
        if not any(schema.numbers for schema in schemas.values()):
            return ""  # nothing woven: no build
        code, output = ctx.build(where)
        return None if code == 0 else output

    built = weave_built(files, build)
    if isinstance(built, str):
        log.warning("[woven] no woven build (%s): each compiled mutant is rebuilt alone", tail(built))
        return None
    unwoven = {i: why for s in built.schemas.values() for i, why in s.unwoven.items()}
    log.debug("[woven] rebuilt alone: %s", unwoven)
    switches = {i: (module_name(f), n) for f, s in built.schemas.items() for i, n in s.numbers.items()}
    log.info(
        "[woven] %d compiled mutants in one build, %d rebuilt alone",
        len(switches),
        len(unwoven) + len(built.refused),
    )
    return switches


def prepare(ctx: Context, copies: Sequence[Path], compiled: Sequence[Edit], tests: Plan) -> TestRun | None:
    """Weave, build and check the compiled mutants; set ``ctx.woven``, ``ctx.switches`` and the map, and
    start a woven server per copy. The baseline run, green, or None where there is no woven build."""
    started = time.monotonic()
    switches = (
        _weave(ctx, make_copy(ctx.snapshot, ctx.tmp / "woven"), compiled) if ctx.warm and compiled else None
    )
    if switches is None:
        return None
    ctx.woven = ctx.tmp / "woven"
    for copy in copies:
        ctx.server("woven", copy, wait=False)
    server, run, problem = ctx.server("woven", copies[0]), None, "its server did not start"
    plan = Plan(select=tests.select, hits=tuple(sorted({module for module, _ in switches.values()})))
    try:
        run = ctx.pytest_warm(server, ctx.config.harness.tests, False, plan, {}) if server else None
    except GoCold as exc:
        problem = str(exc)
    if run is not None:
        red = run.returncode not in (0, 5) or run.collect_errors
        problem = f"its tests are red: {', '.join(run.failed()[:3]) or tail(run.output)}" if red else ""
    if problem or run is None:
        ctx.woven = None
        log.warning("[woven] no woven build (%s): every compiled mutant is rebuilt alone", problem)
        return None
    ctx.switches, ctx.hits, ctx.order, ctx.blind = switches, run.hits, tuple(run.order), tuple(run.spawned)
    log.info(
        "[baseline] %d tests green on the woven build (%.1fs)", len(run.outcomes), time.monotonic() - started
    )
    return run

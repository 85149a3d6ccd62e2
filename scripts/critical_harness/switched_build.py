"""The compiled mutants' woven build: one copy, one build, checked green unmutated, then served warm.

Every compiled mutant that ``switched_source.weave`` can place behind a switch is judged in a child of a warm
server on this build, with its switch on; the rest, and all of them when the woven build does not build
or is not green with no switch on, are rebuilt one by one as before.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from .compiled import is_compiled
from .context import Context
from .engine import tail
from .model import Mutant
from .switched_source import weave
from .warm import GoCold, module_name
from .workspace import make_copy


def prepare_woven(ctx: Context, builder: Path, copies: Sequence[Path], mutants: Sequence[Mutant]) -> None:
    """Weave, build (by the builder of the copy ``builder``) and check the compiled mutants' sources, then
    launch a woven server for each copy. Sets ``ctx.woven`` and ``ctx.switches`` on success."""
    compiled = [m for m in mutants if is_compiled(m.spec.file)]
    if ctx.engine != "warm" or not compiled:
        return
    started = time.monotonic()
    where = make_copy(ctx.snapshot, ctx.tmp / "woven" / "project")
    switches: dict[str, tuple[str, int]] = {}
    for file in sorted({m.spec.file for m in compiled}):
        of_file = [m for m in compiled if m.spec.file == file]
        schema = weave(of_file[0].original, [(m.spec.id, m.mutated) for m in of_file])
        (where / file).write_text(schema.source, encoding="utf-8")
        switches |= {mutant_id: (module_name(file), n) for mutant_id, n in schema.numbers.items()}
        for mutant_id, reason in schema.unwoven.items():
            ctx.say(f"[woven] {mutant_id} is rebuilt on its own: {reason}")
    if not switches:
        return
    code, output = ctx.build(builder, where)
    if code != 0:
        ctx.say(f"[woven] the woven build failed ({tail(output)}); each compiled mutant is rebuilt alone")
        return
    ctx.woven, ctx.switches = where, switches
    for copy in copies:
        ctx.launch_woven_server(copy)
    # With no switch on the woven build must behave as the original: its mutants' tests green on it.
    targets = sorted({entry for m in compiled if m.spec.id in switches for entry in m.spec.killed_by})
    server = ctx.woven_server(builder)
    problem = "its server did not start"
    if server is not None:
        try:
            run = ctx.pytest_warm(server, where, None, targets, exitfirst=False)
            red = ", ".join(run.failed()) or tail(run.output)
            problem = "" if run.returncode == 0 else f"its tests are red: {red}"
        except GoCold as exc:
            problem = str(exc)
    if problem:
        ctx.switches = {}
        ctx.say(f"[woven] no woven build ({problem}), so every compiled mutant is rebuilt on its own")
        return
    seconds = time.monotonic() - started
    ctx.say(f"[woven] {len(switches)} compiled mutants in one build, green with none on, in {seconds:.1f}s")

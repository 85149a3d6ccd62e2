"""The compiled core's mutants built for the fork engine: woven into one build where they can be, else alone.

A mutant of a ``.pyx`` file runs against an extension built from it. Translating and compiling the core
takes seconds, so every mutant that ``critical_harness.switched_source`` can place behind a switch shares one
build of a project copy and is selected by number in its child; the rest (module level, class bodies,
signatures) get a copy and a build each. A mutant Cython refuses to translate is set aside, with the
compiler's words, and the woven build is made again without it.
"""

from __future__ import annotations

import ast
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from critical_harness.compiled import build_command, build_env
from critical_harness.switched_source import SWITCH, weave
from critical_harness.workspace import make_copy

from .. import cython_view
from ..work_item import Mutant

log = logging.getLogger("mutation_sweep")
# Cython names the file, line and column of each error: "guard_lib/_core.pyx:123:8: ..."
# An error's position starts its line; a warning's ("warning: file:line:col: Unreachable code") builds,
# and must refuse no mutant.
_ERROR = re.compile(r"^(?P<file>[\w./-]+\.pyx):(?P<line>\d+):\d+: (?P<what>.*)", re.MULTILINE)
_BRANCH = re.compile(rf"(?P<indent>\s*)(?:el)?if {SWITCH} == (?P<number>\d+):")
_ATTEMPTS = 8
NOT_BUILT = "Cython refuses it"
# A child names its mutant here before it imports the extension, so that code the module runs at import
# (installing its fast methods, say) runs mutated too; selecting it after the import would be too late.
SWITCH_ENV = "GUARD_LIB_SWEEP_SWITCH"


@dataclass
class Builds:
    """Where each built mutant's project copy is and its switch there (None: built alone)."""

    at: dict[str, tuple[Path, int | None]] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)  # mutant id -> the compiler's words
    woven: Path | None = None  # the shared copy, green with no switch on


def _build(copy: Path) -> tuple[int, str]:
    done = subprocess.run(
        build_command(),
        cwd=copy,
        env=build_env(dict(os.environ)),
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def _errors(output: str, file: str) -> list[tuple[int, str]]:
    return [(int(m["line"]), m["what"]) for m in _ERROR.finditer(output) if m["file"].endswith(file)]


def _declares_scope(mutant: Mutant) -> bool:
    return any(line.lstrip().startswith(("global ", "nonlocal ")) for line in mutant.original.splitlines())


def _owner(woven: list[str], line: int) -> int | None:
    """The switch number of the branch that holds 1-based ``line`` of a woven source, if any."""
    text = woven[line - 1]
    depth = len(text) - len(text.lstrip())
    for k in range(line - 2, -1, -1):
        branch = _BRANCH.match(woven[k])
        if branch is not None and len(branch["indent"]) < depth:
            return int(branch["number"])
        if woven[k].strip() and len(woven[k]) - len(woven[k].lstrip()) < depth:
            depth = len(woven[k]) - len(woven[k].lstrip())
    return None


def switched_at_import(woven: str) -> str:
    """The woven source with its switch read from ``SWITCH_ENV`` before any of the module's own code."""
    trailer = f"cdef int {SWITCH} = 0\n"
    if trailer not in woven:
        raise RuntimeError("the woven source does not declare its switch as expected")
    lines = woven.replace(trailer, "", 1).splitlines(keepends=True)
    body = ast.parse(cython_view.view(woven).text).body
    docstring = body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    at = (body[0].end_lineno or 0) if docstring else 0
    reading = (
        f"from os import environ as _harness_environ_\n"
        f'cdef int {SWITCH} = int(_harness_environ_.get("{SWITCH_ENV}", "0"))\n'
    )
    return "".join([*lines[:at], reading, *lines[at:]])


def _weave_and_build(
    root: Path, copy: Path, file: str, *, mutants: list[Mutant], sources: Mapping[str, str], out: Builds
) -> dict[str, int]:
    """Weave what can be, build, and drop whatever Cython refuses until the build succeeds."""
    original = (root / file).read_text(encoding="utf-8")
    remaining = list(mutants)
    for _ in range(_ATTEMPTS):
        schema = weave(original, [(m.id, sources[m.id]) for m in remaining])
        woven = switched_at_import(schema.source)
        (copy / file).write_text(woven, encoding="utf-8")
        code, output = _build(copy)
        if code == 0:
            return schema.numbers
        by_number = {n: mutant_id for mutant_id, n in schema.numbers.items()}
        woven_lines = woven.splitlines()
        blamed: dict[str, str] = {}
        for line, what in _errors(output, file):
            number = _owner(woven_lines, line) if line <= len(woven_lines) else None
            if number is not None and number in by_number:
                blamed.setdefault(by_number[number], what)
        if not blamed:
            raise RuntimeError(
                f"the woven build of {file} fails, and no mutant's branch is to blame:\n{output[-2000:]}"
            )
        out.refused |= {mutant_id: f"{NOT_BUILT}: {what}" for mutant_id, what in blamed.items()}
        remaining = [m for m in remaining if m.id not in blamed]
        log.info("sweep: %d compiled mutants Cython refuses; building again without them", len(blamed))
    raise RuntimeError(f"the woven build of {file} still fails after {_ATTEMPTS} attempts")


def build(
    root: Path, mutants: Sequence[Mutant], sources: Mapping[str, str], scratch: Path, jobs: int
) -> Builds:
    """Build every compiled mutant under ``scratch``; a mutant the woven build cannot hold gets its own."""
    out = Builds()
    if not mutants:
        return out
    out.woven = make_copy(root, scratch / "woven")
    alone: list[Mutant] = []
    for file in sorted({m.file for m in mutants}):
        of_file = [m for m in mutants if m.file == file]
        schema = weave((root / file).read_text(encoding="utf-8"), [(m.id, sources[m.id]) for m in of_file])
        # A scope declaration holds for its whole function, every switch's branch too: an edit of one is
        # only what it says when built alone.
        apart = {m.id for m in of_file if m.id in schema.unwoven or _declares_scope(m)}
        alone += [m for m in of_file if m.id in apart]
        woven = [m for m in of_file if m.id not in apart]
        numbers = _weave_and_build(root, out.woven, file, mutants=woven, sources=sources, out=out)
        out.at |= {mutant_id: (out.woven, n) for mutant_id, n in numbers.items()}

    def one(mutant: Mutant) -> tuple[Mutant, Path, int, str]:
        copy = make_copy(root, scratch / mutant.id)
        (copy / mutant.file).write_text(sources[mutant.id], encoding="utf-8")
        code, output = _build(copy)
        return mutant, copy, code, output

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for mutant, copy, code, output in pool.map(one, alone):
            if code == 0:
                out.at[mutant.id] = (copy, None)
                continue
            errors = _errors(output, mutant.file)
            out.refused[mutant.id] = f"{NOT_BUILT}: {errors[0][1] if errors else output.strip()[-200:]}"
            shutil.rmtree(copy, ignore_errors=True)
    log.info(
        "sweep: %d compiled mutants in one woven build, %d built alone, %d refused by Cython",
        sum(1 for _, n in out.at.values() if n is not None),
        sum(1 for _, n in out.at.values() if n is None),
        len(out.refused),
    )
    return out

"""Trivial compiler equivalence: a generated mutant the compiler turns into the program it had, proven
before any test runs, recorded ``equivalent`` with the proof, and never run.

- Python: the mutated module compiles to the same code objects, positions and line numbers aside.
- The core: every woven mutant at once, translated by Cython once, its switch a C macro
  (``weave(fixed=True)``) that the optimiser folds. For mutant n, the C functions holding its switch
  are compiled at the build's level (``-O2``, no debug information), once with the macro at n and once
  at 0, every other function left a declaration (a call to it stays a call: nothing rests on how it is
  inlined). The same C text both times, so the same line numbers: the same object file, byte for byte,
  is the proof. A mutant not woven, or whose build fails, is run.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
import types
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .edit import Edit, module_name
from .weave import Schema, weave_built

log = logging.getLogger("guard_mutation.engines.edits")
PYTHON_PROOF = "compiles to the same code objects as the original (positions aside)"
_MACRO = "GUARD_MUTATION_MUTANT"
# A function's definition in Cython's C: a signature from the margin, ending `) {` (or `{` on a line of
# its own), and a body to a lone `}`.
_SIGNATURE_END = re.compile(r"\)\s*(?:CYTHON_\w+\s*)?\{$")
_BEFORE = re.compile(r"\s*$|.*(?:;|\*/|\}|\{)\s*$")  # what ends the text before a signature
_HEAD = re.compile(r"[A-Za-z_]")  # a signature starts at the margin
_SWITCH = re.compile(r"_harness_on_\((\d+)\)")


def _plain(code: types.CodeType) -> tuple[object, ...]:
    """What a code object does, less where it came from."""
    consts = tuple(_plain(c) if isinstance(c, types.CodeType) else (type(c), repr(c)) for c in code.co_consts)
    exceptions = getattr(code, "co_exceptiontable", b"")
    return (code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
            code.co_flags, code.co_argcount, code.co_kwonlyargcount, code.co_posonlyargcount, exceptions,
            code.co_name)  # fmt: skip


def python_same(edit: Edit) -> bool:
    try:
        before, after = (
            compile(text, edit.file, "exec", dont_inherit=True) for text in (edit.original, edit.mutated)
        )
    except (SyntaxError, ValueError):
        return False
    return _plain(before) == _plain(after)


def _functions(c: list[str]) -> list[tuple[int, int, int]]:
    """Each definition in the translated C: its signature's first line, its body's first (the one ending
    in its ``{``) and last (a lone ``}``), 0-based."""
    found, i = [], 0
    while i < len(c):
        line = c[i].rstrip()
        if line == "{" or _SIGNATURE_END.search(line):
            start = i - (line == "{")
            while start > 0 and not _BEFORE.match(c[start - 1]):
                start -= 1
            while start < i and c[start].startswith("#"):
                start += 1
            end = next((k for k in range(i + 1, len(c)) if c[k].rstrip() == "}"), None)
            if end is None:
                break
            head = c[start : i + 1]
            signature = head[:-1] if line == "{" else head
            if _HEAD.match(c[start]) and "(" in "".join(head) and not signature[-1].startswith("#"):
                found.append((start, i, end))
            i = end
        i += 1
    return found


def _flags() -> list[str]:
    """The build's own flags, less debug information and warnings; its ``-O2`` last, as setup.py gives it."""
    flags = [
        f for f in (sysconfig.get_config_var("CFLAGS") or "").split() if not f.startswith(("-g", "-W", "-O"))
    ]
    include = sysconfig.get_paths()["include"]
    return [*flags, "-O2", "-fPIC", "-w", f"-I{include}"]


def _object(where: Path, c_text: str, number: int) -> bytes | None:
    """The object code of ``c_text`` with the switch at ``number``; None where it does not build. Built
    in a folder of its own under one file name, so the two builds differ in nothing else."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "core.c").write_text(c_text, encoding="utf-8")
    built = subprocess.run(["gcc", *_flags(), f"-D{_MACRO}={number}", "-c", "core.c", "-o", "core.o"],
                           cwd=where, capture_output=True, check=False)  # fmt: skip
    return (where / "core.o").read_bytes() if built.returncode == 0 else None


def _c_name(signature: str) -> str:
    return str(re.findall(r"(\w+)\s*\(", signature)[0])


class _Translated:
    """One file's mutants woven with a fixed switch and translated to C once; a mutant's check strips
    that C to the functions holding its switch."""

    def __init__(self, c: list[str], numbers: dict[str, int], where: Path) -> None:
        self.c, self.numbers, self.where = c, numbers, where
        self.spans = _functions(c)
        self.holding: dict[int, list[tuple[int, int, int]]] = {}
        for span in self.spans:
            for n in {int(n) for line in c[span[1] : span[2] + 1] for n in _SWITCH.findall(line)}:
                self.holding.setdefault(n, []).append(span)
        self.switch = {s[0] for s in self.spans if "_harness_on_(int" in "".join(c[s[0] : s[1] + 1])}
        self.unmutated: dict[frozenset[int], bytes | None] = {}
        self.lock = threading.Lock()

    def _stripped(self, kept: list[tuple[int, int, int]]) -> str:
        text, keep = list(self.c), {s[0] for s in kept} | self.switch
        for first, opening, last in reversed(self.spans):
            if first not in keep:  # its signature alone: a call to it stays a call
                signature = "".join(self.c[first : opening + 1]).rstrip().removesuffix("{").rstrip()
                text[first : last + 1] = [signature + ";\n"]
            elif first not in self.switch:  # emitted though nothing calls it now
                text[first] = "__attribute__((used)) " + self.c[first]
        return "".join(text)

    def proof(self, edit: Edit) -> str | None:
        number = self.numbers.get(edit.id, 0)
        kept = self.holding.get(number, [])
        if not number or not kept:
            return None
        text, key = self._stripped(kept), frozenset(s[0] for s in kept)
        with self.lock:
            if key not in self.unmutated:
                self.unmutated[key] = _object(self.where / f"unmutated-{len(self.unmutated)}", text, 0)
        if self.unmutated[key] is None or _object(self.where / edit.id, text, number) != self.unmutated[key]:
            return None
        names = ", ".join(_c_name("".join(self.c[first : opening + 1])) for first, opening, _ in kept)
        return f"the same object code at -O2 for {names} (gcc, its switch folded)"


def _translate(edits: Sequence[Edit], tmp: Path) -> _Translated | None:
    """Weave with the fixed switch and translate; a mutant whose branch Cython refuses is left out (it is
    invalid, and run alone), as the woven build does."""
    file = edits[0].file
    where = tmp / Path(file).stem
    c_file = where / f"{Path(file).stem}.c"

    def translate(schemas: dict[str, Schema]) -> str | None:
        pyx = where / file
        pyx.parent.mkdir(parents=True, exist_ok=True)
        pyx.write_text(schemas[file].source, encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "cython",
            "-3",
            "--module-name",
            module_name(file),
            file,
            "-o",
            str(c_file),
        ]
        done = subprocess.run(command, cwd=where, capture_output=True, text=True, check=False)
        return None if done.returncode == 0 else done.stdout + done.stderr

    built = weave_built(
        {file: (edits[0].original, [(e.id, e.mutated) for e in edits])}, translate, fixed=True
    )
    if isinstance(built, str):
        log.info("[equivalence] %s: the woven source does not translate; its mutants are run", file)
        return None
    return _Translated(
        c_file.read_text(encoding="utf-8").splitlines(keepends=True), built.schemas[file].numbers, where
    )


def compiled_same(edits: Sequence[Edit], tmp: Path, jobs: int) -> dict[str, str]:
    """The compiled mutants proven equivalent: id -> the proof."""
    proven: dict[str, str] = {}
    if edits and shutil.which("gcc") is None:
        log.warning("[equivalence] no gcc on PATH: no compiled mutant is checked; each is run")
        return proven
    for file in sorted({e.file for e in edits}):
        mine = [e for e in edits if e.file == file]
        translated = _translate(mine, tmp)
        if translated is not None:
            with ThreadPoolExecutor(max(1, jobs)) as pool:
                proofs = pool.map(translated.proof, mine)
                proven |= {e.id: p for e, p in zip(mine, proofs, strict=True) if p is not None}
    return proven


def proven(edits: Sequence[Edit], tmp: Path, jobs: int) -> dict[str, str]:
    """Every generated mutant of ``edits`` the compiler proves equivalent: id -> the proof."""
    generated = [e for e in edits if e.generated]
    found = {e.id: PYTHON_PROOF for e in generated if not e.compiled and python_same(e)}
    return found | compiled_same([e for e in generated if e.compiled], tmp, jobs)

"""One edit as the engine judges it: the ``Mutant`` record, with the texts it was made from."""

from __future__ import annotations

import difflib
import io
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from ...model import Mutant

COMPILED_SUFFIX, MODULE_SCOPE = ".pyx", "<module>"


@dataclass(frozen=True)
class Edit:
    mutant: Mutant
    scope: str  # "Class.method", "function" or "<module>"
    original: str  # the whole file, before and after
    mutated: str

    @property
    def id(self) -> str:
        return self.mutant.id

    @property
    def file(self) -> str:
        return self.mutant.file

    @property
    def compiled(self) -> bool:
        return self.mutant.file.endswith(COMPILED_SUFFIX)

    @property
    def impl(self) -> str:  # the GUARD_LIB_IMPL its tests run with: the implementation it mutates
        return "compiled" if self.compiled else "python"

    @property
    def generated(self) -> bool:  # made by an operator: any failing test kills it
        return not self.mutant.killed_by


def split_lines(text: str) -> list[str]:
    """Python's own newlines (\\n, \\r\\n, \\r), kept; not str.splitlines(), which splits on \\f too."""
    return io.StringIO(text, newline="").readlines()


def content(line: str) -> str:
    return line.rstrip("\r\n")


def module_name(file: str) -> str:
    parts = list(PurePosixPath(file).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def changed_span(original: list[str], mutated: list[str]) -> tuple[int, int] | None:
    """The 0-based lines of ``original`` (first, last) outside which ``mutated`` is the same."""
    head, short = 0, min(len(original), len(mutated))
    while head < short and original[head] == mutated[head]:
        head += 1
    tail = 0
    while tail < short - head and original[-1 - tail] == mutated[-1 - tail]:
        tail += 1
    return None if head == len(original) == len(mutated) else (head, max(head, len(original) - tail - 1))


def make(file: str, scope: str, texts: tuple[str, str], mutant_id: str, operator: str, **named: Any) -> Edit:
    """``file`` edited from ``texts[0]`` to ``texts[1]``; ``named``: a catalogue entry's killed_by and why."""
    original, mutated = texts
    before, after = split_lines(original), split_lines(mutated)
    first, last = changed_span(before, after) or (0, 0)
    lines = difflib.unified_diff([content(x) for x in before], [content(x) for x in after], lineterm="")
    diff = f"--- a/{file}\n+++ b/{file}\n" + "".join(f"{line}\n" for line in list(lines)[2:])
    function = f"{module_name(file)}:{scope}"
    mutant = Mutant("edits", mutant_id, file, first + 1, last + 1, operator, diff, function, **named)
    return Edit(mutant, scope, original, mutated)

"""The gate's part of mutation_config.toml: ``[gate]`` and mutmut's entries of ``[[reviewed]]``.

Nothing here imports mutmut, pytest or guard_lib.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mutation_common import diff_sides, normalise_code
from mutation_config_file import reviewed
from mutation_io import InputError, read_mutation_config
from mutation_model import Mutant


@dataclass(frozen=True)
class Equivalent:
    function: str
    diff: str
    reason: str
    removed: str | None
    index: int

    def describe(self) -> str:
        return f"[[reviewed]] #{self.index} (mutmut, {self.function}: {normalise_code(self.diff)!r})"


@dataclass(frozen=True)
class GateConfig:
    min_score: float
    equivalents: tuple[Equivalent, ...]


def load_gate_config(path: Path) -> GateConfig:
    """Read ``[gate]`` and mutmut's ``[[reviewed]]``; the other tables in the same file are not ours."""
    data = read_mutation_config(path)
    # read_config checked every key's type (mutation_config_schema)
    min_score = data.get("gate", {}).get("min_score", 100.0)
    mine = reviewed(data, path, "mutmut")
    entries: list[Equivalent] = []
    for index, entry in mine:
        where = f"{path}: [[reviewed]] #{index} (mutmut)"
        function = entry["function"].strip()
        if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)?", function):
            raise InputError(
                f"{where}: function must be 'package.module:function' or 'package.module:Class.method', "
                f"got {function!r}"
            )
        entries.append(
            Equivalent(function, entry["diff"], entry["reason"].strip(), entry.get("removed"), index)
        )
    return GateConfig(float(min_score), tuple(entries))


def equivalent_matches(entry: Equivalent, mutant: Mutant) -> bool:
    if mutant.function != entry.function:
        return False
    removed, added = diff_sides(mutant.diff)
    if normalise_code("\n".join(added)) != normalise_code(entry.diff):
        return False
    return entry.removed is None or normalise_code("\n".join(removed)) == normalise_code(entry.removed)

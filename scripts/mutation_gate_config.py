"""The gate's part of mutation_config.toml: ``[gate]`` and the reviewed ``[[equivalent]]`` entries.

Nothing here imports mutmut, pytest or guard_lib.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mutation_common import MutantRecord, diff_sides, normalise_code
from mutation_io import InputError, read_mutation_config


@dataclass(frozen=True)
class Equivalent:
    function: str
    diff: str
    reason: str
    removed: str | None
    index: int

    def describe(self) -> str:
        return f"[[equivalent]] #{self.index} ({self.function}: {normalise_code(self.diff)!r})"


@dataclass(frozen=True)
class GateConfig:
    min_score: float
    equivalents: tuple[Equivalent, ...]


GATE_KEYS = {"min_score"}
EQUIVALENT_KEYS = {"function", "diff", "reason", "removed"}


def load_gate_config(path: Path) -> GateConfig:
    """Read ``[gate]`` and ``[[equivalent]]``; the harness's tables in the same file are not ours."""
    data = read_mutation_config(path)
    gate = data.get("gate", {})
    if not isinstance(gate, dict):
        raise InputError(f"{path}: [gate] must be a table")
    unknown = set(gate) - GATE_KEYS
    if unknown:
        raise InputError(f"{path}: unknown key(s) in [gate]: {sorted(unknown)}; known: {sorted(GATE_KEYS)}")
    min_score = gate.get("min_score", 100.0)
    if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or not 0 <= min_score <= 100:
        raise InputError(f"{path}: [gate] min_score must be a number from 0 to 100, got {min_score!r}")
    raw = data.get("equivalent", [])
    if not isinstance(raw, list):
        raise InputError(f"{path}: 'equivalent' must be an array of tables ([[equivalent]])")
    entries: list[Equivalent] = []
    for index, entry in enumerate(raw, start=1):
        where = f"{path}: [[equivalent]] #{index}"
        if not isinstance(entry, dict):
            raise InputError(f"{where} must be a table")
        unknown = set(entry) - EQUIVALENT_KEYS
        if unknown:
            raise InputError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(EQUIVALENT_KEYS)}")
        for key in ("function", "diff", "reason"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise InputError(f"{where}: '{key}' must be a non-empty string")
        removed = entry.get("removed")
        if removed is not None and (not isinstance(removed, str) or not removed.strip()):
            raise InputError(f"{where}: 'removed' must be a non-empty string when given")
        function = entry["function"].strip()
        if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)?", function):
            raise InputError(
                f"{where}: function must be 'package.module:function' or 'package.module:Class.method', "
                f"got {function!r}"
            )
        entries.append(Equivalent(function, entry["diff"], entry["reason"].strip(), removed, index))
    return GateConfig(float(min_score), tuple(entries))


def equivalent_matches(entry: Equivalent, mutant: MutantRecord) -> bool:
    if mutant.parsed.function != entry.function:
        return False
    removed, added = diff_sides(mutant.diff)
    if normalise_code("\n".join(added)) != normalise_code(entry.diff):
        return False
    return entry.removed is None or normalise_code("\n".join(removed)) == normalise_code(entry.removed)

"""Generation: what is set aside unrun (and where), what runs, and the line each mutant reports."""

from __future__ import annotations

from pathlib import Path

from mutation_sweep.generate import (
    ANNOTATION,
    ANNOTATION_IMPORT,
    SAME_CODE,
    TYPE_CHECKING,
    TYPE_PARAMETERS,
    Generated,
    generate,
)

SOURCE = '''\
"""A module."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import os

if TYPE_CHECKING:
    from pathlib import Path

T = TypeVar("T")
P = ParamSpec("P")
Pair = tuple[int, int]


class Box:
    size: int

    @property
    def area(self) -> int:
        return self.size * 2


def call(f: Callable[P, T]) -> T:
    try:
        return os.getpid()
    except OSError:
        return 0


"""a string that is no docstring"""
'''


def _generated(tmp_path: Path) -> Generated:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(SOURCE, encoding="utf-8")
    return generate(tmp_path, ["pkg/m.py"])


def test_what_only_type_checkers_read_is_set_aside_at_its_line(tmp_path: Path) -> None:
    out = _generated(tmp_path)
    aside = out.set_aside["pkg/m.py"]
    assert aside[5] == {ANNOTATION_IMPORT}  # Callable: annotations only
    assert aside[10] == {TYPE_CHECKING}
    assert aside[13] == {ANNOTATION_IMPORT}  # T = TypeVar("T")
    assert aside[14] == {ANNOTATION_IMPORT}  # P = ParamSpec("P")
    assert ANNOTATION_IMPORT in aside[15]  # Pair = tuple[int, int]
    assert aside[19] == {ANNOTATION}  # size: int declares, runs nothing
    assert TYPE_PARAMETERS in aside[15]
    assert aside[33] == {SAME_CODE}  # deleting a bare string compiles to the same code
    assert sum(out.skipped.values()) >= len(aside)


def test_what_runs_is_generated_with_the_line_it_reports(tmp_path: Path) -> None:
    out = _generated(tmp_path)
    by_line: dict[int, set[str]] = {}
    for m in out.mutants:
        by_line.setdefault(m.line, set()).add(m.operator)
    assert "delete-statement" in by_line[3]  # the future import
    assert "delete-statement" in by_line[8]  # import os: read at run time
    # a decorated definition reports its def line (executable_lines folds it into the decorator's)
    assert "delete-statement" in by_line[22]
    # a handler reports its own line, not the try's
    assert by_line[29] == {"remove-handler", "except-clause"}
    handler = next(m for m in out.mutants if m.operator == "remove-handler")
    assert (handler.original, handler.mutated, handler.scope) == ("OSError", "()", "call")
    widened = sorted(m.mutated for m in out.mutants if m.operator == "except-clause")
    assert widened == ["BaseException", "Exception"]
    assert not any(m.line in out.set_aside["pkg/m.py"] and m.line in (5, 13, 14) for m in out.mutants)


ORDERED = """\
class Cache:
    def reset(self, index: int, original: int) -> int:
        self._seen, self._token = self._token, None
        self.select(index)
        self.record(original)
        return index
"""


def test_operators_that_read_more_than_one_node_are_prepared_by_generation(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "o.py").write_text(ORDERED, encoding="utf-8")
    out = generate(tmp_path, ["pkg/o.py"])
    made = {(m.operator, m.scope, m.line, m.original, m.mutated) for m in out.mutants}
    scope = "Cache.reset"
    # a swap reports the line of its first statement, and the statements' own scope
    assert (
        "swap-statements",
        scope,
        4,
        "self.select(index)\n        self.record(original)",
        "self.record(original)\n        self.select(index)",
    ) in made
    assert ("swap-variable", scope, 6, "index", "original") in made
    assert ("swap-variable", scope, 4, "index", "original") in made
    assert (
        "keep-cache",
        scope,
        3,
        "self._seen, self._token = self._token, None",
        "self._seen = self._token",
    ) in made
    assert (
        "keep-cache",
        scope,
        3,
        "self._seen, self._token = self._token, None",
        "self._token = None",
    ) in made

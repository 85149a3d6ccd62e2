"""The catalogue's named edits: located in their scope (Python by ``ast``, Cython by indentation) and
applied, or refused with the entry and the file named; and the record each becomes."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from guard_mutation import config
from guard_mutation.config import CatalogueEntry
from guard_mutation.engines import EngineError
from guard_mutation.engines.edits import catalogue, scopes

FIXTURE = Path(__file__).resolve().parent / "fixture_project"
SOURCE = textwrap.dedent(
    """\
    def add(a, b):
        return a + b


    class Counter:
        def bump(self, step=1):
            self.count += step
            return self.count

        def reset(self):
            self.count = 0
            return self.count
    """
)
CYTHON = textwrap.dedent(
    """\
    cdef class Box:
        cdef int size

        cdef int grow(self, int n) except -1:
            with nogil:
                self.size += n
            return 0

    @cython.binding(True)
    def outside():
        return 1
    """
)


def entry(scope: str, file: str = "pkg/mod.py", **edit: str) -> CatalogueEntry:
    return CatalogueEntry("an-id", file, scope, "why", ("tests/t.py::test",), **edit)


def test_a_one_line_replace_matches_inside_a_line() -> None:
    mutated = catalogue.apply(entry("add", replace="a + b", by="a - b"), SOURCE)
    assert mutated == SOURCE.replace("return a + b", "return a - b")


def test_a_delete_takes_whole_lines_and_only_in_its_scope() -> None:
    mutated = catalogue.apply(entry("Counter.bump", delete="self.count += step"), SOURCE)
    assert "self.count += step" not in mutated
    assert mutated.count("return self.count") == 2


def test_a_deletion_that_empties_a_block_leaves_pass() -> None:
    source = "def f(x):\n    if x:\n        x.go()\n    return x\n"
    mutated = catalogue.apply(entry("f", delete="x.go()"), source)
    assert mutated == "def f(x):\n    if x:\n        pass\n    return x\n"


def test_a_text_of_several_lines_is_reindented_to_its_match() -> None:
    by = "self.count = 1\nreturn -1\n"
    mutated = catalogue.apply(
        entry("Counter.reset", replace="self.count = 0\nreturn self.count", by=by), SOURCE
    )
    assert "        self.count = 1\n        return -1\n" in mutated


@pytest.mark.parametrize(
    ("scope", "text", "says"),
    [
        ("Counter", "self.count", "is found 4 times"),
        ("add", "a * b", "is not found"),
        ("Nowhere", "a + b", "no such scope"),
    ],
)
def test_an_edit_not_found_exactly_once_names_the_entry_and_file(scope: str, text: str, says: str) -> None:
    with pytest.raises(EngineError, match=r"'an-id' \(pkg/mod.py.*" + says):
        catalogue.apply(entry(scope, replace=text, by="x"), SOURCE)


def test_cython_scopes_are_read_by_indentation() -> None:
    assert scopes.cython_spans(CYTHON, "Box.grow") == [(3, 6)]
    assert scopes.cython_spans(CYTHON, "outside") == [(8, 10)]  # its decorator included
    mutated = catalogue.apply(entry("Box.grow", file="pkg/core.pyx", delete="self.size += n"), CYTHON)
    assert "self.size += n" not in mutated
    assert (
        "with nogil:\n        return 0" in mutated
    )  # no `pass` put in: emptying a block is Cython's to refuse


def test_each_entry_becomes_a_critical_mutant_record() -> None:
    cfg = config.read(FIXTURE / "mutation_config.toml")
    made = {e.id: e.mutant for e in catalogue.edits(cfg, FIXTURE)}
    assert list(made) == ["add-minus", "clamp-low-deleted", "bump-forgets-count"]
    clamp = made["clamp-low-deleted"]
    assert (clamp.engine, clamp.operator, clamp.function) == ("edits", "catalogue", "counterpkg.core:clamp")
    assert (clamp.line, clamp.end_line) == (11, 12)
    assert clamp.killed_by == ("tests/check_core.py::test_clamp_below",)
    assert clamp.changed_lines() == ("if value < low:", "return low")
    assert clamp.diff.startswith("--- a/counterpkg/core.py\n+++ b/counterpkg/core.py\n")


def test_an_entry_whose_file_is_not_of_the_project_is_refused() -> None:
    cfg = config.read(FIXTURE / "mutation_config.toml")
    outside = replace(cfg, catalogue=(replace(cfg.catalogue[0], file="../outside.py"),))
    with pytest.raises(EngineError, match=r"'add-minus': \.\./outside\.py is not a \.py or \.pyx file"):
        catalogue.edits(outside, FIXTURE)

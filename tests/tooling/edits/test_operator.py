"""The generated operators: ``delete-statement`` on Python (outside function bodies) and on the real
Cython text, what it makes and what it leaves alone (counted), its stable ids, and the registry."""

from __future__ import annotations

import re
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from guard_mutation import config
from guard_mutation.engines import EngineError
from guard_mutation.engines.edits import operators
from guard_mutation.engines.edits.operators.delete_statement import DECLARATIONS, OPERATOR, REFUSED

FIXTURE = Path(__file__).resolve().parent / "fixture_project"
PYTHON = textwrap.dedent(
    '''\
    """The module's docstring."""

    from __future__ import annotations

    import logging
    from typing import TYPE_CHECKING, TypeVar

    if TYPE_CHECKING:
        from collections.abc import Callable

    log = logging.getLogger("pkg")
    T = TypeVar("T")
    NAMES = (
        "a",
        "b",
    )


    def helper(x: T) -> T:
        log.info("helper")
        return x


    class Thing:
        """A thing."""

        __slots__ = ("value",)
        value: int
        kind = "thing"; other = 1

        def method(self, f: Callable[[], None]) -> None:
            self.value = 1
    '''
)
CYTHON = textwrap.dedent(
    """\
    cimport cython
    import sys

    cdef extern from "Python.h":
        int PyThing(object o)

    @cython.final
    cdef class Box:
        \"\"\"A box.\"\"\"
        cdef int size
        __match_args__ = ("size",)

        cdef int grow(self, int n) except -1:
            cdef int before = self.size
            with nogil:
                self.size += n
            if n:
                sys.audit("grew",
                          n)
            else: pass
            pass  # nothing
            return 0
    """
)


def _deleted(found: operators.Found) -> dict[str, str]:
    """Each edit's scope by the text it made ``pass``."""
    return {" ".join(e.mutant.changed_lines()[:-1]): e.scope for e in found.edits}


def test_python_statements_outside_function_bodies_are_deleted() -> None:
    found = OPERATOR.find("pkg/mod.py", PYTHON)
    assert _deleted(found) == {
        "import logging": "<module>",
        "from typing import TYPE_CHECKING, TypeVar": "<module>",
        'log = logging.getLogger("pkg")': "<module>",
        'NAMES = ( "a", "b", )': "<module>",  # a statement of several lines becomes one pass
        '__slots__ = ("value",)': "Thing",
    }
    names = next(e for e in found.edits if e.mutant.changed_lines()[0] == "NAMES = (")
    assert (names.mutant.line, names.mutant.end_line) == (13, 16)
    assert "    pass\n" not in names.mutated
    assert "\npass\n\n\ndef helper" in names.mutated
    compile(names.mutated, "mod.py", "exec")


def test_python_declarations_and_shared_lines_are_counted_but_left_alone() -> None:
    found = OPERATOR.find("pkg/mod.py", PYTHON)
    # __future__, TYPE_CHECKING's import, the TypeVar only annotations use, the bare annotation
    assert found.skipped == {DECLARATIONS: 4, REFUSED: 2}  # `kind = ...; other = 1`: two statements, one line
    assert found.statements == 5 + 4 + 2  # docstrings, headers and function bodies are not counted


def test_cython_statements_are_deleted_where_python_cannot_read_them() -> None:
    found = OPERATOR.find("pkg/core.pyx", CYTHON)
    assert _deleted(found) == {
        "import sys": "<module>",
        '__match_args__ = ("size",)': "Box",
        "self.size += n": "Box.grow",  # inside `with nogil:`
        'sys.audit("grew", n)': "Box.grow",
        "return 0": "Box.grow",
    }
    # cimport, the extern block's line, the decorator, both cdef lines; `else: pass` cannot be made pass alone
    assert found.skipped == {DECLARATIONS: 5, REFUSED: 1}


def test_an_id_names_what_is_deleted_not_where() -> None:
    moved = PYTHON.replace("import logging\n", "import logging\nimport os\n\n\n")
    before = {e.mutant.changed_lines()[0]: e.id for e in OPERATOR.find("pkg/mod.py", PYTHON).edits}
    after = {e.mutant.changed_lines()[0]: e.id for e in OPERATOR.find("pkg/mod.py", moved).edits}
    assert {text: after[text] for text in before} == before
    assert all(re.fullmatch(r"[A-Za-z0-9._-]{1,80}", i) for i in after.values())
    twice = OPERATOR.find("pkg/mod.py", "import os\nimport os\n").edits
    assert len({e.id for e in twice}) == 2


def test_the_registry_runs_the_configured_operators_over_the_package() -> None:
    cfg = config.read(FIXTURE / "mutation_config.toml")
    made, notes = operators.generate(cfg, FIXTURE, [])
    assert {(e.mutant.function, e.mutant.operator, e.mutant.killed_by) for e in made} == {
        ("counterpkg:<module>", "delete-statement", ()),  # the package's __init__.py
        ("counterpkg.core:Counter", "delete-statement", ()),
    }
    assert notes == ["delete-statement: the 2 .py files 3 of 4 statements mutated (1 declarations skipped)"]
    excluded = replace(cfg, edits=replace(cfg.edits, exclude=("counterpkg/__init__.py",)))
    assert {e.file for e in operators.generate(excluded, FIXTURE, [])[0]} == {"counterpkg/core.py"}


def test_an_edit_the_catalogue_makes_is_left_to_it_and_an_unknown_operator_refused() -> None:
    cfg = config.read(FIXTURE / "mutation_config.toml")
    made, _ = operators.generate(cfg, FIXTURE, [])
    again, notes = operators.generate(cfg, FIXTURE, made[:1])
    assert [e.id for e in again] == [e.id for e in made[1:]]
    assert "1 made by the catalogue" in notes[0]
    with pytest.raises(EngineError, match="no operator 'swap-everything'"):
        operators.generate(
            replace(cfg, edits=replace(cfg.edits, operators=("swap-everything",))), FIXTURE, []
        )

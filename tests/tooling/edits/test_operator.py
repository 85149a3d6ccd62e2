"""The generated operators: ``delete-statement`` on Python (where mutmut makes no mutant) and on the real
Cython text, what it makes and what it leaves alone (counted, by reason and by narrowing rule), its
stable ids, and the registry."""

from __future__ import annotations

import re
import runpy
import shutil
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from guard_mutation import config
from guard_mutation.engines import EngineError
from guard_mutation.engines.edits import operators
from guard_mutation.engines.edits.operators.delete_statement import (
    DECLARATIONS,
    LAST_RETURN,
    MUTMUT,
    OPERATOR,
    REFUSED,
)
from guard_mutation.engines.edits.operators.negate_condition import OPERATOR as NEGATE
from guard_mutation.engines.edits.operators.negate_condition import SPANS

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


def test_python_statements_mutmut_makes_no_mutant_of_are_deleted() -> None:
    found = OPERATOR.find("pkg/mod.py", PYTHON)
    assert _deleted(found) == {
        "return x": "helper",  # mutmut mutates the string above it and `self.value = 1`, not this
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
    assert found.skipped == {DECLARATIONS: 4, REFUSED: 2, MUTMUT: 2}  # `kind = ...; other = 1`: one line
    assert found.statements == 6 + 4 + 2 + 2  # docstrings and headers are not counted


FUNCTIONS = textwrap.dedent(
    """\
    def ends(flag, items):
        if flag:
            items.clear()
            return None
        for item in items:
            if item:
                return
        touch(items)
        if items:
            return None
        else:
            try:
                items.pop()
            except IndexError:
                return


    def goes_on(items):
        try:
            return None
        except IndexError:
            return None
        else:
            return None
        finally:
            items.clear()


    def tried(items):
        try:
            items.pop()
            return None
        except IndexError:
            return None
        else:
            items.clear()


    def zero(items):
        touch(items)
        return 0


    def loops(items):
        for item in items:
            touch(
                item,
            )
            return None
    """
)


def test_an_import_annotations_read_at_import_is_deleted_without_postponed_annotations() -> None:
    source = "import os\n\n\ndef f(path: os.PathLike) -> None:\n    touch(path)\n"
    assert "import os" in _deleted(OPERATOR.find("pkg/mod.py", source, set()))
    postponed = "from __future__ import annotations\n\n" + source
    assert "import os" not in _deleted(OPERATOR.find("pkg/mod.py", postponed, set()))


def test_a_function_body_is_deleted_where_mutmut_makes_no_mutant_on_the_line() -> None:
    def lines(found: operators.Found) -> set[int]:
        return {e.mutant.line for e in found.edits}

    everything = OPERATOR.find("pkg/mod.py", FUNCTIONS, set())
    left = OPERATOR.find("pkg/mod.py", FUNCTIONS, {3, 8})
    assert lines(everything) - lines(left) == {3, 8}
    assert left.skipped[MUTMUT] == 2
    # a statement of several lines is mutmut's where mutmut mutates its first line, not another
    assert 46 in lines(OPERATOR.find("pkg/mod.py", FUNCTIONS, {47, 48}))
    assert 46 not in lines(OPERATOR.find("pkg/mod.py", FUNCTIONS, {46}))
    # by default, mutmut's own generation says where it mutates: here the string and `self.value = 1`
    assert lines(OPERATOR.find("pkg/mod.py", PYTHON)) & {20, 32} == set()


def test_rule_last_return_keeps_a_return_the_function_would_not_fall_off_to() -> None:
    found = OPERATOR.find("pkg/mod.py", FUNCTIONS, set())
    lines = sorted(e.mutant.line for e in found.edits if e.mutant.changed_lines()[0].startswith("return"))
    # removed: the return of the last if's body, the bare one in the last handler of its else, the one
    # of a last handler;
    # kept: one before more code, one in a loop, each beside an else or a finally, one of a value, and
    # the last of a loop's body, last in its function: without it the loop goes round again
    assert found.skipped[LAST_RETURN] == 3
    assert lines == [4, 7, 20, 22, 24, 32, 41, 49]


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


def test_the_registry_runs_the_configured_operators_over_the_package(tmp_path: Path) -> None:
    project = Path(shutil.copytree(FIXTURE, tmp_path / "project"))
    (project / "pyproject.toml").unlink()
    cfg = config.read(project / "mutation_config.toml")
    made, notes = operators.generate(cfg, project, [])
    # no [tool.mutmut]: mutmut mutates nothing here, so every statement is deleted, functions' too
    assert {e.mutant.function for e in made} == {
        "counterpkg:<module>",  # the package's __init__.py
        "counterpkg.core:Counter",
        *(
            f"counterpkg.core:{f}"
            for f in ("add", "clamp", "Counter.__init__", "Counter.bump", "Counter.reset")
        ),
    }
    assert {e.mutant.operator for e in made} == {"delete-statement"}
    assert notes == ["delete-statement: the 2 .py files 11 of 12 statements mutated (1 declarations skipped)"]
    excluded = replace(cfg, edits=replace(cfg.edits, exclude=("counterpkg/__init__.py",)))
    assert {e.file for e in operators.generate(excluded, project, [])[0]} == {"counterpkg/core.py"}


@pytest.mark.parametrize(
    ("table", "left_to_mutmut"),
    [
        ('source_paths = ["counterpkg"]', True),
        ('source_paths = ["counterpkg"]\nonly_mutate = ["counterpkg/core.py"]', True),
        ('source_paths = ["counterpkg"]\ndo_not_mutate = ["counterpkg/core.py"]', False),
        ('source_paths = ["elsewhere"]', False),
        ('source_paths = ["counter"]', False),  # a folder's name, not a prefix of one
        ('only_mutate = ["counterpkg/*"]', False),  # mutmut's default source_paths: src
    ],
)
def test_the_functions_mutmut_is_configured_to_mutate_are_left_to_it(
    tmp_path: Path, table: str, left_to_mutmut: bool
) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project)
    (project / "pyproject.toml").write_text(f"[tool.mutmut]\n{table}\n", encoding="utf-8")
    made, notes = operators.generate(config.read(project / "mutation_config.toml"), project, [])
    in_functions = [
        e for e in made if e.mutant.function not in ("counterpkg:<module>", "counterpkg.core:Counter")
    ]
    lines = {e.mutant.line for e in in_functions}
    if left_to_mutmut:
        assert "mutated by mutmut" in notes[0]
        assert lines
        assert 7 not in lines  # `a + b`: mutmut swaps the operator
    else:
        assert len(in_functions) == 8


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


NEGATED = textwrap.dedent(
    """\
    def f(x, y):
        if x:
            return 1
        elif y.ok(1):  # a reason
            return 2
        while x and (
            y
        ):
            x -= 1
        if x: return 3
        return 0


    if TYPE_CHECKING:
        import os
    """
)


def test_negate_condition_turns_a_test_to_its_opposite_where_mutmut_makes_no_mutant() -> None:
    found = NEGATE.find("pkg/mod.py", NEGATED, set())
    made = {e.mutant.line: e.mutated.splitlines()[e.mutant.line - 1] for e in found.edits}
    assert made == {2: "    if not (x):", 4: "    elif not (y.ok(1)):  # a reason"}
    assert all(compile(e.mutated, "mod.py", "exec") for e in found.edits)
    # a test of several lines, a body on the header's line; TYPE_CHECKING declares
    assert found.skipped == {SPANS: 2, DECLARATIONS: 1}
    assert found.statements == 5
    left = NEGATE.find("pkg/mod.py", NEGATED, {4})
    assert [e.mutant.line for e in left.edits] == [2]
    assert left.skipped[MUTMUT] == 1
    assert {e.id.split(".")[0] for e in found.edits} == {"negate"}


def test_negate_condition_reaches_every_test_of_the_real_cython_text() -> None:
    source = CYTHON.replace("        if n:\n", "        if n > 0 and self.size:\n")
    found = NEGATE.find("pkg/core.pyx", source)
    assert [e.mutated.splitlines()[e.mutant.line - 1] for e in found.edits] == [
        "        if not (n > 0 and self.size):"
    ]
    assert found.edits[0].scope == "Box.grow"


NESTED = textwrap.dedent(
    """\
    import typing


    class Klass:
        def method(self, x):
            try:
                pass
            finally:
                if x:
                    x.close()


    if typing.TYPE_CHECKING:
        if sys.version_info >= (3, 11):
            import os
    """
)


def test_negate_condition_names_the_scope_walks_every_block_and_leaves_what_declares() -> None:
    found = NEGATE.find("pkg/mod.py", NESTED, set())
    assert [(e.scope, e.mutant.line) for e in found.edits] == [("Klass.method", 9)]  # in a finally
    assert found.skipped == {DECLARATIONS: 1}  # typing.TYPE_CHECKING: nothing under it is looked at
    assert found.statements == 2
    # a test of several lines on a line mutmut mutates is mutmut's
    assert NEGATE.find("pkg/mod.py", NEGATED, {6}).skipped == {SPANS: 1, DECLARATIONS: 1, MUTMUT: 1}


def test_negate_condition_keeps_the_files_newlines_and_reads_cython_clauses_not_compile_time_ones() -> None:
    crlf = NEGATE.find("pkg/mod.py", NEGATED.replace("\n", "\r\n"), set())
    assert crlf.edits[0].mutated.splitlines(keepends=True)[1] == "    if not (x):\r\n"
    source = CYTHON.replace(
        "        else: pass\n", "        elif n < 0:\n            pass\n        IF X:\n            pass\n"
    )
    found = NEGATE.find("pkg/core.pyx", source)
    assert [e.mutated.splitlines()[e.mutant.line - 1].strip() for e in found.edits] == [
        "if not (n):",
        "elif not (n < 0):",
    ]
    assert found.statements == 2


def test_an_id_is_the_files_and_survives_respacing() -> None:
    one = {e.id for e in NEGATE.find("a/mod.py", NEGATED, set()).edits}
    assert one.isdisjoint({e.id for e in NEGATE.find("b/mod.py", NEGATED, set()).edits})
    respaced = NEGATED.replace("    if x:\n", "    if  x:\n")
    assert {e.id for e in NEGATE.find("a/mod.py", respaced, set()).edits} == one


def test_lines_mutated_counts_headers_holding_an_expression_to_their_body() -> None:
    script = runpy.run_path(str(Path(__file__).resolve().parents[3] / "benchmarks" / "lines_mutated.py"))
    _, python = script["_python_statements"]("def f(x):\n    while (\n        x\n    ):\n        x -= 1\n")
    assert python == {2: 4}
    _, cython = script["_cython_statements"](
        "def f(x):\n    with gil:\n        pass\n    with nogil:\n        pass\n"
        "    with lock:\n        pass\n"
    )
    assert cython == {6: 6}

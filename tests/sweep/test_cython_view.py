"""The Python view of a Cython source, and the sweep's mutants of the compiled core made through it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from mutation_sweep.cython_view import view
from mutation_sweep.generate import CYTHON_ONLY, generate
from mutation_sweep.operators import delete_statement, remove_handler
from mutation_sweep.runners.compiled_builds import _errors, _owner

ROOT = Path(__file__).resolve().parents[2]

CYTHON = '''\
cimport cython
from libc.string cimport strcmp

ctypedef int (*_get_f)(int *) noexcept nogil

cdef extern from *:
    """
    static int twice(int x) { return 2 * x; }
    """
    int twice(int x)

cdef int _LIMIT = 7


cdef class Box:
    cdef object held
    cdef public int size

    def grow(self, int by, *, str why="none"):
        cdef int before = self.size
        cdef int after
        after = before + by
        self.size = after
        return <object>self.held if after > _LIMIT else None


cdef inline bint small(Box box, int *out) noexcept:
    out[0] = box.size
    with nogil:
        out[0] = twice(out[0])
    return fill(&out[0], <int>box.size) < 3
'''


def test_the_view_parses_and_keeps_every_line_where_it_was() -> None:
    seen = view(CYTHON)
    ast.parse(seen.text)
    assert len(seen.text.splitlines()) == len(CYTHON.splitlines())
    lines = seen.text.splitlines()
    # declarations with a value keep it, shifted left by the type they lose
    assert lines[11] == "_LIMIT = 7"
    assert seen.shift[12] == len("cdef int ")
    # a declaration alone becomes an annotation; a signature, Python's, with its C types as annotations
    assert lines[15] == "    held: object"
    assert lines[18] == '    def grow(self, by: int, *, why: str="none"):'
    assert lines[26] == "def small(box: Box, out: int_p):"
    # casts and address-of are blanked to their width, so later columns stay where they were
    assert lines[23] == "        return         self.held if after > _LIMIT else None"
    assert lines[30] == "    return fill( out[0],      box.size) < 3"
    # Cython's own statements are gone, and nothing the view rewrote may be mutated
    assert lines[0] == lines[1] == lines[3] == ""
    assert all(not lines[k] for k in range(5, 10))
    assert {1, 2, 4, 6, 7, 8, 9, 10, 15, 16, 19, 21, 27, 29, 30} <= seen.masked
    assert 22 not in seen.masked


def test_a_declaration_alone_followed_by_a_comment_becomes_an_annotation() -> None:
    seen = view("cdef class Box:\n    cdef object held  # a weak reference\n")
    assert seen.text.splitlines()[1] == "    held: object"


@pytest.mark.parametrize(
    ("span", "mapped"),
    [
        ((22, 16, 22, 25), (22, 16, 22, 25)),  # "before + by": as written
        ((20, 17, 20, 26), (20, 26, 20, 35)),  # "self.size", after a lost "cdef int "
    ],
)
def test_a_span_of_code_maps_to_the_same_text_in_the_source(
    span: tuple[int, int, int, int], mapped: tuple[int, int, int, int]
) -> None:
    seen = view(CYTHON)
    assert seen.source_span(CYTHON, span) == mapped


@pytest.mark.parametrize(
    "span",
    [
        (16, 4, 16, 16),  # a declaration alone
        (19, 4, 19, 20),  # a signature
        (24, 15, 24, 32),  # over a blanked cast: the edit would drop it
        (30, 8, 30, 14),  # inside a nogil block
        (20, 8, 20, 29),  # from the start of a statement that lost its declaration
    ],
)
def test_a_span_over_what_the_view_rewrote_maps_to_nothing(span: tuple[int, int, int, int]) -> None:
    assert view(CYTHON).source_span(CYTHON, span) is None


def _write(tmp_path: Path, source: str) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "core.pyx").write_text(source, encoding="utf-8")
    return tmp_path


def test_a_mutant_of_a_cython_source_is_its_edit_in_the_source(tmp_path: Path) -> None:
    generated = generate(_write(tmp_path, CYTHON), ["pkg/core.pyx"])
    by_change = {(m.original, m.mutated): m for m in generated.mutants}
    comparison = by_change[("after > _LIMIT", "after >= _LIMIT")]
    mutated = generated.sources[comparison.id]
    # the cast and the declarations are still there, only the comparison changed
    assert mutated == CYTHON.replace("if after > _LIMIT", "if after >= _LIMIT")
    assert comparison.scope == "Box.grow"
    deleted = by_change[("after = before + by", "pass")]
    assert generated.sources[deleted.id] == CYTHON.replace("after = before + by", "pass")


def test_no_mutant_touches_a_line_the_view_rewrote(tmp_path: Path) -> None:
    generated = generate(_write(tmp_path, CYTHON), ["pkg/core.pyx"])
    assert generated.skipped[CYTHON_ONLY] > 0
    masked = view(CYTHON).masked
    original = CYTHON.splitlines()
    for mutant in generated.mutants:
        mutated = generated.sources[mutant.id].splitlines()
        assert len(mutated) == len(original)
        assert [mutated[n - 1] for n in sorted(masked)] == [original[n - 1] for n in sorted(masked)], mutant


def test_the_compiled_core_reads_through_the_view() -> None:
    """The core as it is: a Cython construct the view cannot read would fail here, not in a night's run."""
    source = (ROOT / "guard_lib" / "_core.pyx").read_text(encoding="utf-8")
    ast.parse(view(source).text)
    generated = generate(ROOT, ["guard_lib/_core.pyx"], operators=(delete_statement,))
    assert len(generated.mutants) > 200
    for mutant in generated.mutants[:50]:
        assert generated.sources[mutant.id] != source


WOVEN = """\
def f(int x):
    if _harness_mutant_ == 3:
        y = x +
    elif _harness_mutant_ == 4:
        if x:
            y = 2
    else:
        y = x
    return y
"""


@pytest.mark.parametrize(("line", "number"), [(3, 3), (6, 4), (8, None), (9, None)])
def test_a_compiler_error_is_blamed_on_the_branch_that_holds_its_line(line: int, number: int | None) -> None:
    assert _owner(WOVEN.splitlines(), line) == number


def test_cython_errors_are_read_with_their_lines() -> None:
    output = (
        "Error compiling Cython file:\n...\nguard_lib/_core.pyx:12:8: Unreachable code\n"
        "other/x.pyx:3:1: not ours\nguard_lib/_core.pyx:40:4: Empty declarator\n"
    )
    assert _errors(output, "guard_lib/_core.pyx") == [(12, "Unreachable code"), (40, "Empty declarator")]


HANDLER = """\
def f():
    try:
        g()
    except ValueError:
        return 1
"""


def test_a_removed_handler_in_cython_catches_nothing_as_in_python(tmp_path: Path) -> None:
    """Cython compiles a literal ``except ():`` as a bare ``except:``; ``except tuple():`` catches nothing."""
    generated = generate(_write(tmp_path, HANDLER), ["pkg/core.pyx"], operators=(remove_handler,))
    [mutant] = generated.mutants
    assert generated.sources[mutant.id] == HANDLER.replace("except ValueError:", "except tuple():")

"""Trivial compiler equivalence: what the compiler turns back into the original is proven before any test
runs; what it does not is left to the tests. Python by its code objects, the core by gcc's object code."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from guard_mutation.engines.edits import _proven, equivalence
from guard_mutation.engines.edits.edit import Edit, make
from guard_mutation.engines.edits.operators.delete_statement import OPERATOR
from guard_mutation.model import EQUIVALENT

PYTHON = 'def f(x):\n    y = x\n    "a note"\n    return y\n'
CORE = textwrap.dedent(
    """\
    cdef int _checked(int x) except -1:
        if x < 0:
            raise ValueError("negative")
        return 0

    def use(int x):
        _checked(x)
        return x + 1
    """
)


def _by_text(edits: list[Edit]) -> dict[str, Edit]:
    return {e.mutant.changed_lines()[0].strip(): e for e in edits}


def test_a_python_mutant_compiling_to_the_same_code_is_proven_and_another_is_not() -> None:
    note = make("pkg/m.py", "f", (PYTHON, PYTHON.replace('"a note"', "pass")), "note", "delete-statement")
    value = make(
        "pkg/m.py", "f", (PYTHON, PYTHON.replace("return y", "return x")), "value", "delete-statement"
    )
    moved = make("pkg/m.py", "f", (PYTHON, "\n\n" + PYTHON), "moved", "delete-statement")
    assert equivalence.python_same(note)
    assert equivalence.python_same(moved)  # positions aside
    assert not equivalence.python_same(value)
    reads = "def g():\n    return a\n"
    other = make("pkg/m.py", "g", (reads, reads.replace("a", "b")), "other", "x")
    assert not equivalence.python_same(other)  # the same instructions, reading another name
    zero = PYTHON.replace("y = x", "y = x + 0.0")
    sign = make("pkg/m.py", "f", (zero, zero.replace("0.0", "-0.0")), "sign", "x")
    assert not equivalence.python_same(sign)  # equal constants, not the same one
    broken = make("pkg/m.py", "f", (PYTHON, PYTHON.replace("return y", "return (")), "broken", "x")
    assert not equivalence.python_same(broken)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_a_core_mutant_the_compiler_folds_away_is_proven_and_one_it_keeps_is_not(tmp_path: Path) -> None:
    edits = _by_text(OPERATOR.find("pkg/core.pyx", CORE).edits)
    assert set(edits) == {"return 0", 'raise ValueError("negative")', "_checked(x)", "return x + 1"}
    refused = make("pkg/core.pyx", "use", (CORE, CORE.replace("_checked(x)", "_checked(x, x)")), "r", "x")
    proven = equivalence.proven([*edits.values(), refused], tmp_path, 2)  # Cython refuses one: left out
    # a cdef int function that falls off its end returns 0 as it is
    assert set(proven) == {edits["return 0"].id}
    assert "__pyx_f_3pkg_4core__checked" in proven[edits["return 0"].id]


def test_without_gcc_a_core_mutant_is_run_not_proven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edits = OPERATOR.find("pkg/core.pyx", CORE).edits
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert equivalence.proven(edits, tmp_path, 1) == {}
    assert not list(tmp_path.iterdir())  # nothing translated


def test_a_mutant_whose_switch_no_function_holds_is_not_proven(tmp_path: Path) -> None:
    # Cython drops code it can tell is unreachable, a mutant's switch with it: nothing is compared then
    c = ["static int f(int x) {\n", "  return x;\n", "}\n"]
    edit = make("pkg/core.pyx", "f", (CORE, CORE.replace("return 0", "pass")), "gone", "delete-statement")
    assert equivalence._Translated(c, {"gone": 7}, tmp_path).proof(edit) is None


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_a_mutant_whose_builds_both_fail_is_not_proven(tmp_path: Path) -> None:
    c = ["static int f(int x) {\n", "  return _harness_on_(7) + ;\n", "}\n"]
    edit = make("pkg/core.pyx", "f", (CORE, CORE.replace("return 0", "pass")), "broken", "delete-statement")
    assert equivalence._Translated(c, {"broken": 7}, tmp_path).proof(edit) is None


def test_a_proven_mutant_is_recorded_equivalent_with_its_proof_and_a_catalogue_entry_never_is() -> None:
    generated = make("pkg/m.py", "f", (PYTHON, PYTHON.replace('"a note"', "pass")), "a", "delete-statement")
    named = make(
        "pkg/m.py", "f", (PYTHON, PYTHON.replace('"a note"', "pass")), "b", "catalogue", killed_by=("t::x",)
    )
    outcomes, note = _proven([generated, named], 1)
    assert set(outcomes) == {"a"}
    assert outcomes["a"].verdict == EQUIVALENT
    assert outcomes["a"].detail == equivalence.PYTHON_PROOF
    assert note.startswith("compiler equivalence: delete-statement on python 1 of 1 proven")

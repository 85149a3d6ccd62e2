"""Which compiled mutants the woven build may hold: a scope declaration's edit is built alone; only an
error of Cython's refuses one."""

from __future__ import annotations

import pytest
from mutation_sweep.runners import compiled_builds
from mutation_sweep.runners.compiled_builds import _declares_scope
from mutation_sweep.work_item import Mutant


@pytest.mark.parametrize(
    ("original", "alone"),
    [
        ("global _seen_version, _seen_default", True),
        ("nonlocal count", True),
        ("if weak:\n    global cache\n    cache = None", True),
        ("_seen_version = version", False),
        ("globals_seen = 1", False),
    ],
)
def test_an_edit_of_a_scope_declaration_is_built_alone(original: str, alone: bool) -> None:
    # Behind a switch the declaration would still hold for the whole function: the edit would not run.
    mutant = Mutant("guard_lib/_core.pyx", "_default_runtime", "delete-statement", original, "pass", 1, 1)
    assert _declares_scope(mutant) is alone


CYTHON_OUTPUT = """\
warning: guard_lib/_core.pyx:3:8: Unreachable code

Error compiling Cython file:
------------------------------------------------------------
...
cdef int g():
    y = undefined_name_q
        ^
------------------------------------------------------------
guard_lib/_core.pyx:6:8: undeclared name not builtin: undefined_name_q
"""


def test_only_errors_refuse_a_mutant_never_warnings() -> None:
    # A mutant whose branch only draws a warning (code after a return) builds, and is judged.
    assert compiled_builds._errors(CYTHON_OUTPUT, "guard_lib/_core.pyx") == [
        (6, "undeclared name not builtin: undefined_name_q")
    ]

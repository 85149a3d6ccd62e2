"""Verdicts reused from an earlier run while nothing they depend on has changed.

A verdict depends on the mutant (its id: file, scope, operator and texts), the package's code it was judged
against (every file the sweep mutates, whole: a change anywhere in it may decide whether a test still tells
the mutant apart), the tests it ran and their code (with the helpers beside them: conftest, support
modules), how they run (pytest's configuration, the build script, the versions installed:
``mutation_environment``), the interpreter and the implementation under test; code as its tokens, so
comments and spacing count for nothing. Each result carries the digest of all of those (``depends``); a
later run takes an earlier verdict only where the digest is the same, so a changed test, a changed line of
the package or another Python judges the mutant again.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from mutation_changes import code_of, digest, text_at
from mutation_environment import digest_of

from .generate import core_built, is_cython
from .select_tests import SUITE, TestMap, tests_of
from .work_item import INVALID, Mutant, Result

REUSABLE = frozenset({"killed", "survived", "timeout"})


def _text(root: Path, rel: str) -> str:
    """The file's code: a change to its comments or spacing changes no verdict."""
    path = root / rel
    return code_of(path.read_text(encoding="utf-8")) if path.is_file() else ""


def code_digests(root: Path, files: Sequence[str], commit: str | None = None) -> dict[str, str]:
    """Each file's digest, of its name and its code: in the working tree, or as ``commit`` holds it."""
    if commit is None:
        return {f: digest([f, _text(root, f)]) for f in files}
    return {f: digest([f, code_of(text_at(root, commit, f))]) for f in files}


def helpers_of(suite: Sequence[str]) -> list[str]:
    """The files of the suite that are no test module: conftest, support modules."""
    return [f for f in suite if not Path(f).name.startswith("test_")]


def suite_files(root: Path, suite: Sequence[str]) -> list[str]:
    """The Python files of the suite's paths (its pytest arguments that name a file or folder)."""
    found: set[str] = set()
    for entry in suite:
        path = root / entry
        if path.is_file():
            found.add(entry)
        elif path.is_dir():
            found.update(p.relative_to(root).as_posix() for p in path.rglob("*.py"))
    return sorted(found)


def digests(
    mutants: Sequence[Mutant], mapping: TestMap, root: Path, files: Sequence[str], suite: Sequence[str]
) -> dict[str, str]:
    """Each mutant's ``depends`` digest, by id."""
    every_test = suite_files(root, suite)
    helpers = helpers_of(every_test)
    code = code_digests(root, [*files, *every_test])
    how = digest_of(root, suite)
    base = digest([sys.version, how, *suite, *(code[f] for f in files), *(code[f] for f in helpers)])
    # what runs at import is judged on the core too, where it is built (jobs.make: then_compiled)
    on_core = "python, then the built core" if core_built(root, files) else "python, no core built"
    out: dict[str, str] = {}
    for m in mutants:
        compiled = is_cython(m.file)
        tests = tests_of(m, mapping, root, files)
        # A compiled mutant, one at import or a definition's header also runs the whole suite.
        whole = compiled or m.definition or m.at_import or tests == (SUITE,)
        # the tests under their own tracer run after the mutant's own: their code counts too
        ran = every_test if whole else sorted({t.split("::")[0] for t in (*tests, *mapping.traced)})
        implementation = "compiled" if compiled else on_core if m.at_import else "python"
        # the order the tests run in (quickest first) is no part of what the verdict depends on
        out[m.id] = digest(
            [base, m.id, implementation, *sorted(tests), *(code.get(f, digest([f, ""])) for f in ran)]
        )
    return out


def split(
    mutants: Sequence[Mutant], depends: dict[str, str], earlier: Iterable[Result]
) -> tuple[list[Result], list[Mutant]]:
    """The earlier verdicts that still hold, and the mutants to judge again."""
    held = {r.mutant.id: r for r in earlier if r.verdict in REUSABLE and r.depends}
    kept: list[Result] = []
    again: list[Mutant] = []
    for m in mutants:
        before = held.get(m.id)
        if before is not None and before.depends == depends[m.id]:
            kept.append(replace(before, mutant=m))  # where it is now: blank lines above may have moved it
        else:
            again.append(m)
    return kept, again


def stamped(results: Iterable[Result], depends: dict[str, str]) -> list[Result]:
    """``results`` with what each verdict depended on; an invalid mutant's verdict is Cython's, not reused."""
    return [r if r.verdict == INVALID else replace(r, depends=depends.get(r.mutant.id, "")) for r in results]

"""The code of one test, apart from the rest of its file: what a change to a test, and a verdict that
test gave, are compared by.

A test function pytest collects is its decorators, header and body; everything else in its file
(imports, fixtures, helpers, other classes) is the file's shared code, with the whole code of any test
file it imports from, which every test in it depends on. A change to the shared code changes every test
of the file; a change inside one test changes that test alone. A test that is no such function (a
state machine's generated ``TestCase``, a method a ``Test*`` class inherits) depends on its whole file.
Whether a test ran in the map's run is part of it too: a test skipped then and run now (or the other way)
is a changed test. Code is compared as tokens (``code_of``), so comments and spacing count for nothing.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from mutation_changes import code_of, digest, function_of, imported_tests, shared_code, spans_of_tests


def normal(test: str) -> str:
    """A node id without its parameters: how the tests are named here."""
    file, name = function_of(test)
    return f"{file}::{name.replace('.', '::')}" if name else file


def _split(root: Path, file: str, text: str) -> tuple[str, str, dict[str, str]]:
    """The file's whole code, its shared code (with the test files it imports from), and each test's own."""
    whole = code_of(text)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return whole, whole, {}
    spans = spans_of_tests(tree)
    lines = text.splitlines()
    own = {
        name: code_of(textwrap.dedent("\n".join(lines[first - 1 : last])))
        for name, (first, last) in spans.items()
    }
    imported = [
        code_of((root / f).read_text(encoding="utf-8")) for f in sorted(imported_tests(file, tree, root))
    ]
    return whole, digest([shared_code(text, spans), *imported]), own


def digests(root: Path, tests: Iterable[str], ran: Collection[str] = ()) -> dict[str, str]:
    """Each test (a node id, its parameters dropped) to the digest of its own code and its file's shared
    code, or of its whole file where it is no function of its own, and of whether it is among ``ran``
    (node ids, parameters dropped); a test whose file is gone is left out."""
    by_file: dict[str, set[str]] = {}
    for test in tests:
        file, name = function_of(test)
        if name:
            by_file.setdefault(file, set()).add(name)
    ran = {normal(t) for t in ran}
    out: dict[str, str] = {}
    for file, names in sorted(by_file.items()):
        path = root / file
        if not path.is_file():
            continue
        whole, shared, own = _split(root, file, path.read_text(encoding="utf-8"))
        for name in names:
            test = f"{file}::{name.replace('.', '::')}"
            code = [shared, own[name]] if name in own else ["<whole file>", whole]
            out[test] = digest([file, *code, "ran" if test in ran else "not run"])
    return out


def changed(before: Mapping[str, str], now: Mapping[str, str]) -> tuple[str, ...]:
    """The tests of ``now`` that are new or whose code differs from ``before``, in order."""
    return tuple(sorted(t for t, d in now.items() if before.get(t) != d))

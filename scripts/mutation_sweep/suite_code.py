"""The code of one test, apart from the rest of its file: what a change to a test, and a verdict that
test gave, are compared by.

A test function's code is its decorators, header and body; everything else in its file (imports, fixtures,
helpers, other classes) is the file's shared code, which every test in it depends on. A change to the shared
code changes every test of the file; a change inside one test changes that test alone. Tests not written
as a ``def`` (a state machine's generated ``TestCase``) depend on their whole file. Code is compared as
tokens (``code_of``), so comments and spacing count for nothing.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path

from mutation_changes import code_of, digest, spans_of_tests


def function_of(test: str) -> tuple[str, str]:
    """A node id's file and qualified function: ``f.py::Class::test_x[p]`` -> ``(f.py, Class.test_x)``."""
    file, _, rest = test.partition("::")
    return file, rest.split("[", maxsplit=1)[0].replace("::", ".")


def _split(text: str) -> tuple[str, dict[str, str]]:
    """The file's shared code, and each test's own."""
    spans = spans_of_tests(text)
    if not spans:
        return code_of(text), {}
    lines = text.splitlines()
    own = {
        name: code_of(textwrap.dedent("\n".join(lines[first - 1 : last])))
        for name, (first, last) in spans.items()
    }
    inside = {n for first, last in spans.values() for n in range(first, last + 1)}
    shared = "\n".join(line for n, line in enumerate(lines, start=1) if n not in inside)
    return code_of(shared), own


def digests(root: Path, tests: Iterable[str]) -> dict[str, str]:
    """Each test (a node id, its parameters dropped) to the digest of its own code and its file's shared
    code; a test whose file is gone is left out."""
    by_file: dict[str, set[str]] = {}
    for test in tests:
        file, name = function_of(test)
        if name:
            by_file.setdefault(file, set()).add(name)
    out: dict[str, str] = {}
    for file, names in sorted(by_file.items()):
        path = root / file
        if not path.is_file():
            continue
        shared, own = _split(path.read_text(encoding="utf-8"))
        for name in names:
            out[f"{file}::{name.replace('.', '::')}"] = digest([file, shared, own.get(name, "<file>")])
    return out


def changed(before: Mapping[str, str], now: Mapping[str, str]) -> tuple[str, ...]:
    """The tests of ``now`` that are new or whose code differs from ``before``, in order."""
    return tuple(sorted(t for t, d in now.items() if before.get(t) != d))

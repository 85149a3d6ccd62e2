"""Mutants of compiled sources: which files are, how a copy rebuilds them, and what the tests import.

A ``.pyx`` mutant's tests run against the compiled implementation. Warm, it is one of the woven build's
switches (``switched_build.py``). Cold, or where it cannot be woven, the copy's extension is rebuilt from the
mutated source and the copy's build outputs are put back afterwards. Every other mutant is of the Python
reference, which the tests then import (``GUARD_LIB_IMPL=python``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from .model import MODULE_SCOPE

COMPILED_SUFFIX = ".pyx"
IMPL_ENV = "GUARD_LIB_IMPL"
BUILD_ENV = "GUARD_LIB_BUILD"
# A definition's header in Cython: def, class, cdef/cpdef functions with a return type, cdef classes.
HEADER = re.compile(
    r"^(?P<indent>[ \t]*)(?:async\s+)?"
    r"(?:(?:def|class)\s+|(?:cdef|cpdef)\s+(?:class\s+|inline\s+)?(?:[\w.*\[\] ]+?(?:\s+|\*))?)"
    r"(?P<name>\w+)\s*[(:]"
)


def is_compiled(file: str) -> bool:
    return file.endswith(COMPILED_SUFFIX)


def implementation(file: str) -> str:
    """What ``GUARD_LIB_IMPL`` the tests of a mutant of ``file`` run with."""
    return "compiled" if is_compiled(file) else "python"


# The same C, compiled without optimisation: a third of the compiler's time. The baseline build uses it too.
MUTANT_CFLAGS = "-O0"


def build_env(env: dict[str, str]) -> dict[str, str]:
    """The environment a copy's build runs in: the compiled core required, and built quickly."""
    return {**env, BUILD_ENV: "compiled", "CFLAGS": f"{env.get('CFLAGS', '')} {MUTANT_CFLAGS}".strip()}


# The copy's own build script and its arguments: run by a fresh interpreter, or inside the warm builder.
BUILD_ARGS = ("setup.py", "-q", "build_ext", "--inplace", "--force")


def build_command() -> list[str]:
    return [sys.executable, *BUILD_ARGS]


def build_outputs(project: Path, file: str) -> list[Path]:
    """The files a rebuild of ``file`` rewrites in ``project``: its C translation and its extensions;
    none for a file that is not compiled."""
    if not is_compiled(file):
        return []
    source = project / file
    return [source.with_suffix(".c"), *sorted(source.parent.glob(f"{source.stem}.*.so"))]


def scope_spans(source: str, qualname: str) -> list[tuple[int, int]]:
    """0-based inclusive line ranges of every definition named ``qualname`` in Cython source.

    ``<module>`` is the whole file. Read by indentation, since Python's parser cannot: a definition runs
    from its header (decorators included) to the last line before the next non-blank line indented no
    deeper than the header.
    """
    lines = source.splitlines()
    spans = [(0, len(lines) - 1)]
    if qualname == MODULE_SCOPE:
        return spans if lines else []
    depth_indent: str | None = None
    for part in qualname.split("."):
        found: list[tuple[int, int]] = []
        for start, end in spans:
            for k in range(start, end + 1):
                match = HEADER.match(lines[k])
                if match is None or match["name"] != part:
                    continue
                indent = match["indent"]
                if depth_indent is not None and len(indent) <= len(depth_indent):
                    continue
                first = k
                while first > start and lines[first - 1].strip().startswith("@"):
                    first -= 1
                last = k
                for j in range(k + 1, end + 1):
                    text = lines[j]
                    if text.strip() and not text.strip().startswith("#"):
                        if len(text) - len(text.lstrip()) <= len(indent):
                            break
                        last = j
                found.append((first, last))
                depth_indent = indent
        spans = found
        if not spans:
            return []
    return spans

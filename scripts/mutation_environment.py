"""What every verdict depends on besides the package's code and the tests' own: how pytest is configured to
run the tests, the script that builds the compiled core, and the versions of the distributions the package,
its tests and its build use.

A kill can rest on any of them: pyproject's ``filterwarnings`` turns a warning a mutant causes into its
test's failure, a Hypothesis release draws other programs, Cython and setup.py decide what the core is. So
every engine's reuse digest takes ``digest_of`` in, and a run scoped by a diff takes a change to the
configuration (``configuration_changed``) as a change to every test. The versions installed are no part of
a diff: where they change, the digests do, and the next whole run judges every mutant again.
Nothing here imports mutmut, pytest or guard_lib.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from mutation_changes import code_of, digest, text_at
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib

PYPROJECT = "pyproject.toml"
# How every test runs, besides the code: pytest's configuration (pyproject's [tool.pytest], or a file of
# pytest's own, whole) and the build script.
CONFIGURATION = (
    "pytest's configuration in pyproject.toml",
    *("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg"),
    "setup.py",
)
# The extras that name what the tests run with.
TEST_EXTRAS = ("test",)


def _toml(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def configuration(text_of: Callable[[str], str]) -> tuple[str, ...]:
    """One part for each entry of ``CONFIGURATION``, from ``text_of`` (a file's text by its path in the
    project, "" where there is none); the build script as its code, so its comments count for nothing."""
    pyproject = text_of(PYPROJECT)
    read = _toml(pyproject)
    # one TOML cannot read stands as its text: pytest refuses it too
    table = pyproject if read is None else json.dumps(read.get("tool", {}).get("pytest"), sort_keys=True)
    return (table, *(text_of(name) for name in CONFIGURATION[1:-1]), code_of(text_of(CONFIGURATION[-1])))


def configuration_changed(root: Path, commit: str) -> tuple[str, ...]:
    """Which of ``CONFIGURATION`` differ between ``commit`` and the working tree."""
    then = configuration(lambda path: text_at(root, commit, path))
    now = configuration(lambda path: working_text(root, path))
    return tuple(name for name, old, new in zip(CONFIGURATION, then, now, strict=True) if old != new)


def distributions(root: Path) -> dict[str, str]:
    """Each distribution the project requires, its test extras name or its build requires (where its marker
    holds here), to the version installed ("" where none is)."""
    read = _toml(working_text(root, PYPROJECT)) or {}
    project = read.get("project", {})
    extras = project.get("optional-dependencies", {})
    named = [
        *project.get("dependencies", []),
        *(r for extra in TEST_EXTRAS for r in extras.get(extra, [])),
        *read.get("build-system", {}).get("requires", []),
    ]
    found: dict[str, str] = {}
    for text in map(str, named):
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            found[text] = "not a requirement"
            continue
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        name = canonicalize_name(requirement.name)
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = ""
    return dict(sorted(found.items()))


def digest_of(root: Path) -> str:
    """The digest of all of it: the working tree's configuration, this environment's versions."""
    parts = configuration(lambda path: working_text(root, path))
    return digest([*parts, json.dumps(distributions(root), sort_keys=True)])


def working_text(root: Path, path: str) -> str:
    """``path`` as the working tree holds it; "" where it holds none, or none that reads as text."""
    try:
        return (root / path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""

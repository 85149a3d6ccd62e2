"""What every verdict depends on besides the package's code and the tests' own: how pytest is configured to
run the tests, the arguments each engine gives it, the conftest files above them, the variables of the
environment pytest, Python and Hypothesis read, the build of the compiled core, and the versions of the
distributions the project, its tests and its build require and of the pytest plug-ins that load themselves.

A kill can rest on any of them: pyproject's ``filterwarnings`` turns a warning a mutant causes into its
test's failure, a Hypothesis release or profile draws other programs, Cython and setup.py decide what the
core is. So every engine's reuse digest takes ``digest_of`` in, and a run scoped by a diff takes a change to
the configuration (``configuration_changed``) as a change to every test. What is installed and what the
environment holds are no part of a diff: where they change, the digests do, and the next whole run judges
every mutant again.
Nothing here imports mutmut, pytest or guard_lib.
"""

from __future__ import annotations

import configparser
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, entry_points, version
from pathlib import Path
from typing import Any

from mutation_changes import code_of, digest, text_at
from mutation_io import repo_text
from packaging.markers import Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib

PYPROJECT = "pyproject.toml"
MUTATION_CONFIG = "mutation_config.toml"
# pytest's own files, read whole, and the sections pytest reads of files it shares with other tools
PYTEST_FILES = ("pytest.ini", ".pytest.ini")
PYTEST_SECTIONS = {"tox.ini": "pytest", "setup.cfg": "tool:pytest"}
BUILD_SCRIPT = "setup.py"
# The extras that name what the tests run with.
TEST_EXTRAS = ("test",)
# What the environment may say to pytest, Python, Hypothesis or guard_lib's tests.
VARIABLES = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONWARNINGS")
VARIABLE_PREFIXES = ("HYPOTHESIS_", "GUARD_LIB_ORACLE_", "GUARD_LIB_TEST_")


def _toml(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def _table(read: Mapping[str, Any] | None, *keys: str) -> Any:
    """``read[keys[0]][keys[1]]...``, or None where any step is missing or no table."""
    found: Any = read
    for key in keys:
        found = found.get(key) if isinstance(found, dict) else None
    return found


def _section(text: str, name: str) -> str:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return text  # pytest refuses it too: its text stands for what it says
    return json.dumps(dict(parser[name]) if parser.has_section(name) else None, sort_keys=True)


def configuration(text_of: Callable[[str], str]) -> dict[str, str]:
    """What decides how every test runs, by what a reader calls it, from ``text_of`` (a file's text by its
    path in the project, "" where there is none): pytest's configuration, the engines' pytest arguments, a
    conftest.py at the root, and the build (setup.py as its code, so comments count for nothing)."""
    pyproject = text_of(PYPROJECT)
    read = _toml(pyproject)
    engines = _toml(text_of(MUTATION_CONFIG))
    arguments = {
        "catalogue": _table(engines, "harness", "pytest_args"),
        "catalogue tests": _table(engines, "harness", "tests"),
        "sweep": _table(engines, "sweep", "pytest_args"),
        "mutmut": _table(read, "tool", "mutmut", "pytest_add_cli_args"),
        "mutmut tests": _table(read, "tool", "mutmut", "pytest_add_cli_args_test_selection"),
    }
    # a TOML file that cannot be read stands as its text: pytest and the engines refuse it too
    return {
        "pytest's configuration in pyproject.toml": (
            pyproject if read is None else json.dumps(_table(read, "tool", "pytest"), sort_keys=True)
        ),
        **{name: text_of(name) for name in PYTEST_FILES},
        **{
            f"{name} [{section}]": _section(text_of(name), section)
            for name, section in PYTEST_SECTIONS.items()
        },
        "the engines' pytest arguments": (
            text_of(MUTATION_CONFIG) if engines is None else json.dumps(arguments, sort_keys=True)
        ),
        "conftest.py": code_of(text_of("conftest.py")),
        "the build (setup.py, [tool.setuptools])": code_of(text_of(BUILD_SCRIPT))
        + json.dumps(_table(read, "tool", "setuptools"), sort_keys=True),
    }


def working_text(root: Path, path: str) -> str:
    """``path`` as the working tree holds it; "" where it holds none inside the project."""
    return repo_text(path, root) or ""


def configuration_changed(root: Path, commit: str) -> tuple[str, ...]:
    """What of ``configuration`` differs between ``commit`` and the working tree."""
    then = configuration(lambda path: text_at(root, commit, path))
    now = configuration(lambda path: working_text(root, path))
    return tuple(name for name in now if then[name] != now[name])


def python_files(root: Path) -> list[str]:
    """The names of the files pytest collects here (``python_files``, pyproject's or its default)."""
    patterns = _table(_toml(working_text(root, PYPROJECT)), "tool", "pytest", "ini_options", "python_files")
    if isinstance(patterns, str):
        return patterns.split()
    if isinstance(patterns, list) and all(isinstance(p, str) for p in patterns):
        return list(patterns)
    return ["test_*.py", "*_test.py"]


def _requirements(read: Mapping[str, Any] | None) -> Iterable[object]:
    extras = _table(read, "project", "optional-dependencies")
    lists = [
        _table(read, "project", "dependencies"),
        *(extras.get(extra) if isinstance(extras, dict) else None for extra in TEST_EXTRAS),
        _table(read, "build-system", "requires"),
    ]
    for listed in lists:
        if isinstance(listed, list):
            yield from listed
        elif listed is not None:
            yield listed  # no list: it stands as what it is


def distributions(root: Path) -> dict[str, str]:
    """Each distribution the project requires, its test extras name or its build requires (where its marker
    holds here), and each that gives pytest a plug-in it loads by itself, to the version installed ("" where
    none is); what cannot be read as a requirement stands as its text."""
    found: dict[str, str] = {}
    for named in _requirements(_toml(working_text(root, PYPROJECT))):
        requirement = _requirement(named)
        if requirement is None:
            found[repr(named)] = "not a requirement"
        elif requirement.marker is None or _holds(requirement.marker):
            found[canonicalize_name(requirement.name)] = _version(requirement.name)
    for plugin in entry_points(group="pytest11"):
        if plugin.dist is not None:
            found.setdefault(canonicalize_name(plugin.dist.name), _version(plugin.dist.name))
    return dict(sorted(found.items()))


def _requirement(named: object) -> Requirement | None:
    try:
        return Requirement(named) if isinstance(named, str) else None
    except InvalidRequirement:
        return None


def _holds(marker: Marker) -> bool:
    try:
        return marker.evaluate()
    except (UndefinedComparison, UndefinedEnvironmentName):
        return True  # it may hold: counted


def _version(name: str) -> str:
    try:
        return version(canonicalize_name(name))
    except PackageNotFoundError:
        return ""


def variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` that pytest, Python, Hypothesis or guard_lib's tests read."""
    return {k: v for k, v in sorted(environ.items()) if k in VARIABLES or k.startswith(VARIABLE_PREFIXES)}


def conftests_above(root: Path, paths: Sequence[str]) -> list[str]:
    """Every conftest.py from the folder of each of ``paths`` that is in the project up to its root: pytest
    loads each of them for the tests below."""
    found: set[str] = set()
    for entry in paths:
        where = root / entry
        if not where.exists():
            continue
        folder = where if where.is_dir() else where.parent
        for parent in (folder, *folder.parents):
            if parent != root and root not in parent.parents:
                break
            if (parent / "conftest.py").is_file():
                found.add((parent / "conftest.py").relative_to(root).as_posix())
    return sorted(found)


def digest_of(root: Path, paths: Sequence[str] = ()) -> str:
    """The digest of all of it, for tests under ``paths`` (a pytest argument that is no path is passed
    over): the working tree's configuration, this environment's variables and versions."""
    parts = configuration(lambda path: working_text(root, path))
    conftests = [f"{f}\0{code_of(working_text(root, f))}" for f in conftests_above(root, paths)]
    return digest(
        [
            *(f"{name}\0{text}" for name, text in parts.items()),
            *conftests,
            json.dumps(variables(os.environ)),
            json.dumps(distributions(root)),
        ]
    )

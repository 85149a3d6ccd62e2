"""mutmut's verdicts reused from an earlier run while nothing they depend on has changed.

mutmut keeps its own verdicts in mutants/ and trusts them while a function's code is unchanged, even when
the tests that killed a mutant changed; so every run here names the mutants mutmut must judge, and a
verdict is kept only by this digest. It covers the mutant (its name and its function, original and
mutated), the package's code (every file mutmut mutates, whole, and the compiled core's source), the test
files that reach the mutant's function (as mutmut's stats of the run that judged it recorded), the helpers
beside the tests (conftest and support modules), how they run (``mutation_environment``),
``[tool.mutmut]``, mutmut's version and the interpreter; code as its tokens, so comments and spacing count
for nothing. Only a kill is reused: a mutant its tests did not kill is judged again, so reuse never hides a
survivor.
"""

from __future__ import annotations

import fnmatch
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from mutation_changes import code_of
from mutation_changes import digest as _digest
from mutation_common import MutantRecord, Results
from mutation_environment import digest_of, python_files
from mutation_io import InputError, read_toml

REUSABLE = frozenset({"killed"})
PACKAGE_SUFFIXES = (".py", ".pyx", ".pxd", ".pyi")


def _code(root: Path, rel: str) -> str:
    path = root / rel
    return _digest([rel, code_of(path.read_text(encoding="utf-8")) if path.is_file() else ""])


def _files(root: Path, where: str, suffixes: Sequence[str]) -> list[str]:
    path = root / where
    if path.is_file():
        return [where]
    found = (p for p in path.rglob("*") if p.suffix in suffixes)
    return sorted(p.relative_to(root).as_posix() for p in found)


def _mutmut_table(root: Path) -> dict[str, Any]:
    return _mutmut_table_of(root / "pyproject.toml")


def _mutmut_table_of(path: Path) -> dict[str, Any]:
    try:
        table = read_toml(path).get("tool", {}).get("mutmut", {})
    except (InputError, AttributeError):
        return {}
    return table if isinstance(table, dict) else {}


def _helpers(root: Path, selection: Sequence[str]) -> list[str]:
    """Files beside the tests that any test may use: each folder's modules that pytest does not collect,
    and every conftest.py from the folder up to the root."""
    patterns = python_files(root)
    found: set[str] = set()
    for where in selection:
        found.update(
            f
            for f in _files(root, where, (".py",))
            if not any(fnmatch.fnmatch(Path(f).name, p) for p in patterns)
        )
        for parent in Path(where).parents:
            if (root / parent / "conftest.py").is_file():
                found.add((parent / "conftest.py").as_posix())
    return sorted(found)


def base(root: Path, override: Path | None = None) -> str:
    """The digest of what every mutmut verdict of this project depends on (``override``: a TOML whose
    ``[tool.mutmut]`` replaces pyproject's keys, as ``mutation_run.py --override`` applies it)."""
    table = _mutmut_table(root)
    if override is not None:
        table = {**table, **_mutmut_table_of(override)}
    sources = [str(p) for p in table.get("source_paths", ["."])]
    selection = [str(p) for p in table.get("pytest_add_cli_args_test_selection", ["tests"])]
    package = sorted({f for where in sources for f in _files(root, where, PACKAGE_SUFFIXES)})
    try:
        mutmut = version("mutmut")
    except PackageNotFoundError:
        mutmut = ""
    return _digest(
        [
            sys.version,
            digest_of(root),  # the conftests above the tests are among the helpers below
            mutmut,
            json.dumps(table, sort_keys=True),
            *(_code(root, f) for f in package),
            *(_code(root, f) for f in _helpers(root, selection)),
        ]
    )


def digest(root: Path, common: str, name: str, texts: tuple[str, str], tests: Iterable[str]) -> str:
    """One mutant's digest: ``common`` (``base``), the mutant, and the code of the test files it ran."""
    files = sorted({t.split("::")[0] for t in tests})
    return _digest([common, name, *texts, *(_code(root, f) for f in files)])


def test_files(stats: Path) -> dict[str, list[str]]:
    """The test files that reach each function, by its mangled name, as mutmut's stats recorded them."""
    try:
        by_function = json.loads(stats.read_text(encoding="utf-8"))["tests_by_mangled_function_name"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(by_function, dict):
        return {}
    return {str(k): sorted({str(t).split("::")[0] for t in v}) for k, v in by_function.items()}


def mangled(name: str) -> str:
    """The function a mutant belongs to, as mutmut's stats name it."""
    return name.replace("__init__.", "").rpartition("__mutmut_")[0]


def split(
    names: Sequence[str],
    earlier: Results,
    depends_now: Callable[[MutantRecord], str],
) -> tuple[dict[str, MutantRecord], list[str]]:
    """The earlier kills that still hold, by name, and the names to judge again."""
    held = {m.name: m for m in earlier.mutants if m.status in REUSABLE and m.depends}
    kept: dict[str, MutantRecord] = {}
    again: list[str] = []
    for name in names:
        record = held.get(name)
        if record is not None and depends_now(record) == record.depends:
            kept[name] = record
        else:
            again.append(name)
    return kept, again


def with_depends(
    records: Sequence[MutantRecord],
    kept: Mapping[str, MutantRecord],
    tests_of: Mapping[str, list[str]],
    depends_of: Callable[[MutantRecord, list[str]], str],
) -> list[MutantRecord]:
    """The run's records: the kept ones with their earlier verdicts (where they are now: only comments or
    spacing may have moved them), the rest with what their verdicts depended on."""
    out = []
    for record in records:
        held = kept.get(record.name)
        if held is not None:
            out.append(
                replace(
                    record,
                    status=held.status,
                    exit_code=held.exit_code,
                    duration=held.duration,
                    tests=held.tests,
                    depends=held.depends,
                )
            )
            continue
        tests = tests_of.get(mangled(record.name), [])
        out.append(replace(record, tests=tests, depends=depends_of(record, tests)))
    return out

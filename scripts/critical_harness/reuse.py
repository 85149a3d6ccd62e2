"""Catalogue verdicts reused from an earlier run while nothing they depend on has changed.

A catalogue verdict depends on the entry (its edit, as its key names it, and its killed_by tests), the
package's code it was judged against (every file of the package, whole), the tests it ran and their
code (its killed_by tests' files, or every file the catalogue names under --full, with the helpers
beside them), how they run (``mutation_environment``), the harness that judged it, the interpreter, the
implementation and the runtime; code as
its tokens, so comments and spacing count for nothing. Each result carries the digest of all of those
(``depends``). Only a kill is reused: an entry its tests did not kill is judged again, so reuse never
hides a finding.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from mutation_changes import code_of, digest
from mutation_environment import digest_of
from mutation_io import InputError
from mutation_model import KILLED

from .compiled import is_compiled
from .model import Config, Mutant, Result

HARNESS_SOURCES = (Path(__file__).resolve().parent, Path(__file__).resolve().parents[1] / "_warm_server.py")
PACKAGE_SUFFIXES = (".py", ".pyx", ".pxd", ".pyi")


def _files(where: Path, suffixes: Sequence[str]) -> list[Path]:
    if where.is_file():
        return [where]
    return sorted(p for p in where.rglob("*") if p.suffix in suffixes)


def _code(path: Path, root: Path) -> str:
    """The file named by its place and its code; a file that is gone counts as empty."""
    name = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()
    return digest([name, code_of(path.read_text(encoding="utf-8")) if path.is_file() else ""])


def digests(config: Config, mutants: Sequence[Mutant], runtime: str, full: bool) -> dict[str, str]:
    """Each mutant's ``depends`` digest, by id."""
    root, harness = config.root, config.harness
    package = [_code(p, root) for p in _files(root / harness.package, PACKAGE_SUFFIXES)]
    # A file some entry names in killed_by is a test file, and so is one pytest would collect; every
    # other one beside them is a helper (conftest, support modules), which any test may use.
    named = {t.split("::")[0] for m in config.mutants for t in m.spec.killed_by}
    suite = {p.relative_to(root).as_posix(): p for e in harness.tests for p in _files(root / e, (".py",))}
    helpers = [_code(p, root) for rel, p in sorted(suite.items()) if rel not in named and not _collected(p)]
    tool = [_code(p, p.parent) for where in HARNESS_SOURCES for p in _files(where, (".py",))]
    base = digest(
        [
            sys.version,
            digest_of(root, harness.tests),
            runtime,
            str(full),
            *harness.tests,
            *harness.pytest_args,
            *package,
            *helpers,
            *tool,
        ]
    )
    tests = {rel: _code(root / rel, root) for rel in named}
    out: dict[str, str] = {}
    for mutant in mutants:
        spec = mutant.spec
        ran = [tests[f] for f in sorted(named if full else {t.split("::")[0] for t in spec.killed_by})]
        implementation = "compiled" if is_compiled(spec.file) else "python"
        out[spec.id] = digest([base, implementation, spec.id, spec.key, *spec.killed_by, *ran])
    return out


def _collected(path: Path) -> bool:
    return path.name.startswith("test_") or path.name.endswith("_test.py")


def read_earlier(path: Path) -> dict[str, Mapping[str, Any]]:
    """An earlier run's results (``run --json``), by mutant id: InputError where it cannot be read."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"--reuse {path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"--reuse {path}: not readable JSON ({exc})") from exc
    entries = data.get("mutants") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("id"), str) for e in entries
    ):
        raise InputError(f"--reuse {path}: not the catalogue's results (`run --json`): no 'mutants' with ids")
    return {e["id"]: e for e in entries}


def split(
    mutants: Sequence[Mutant], depends: Mapping[str, str], earlier: Mapping[str, Mapping[str, Any]]
) -> tuple[list[Result], list[Mutant]]:
    """The earlier kills that still hold (as results), and the mutants to judge again."""
    kept: list[Result] = []
    again: list[Mutant] = []
    for mutant in mutants:
        held = earlier.get(mutant.spec.id)
        if held is None or held.get("verdict") != KILLED or held.get("depends") != depends[mutant.spec.id]:
            again.append(mutant)
            continue
        kept.append(_result_of(mutant, held))
    return kept, again


def _result_of(mutant: Mutant, held: Mapping[str, Any]) -> Result:
    failed = [str(t) for t in held.get("failed_tests") or []]
    test, message = held.get("first_failure_test"), held.get("first_failure")
    seconds = held.get("seconds")
    return Result(
        mutant,
        KILLED,
        seconds=float(seconds) if isinstance(seconds, (int, float)) else 0.0,
        failed_tests=failed,
        first_failure=(str(test), str(message or "")) if test else None,
        engine=str(held.get("engine") or "cold"),
        canary=bool(held.get("canary")),
        reused=True,
    )


def with_depends(results: Iterable[Result], depends: Mapping[str, str]) -> list[Result]:
    return [replace(r, depends=depends.get(r.mutant.spec.id, "")) for r in results]

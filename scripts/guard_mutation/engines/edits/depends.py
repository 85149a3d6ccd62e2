"""What each verdict depends on (``Outcome.depends``): the mutant's diff; the package's code (as tokens:
comments and spacing count for nothing); the test files it ran (a catalogue mutant's ``killed_by``
files; under ``full`` and for a generated mutant, every one) and their helpers; the harness's settings,
pyproject.toml, setup.py, this engine's code, the interpreter, implementation and runtime."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...config import Config
from ...reuse import code_of, digest
from .edit import Edit

_PACKAGE_SUFFIXES = (".py", ".pyx", ".pxd", ".pyi")
_ENGINE = Path(__file__).resolve().parent


def _files(where: Path, suffixes: Sequence[str]) -> list[Path]:
    found = where.rglob("*") if where.is_dir() else [where]
    return sorted(p for p in found if p.suffix in suffixes and "__pycache__" not in p.parts)


def _code(path: Path, root: Path) -> str:
    """The file named by its place and its code; a file that is gone counts as empty."""
    name = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()
    return digest([name, code_of(path.read_text(encoding="utf-8")) if path.is_file() else ""])


def digests(config: Config, root: Path, edits: Iterable[Edit], runtime: str, full: bool) -> dict[str, str]:
    """Each edit's ``depends``, by id."""
    h = config.harness
    suite = {p.relative_to(root).as_posix(): p for t in h.tests for p in _files(root / t, (".py",))}
    named = {t.split("::")[0] for entry in config.catalogue for t in entry.killed_by}
    helpers = [
        _code(p, root)
        for rel, p in sorted(suite.items())
        if rel not in named and not p.name.startswith("test_") and not p.name.endswith("_test.py")
    ]
    settings = [h.package, *h.tests, *h.pytest_args, str(h.timeout_s), *h.preload]
    base = digest(
        [
            sys.version,
            runtime,
            str(full),
            *settings,
            *(_code(root / name, root) for name in ("pyproject.toml", "setup.py")),
            *(_code(p, root) for p in _files(root / h.package, _PACKAGE_SUFFIXES)),
            *helpers,
            *(_code(p, _ENGINE) for p in _files(_ENGINE, (".py",))),
        ]
    )
    every = [_code(p, root) for _, p in sorted(suite.items())]
    out: dict[str, str] = {}
    for edit in edits:
        killed_by = edit.mutant.killed_by
        files = sorted({t.split("::")[0] for t in killed_by})
        ran = every if edit.generated or full else [_code(root / f, root) for f in files]
        out[edit.id] = digest([base, edit.impl, edit.id, edit.mutant.diff, *killed_by, *ran])
    return out

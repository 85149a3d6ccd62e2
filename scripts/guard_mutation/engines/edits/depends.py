"""What each verdict depends on (``Outcome.depends``): the mutant's diff; the package's code (as tokens:
comments and spacing count for nothing); the test files it ran (a catalogue mutant's ``killed_by``
files; under ``full`` and for a generated mutant, every one) and their helpers; the harness's settings,
pyproject.toml, setup.py, this engine's code, the interpreter, implementation and runtime."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...config import Config
from ...reuse import digest, files_digest
from .edit import Edit

_PACKAGE_SUFFIXES = (".py", ".pyx", ".pxd", ".pyi")
_ENGINE = Path(__file__).resolve().parent


def _files(where: Path, suffixes: Sequence[str]) -> list[Path]:
    found = where.rglob("*") if where.is_dir() else [where]
    return sorted(p for p in found if p.suffix in suffixes and "__pycache__" not in p.parts)


def digests(config: Config, root: Path, edits: Iterable[Edit], runtime: str, full: bool) -> dict[str, str]:
    """Each edit's ``depends``, by id."""
    h = config.harness
    suite = {p.relative_to(root).as_posix(): p for t in h.tests for p in _files(root / t, (".py",))}
    named = {t.split("::")[0] for entry in config.catalogue for t in entry.killed_by}
    helpers = [
        files_digest(root, [p])
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
            *(files_digest(root, [root / name]) for name in ("pyproject.toml", "setup.py")),
            *(files_digest(root, [p]) for p in _files(root / h.package, _PACKAGE_SUFFIXES)),
            *helpers,
            *(files_digest(_ENGINE, [p]) for p in _files(_ENGINE, (".py",))),
        ]
    )
    every = [files_digest(root, [p]) for _, p in sorted(suite.items())]
    out: dict[str, str] = {}
    for edit in edits:
        killed_by = edit.mutant.killed_by
        files = sorted({t.split("::")[0] for t in killed_by})
        ran = every if edit.generated or full else [files_digest(root, [root / f]) for f in files]
        out[edit.id] = digest([base, edit.impl, edit.id, edit.mutant.diff, *killed_by, *ran])
    return out

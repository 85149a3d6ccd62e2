"""Helpers for the tooling's tests: mutmut results as the exporter writes them.

Imported first by every test module here; it never imports guard_lib, so these tests do not depend
on the library's state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"


def mutant(name: str, status: str = "survived", **extra: Any) -> dict[str, Any]:
    """One exported mutant with a plausible diff; ``added``/``removed`` set its changed line."""
    removed = extra.pop("removed", "return a + b")
    added = extra.pop("added", "return a - b")
    exit_codes = {"killed": 1, "survived": 0, "no tests": 33, "timeout": 36, "not checked": None}
    record = {
        "name": name,
        "file": extra.pop("file", "pkg/mod.py"),
        "status": status,
        "exit_code": exit_codes.get(status, 35),
        "diff": "--- pkg/mod.py\n+++ pkg/mod.py\n@@ -1,2 +1,2 @@\n def f(a, b):\n"
        f"-    {removed}\n+    {added}",
        "line": 2,
        "column": 14,
        "end_line": 2,
        "end_column": 15,
        "replacement": "-",
        "original": "+",
        "mutator": "OperatorReplacement",
        "duration": 0.01,
    }
    record.update(extra)
    return record


def results_file(path: Path, mutants: list[dict[str, Any]], **extra: Any) -> Path:
    """A whole run's export of ``mutants``; ``extra`` overrides any key (a shard, a universe)."""
    from mutation_common import universe_of

    data = {
        "format": "guard-lib-mutmut-results",
        "version": 1,
        "mutmut_version": "3.8.1",
        "scope": {"kind": "full"},
        "shard": None,
        "universe": universe_of(str(m.get("name")) for m in mutants if isinstance(m, dict)),
        "sources": {"pkg/mod.py": "def f(a, b):\n    return a + b\n"},
        "mutants": mutants,
    }
    data.update(extra)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def deletions_file(path: Path, made: list[tuple[str, str]], **change: Any) -> Path:
    """``scripts/core_deletions.py --json`` of deletions (verdict, text), one a line of ``f``."""
    entries = [
        {"id": f"deletion-{n:012d}", "line": n, "scope": "f", "text": text, "verdict": verdict, "detail": "d"}
        for n, (verdict, text) in enumerate(made, start=1)
    ]
    data = {
        "format": "guard-lib-core-deletions",
        "version": 1,
        "source": "guard_lib/_core.pyx",
        "universe": {"count": len(made), "sha256": "x"},
        "part": False,
        "deletions": entries,
        **change,
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path

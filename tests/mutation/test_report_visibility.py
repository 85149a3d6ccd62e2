"""The report says how much of the package mutmut could see at all."""

from __future__ import annotations

from pathlib import Path

import pytest
from mutation_report import visibility


def test_visibility_counts_what_mutmut_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "mod.py").write_text(
        "import contextlib\n\n"
        "def seen(a):\n    b = a + 1\n    return b\n\n"
        "@contextlib.contextmanager\ndef unseen():\n    yield 1\n"
    )
    (tmp_path / "pyproject.toml").write_text('[tool.mutmut]\nsource_paths = ["pkg"]\n')
    monkeypatch.chdir(tmp_path)
    line = visibility(Path("pyproject.toml"))
    assert line is not None
    assert line.startswith("mutmut saw 2 of 3 function-body lines (66.7%)")


def test_visibility_is_silent_without_a_mutmut_config(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert visibility(tmp_path / "pyproject.toml") is None
    assert visibility(tmp_path / "absent.toml") is None

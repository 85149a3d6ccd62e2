"""``scripts/nightly.sh`` checks its environment before it deletes or writes anything."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import _scripts
import pytest


def _scratch(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(_scripts.SCRIPTS / "nightly.sh", tmp_path / "scripts" / "nightly.sh")
    (tmp_path / "mutants").mkdir()
    (tmp_path / "mutants" / "tonight.txt").write_text("kept", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("python", ["no-such-python", "bare"])
def test_a_missing_environment_is_exit_2_before_anything_is_touched(tmp_path: Path, python: str) -> None:
    root = _scratch(tmp_path)
    if python == "bare":
        # an interpreter that sees no site-packages: mutmut, pytest and the rest are missing
        bare = tmp_path / "bare-python"
        bare.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n', encoding="utf-8")
        bare.chmod(0o755)
        python = str(bare)
    done = subprocess.run(
        ["bash", str(root / "scripts" / "nightly.sh")],
        env={"PATH": "/usr/bin:/bin", "PYTHON": python},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("nightly.sh: ")
    assert "pip install" in done.stderr or "PYTHON=" in done.stderr
    assert (root / "mutants" / "tonight.txt").read_text(encoding="utf-8") == "kept"
    assert not (root / "reports").exists()

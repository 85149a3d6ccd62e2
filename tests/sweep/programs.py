"""A program of the sweep's runners, run in a fresh interpreter: the runners fork, which a forking pytest
process would confuse. Its last line of output is its JSON answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def beside(project: Path, path: str | None = None) -> dict[str, str]:
    """An environment that imports from ``project`` and the tooling's scripts, and nothing installed there."""
    return {"PYTHONPATH": f"{project}:{ROOT / 'scripts'}", "PATH": path or os.environ["PATH"]}


def answer(
    program: str, args: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None, timeout: int = 300
) -> Any:
    """What ``program`` printed last, as JSON, once it exited 0."""
    done = subprocess.run(
        [sys.executable, "-c", program, *args],
        cwd=cwd,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])

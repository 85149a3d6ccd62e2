"""Plain ``pytest`` proves both implementations: the behaviour suite runs again on the one this process lacks.

The implementation is chosen once, at import, so the other one needs a process of its own. Under coverage
the child is measured too (``--parallel-mode``); README's test command combines its data.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import guard_lib
from guard_lib.implementation import IMPL_ENV

BEHAVIOUR = Path(__file__).parent / "behaviour"
ROOT = BEHAVIOUR.parents[1]


def _other() -> str:
    return "python" if guard_lib.IMPLEMENTATION == "compiled" else "compiled"


def _measured() -> bool:
    try:
        from coverage import Coverage
    except ImportError:  # pragma: no cover - coverage is a test dependency
        return False
    return Coverage.current() is not None


def test_the_behaviour_suite_passes_on_the_other_implementation(request: pytest.FixtureRequest) -> None:
    other = _other()
    if other == "compiled" and os.environ.get(IMPL_ENV, "").strip() == "python":
        pytest.skip(f"{IMPL_ENV}=python asks for the reference alone")
    if other == "compiled":
        try:
            importlib.import_module("guard_lib._core")
        except ImportError as error:
            pytest.skip(f"the compiled core is not built here ({error})")
    runner = [sys.executable, "-m", "coverage", "run", "--parallel-mode"] if _measured() else [sys.executable]
    command = [*runner, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(BEHAVIOUR)]
    verbosity = request.config.get_verbosity()
    env = {**os.environ, IMPL_ENV: other}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    tail = done.stdout if verbosity > 0 else "\n".join(done.stdout.splitlines()[-40:])
    assert done.returncode == 0, f"the behaviour suite on the {other} implementation:\n{tail}\n{done.stderr}"
    assert " passed" in done.stdout.splitlines()[-1], done.stdout

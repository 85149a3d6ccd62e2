"""Plain ``pytest`` proves both implementations: the behaviour suite runs again on the one this process lacks.

The implementation is chosen once, at import, so the other one needs a process of its own. Under coverage
the child is measured too (``--parallel-mode``); README's test command combines its data.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
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


OTHER_RUN = pytest.StashKey["OtherRun"]()


class OtherRun:
    """The behaviour suite on the other implementation, in a child started once the suite is collected, so
    that it runs on a second core beside this session's tests; the test below waits for its end."""

    def __init__(self, other: str) -> None:
        runner = (
            [sys.executable, "-m", "coverage", "run", "--parallel-mode"] if _measured() else [sys.executable]
        )
        command = [*runner, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(BEHAVIOUR)]
        self.other = other
        # held for the session: stop() closes it at the end
        self.output = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # noqa: SIM115
        env = {**os.environ, IMPL_ENV: other}
        self.child = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=self.output, stderr=subprocess.STDOUT
        )

    def wait(self) -> tuple[int, str]:
        code = self.child.wait()
        self.output.seek(0)
        return code, self.output.read()

    def stop(self) -> None:
        """Ends a child nobody waits for (a session cut short), and drops what it wrote."""
        if self.child.poll() is None:
            self.child.kill()
            self.child.wait()
        self.output.close()


def start_other_run(config: pytest.Config) -> None:
    """Called once the session's tests are collected, where they include the test below."""
    other = _other()
    if other == "compiled" and os.environ.get(IMPL_ENV, "").strip() == "python":
        return
    if other == "compiled":
        try:
            importlib.import_module("guard_lib._core")
        except ImportError:
            return
    config.stash[OTHER_RUN] = OtherRun(other)


def stop_other_run(config: pytest.Config) -> None:
    run = config.stash.get(OTHER_RUN, None)
    if run is not None:
        run.stop()


def test_the_behaviour_suite_passes_on_the_other_implementation(request: pytest.FixtureRequest) -> None:
    other = _other()
    if other == "compiled" and os.environ.get(IMPL_ENV, "").strip() == "python":
        pytest.skip(f"{IMPL_ENV}=python asks for the reference alone")
    if other == "compiled":
        try:
            importlib.import_module("guard_lib._core")
        except ImportError as error:
            pytest.skip(f"the compiled core is not built here ({error})")
    run = request.config.stash.get(OTHER_RUN, None)
    if run is None:  # collected in a way the start missed (a plug-in's own session): run it now
        run = OtherRun(other)
        request.config.stash[OTHER_RUN] = run
    code, output = run.wait()
    tail = output if request.config.get_verbosity() > 0 else "\n".join(output.splitlines()[-40:])
    assert code == 0, f"the behaviour suite on the {other} implementation:\n{tail}"
    assert " passed" in output.splitlines()[-1], output

"""pytest plugin for backend authors: prove your backend leaves the CUDA device as it found it.

Registered through the ``pytest11`` entry point, so installing guard_lib makes these available:

- the ``simulated_runtime`` fixture: a fresh ``SimulatedRuntime`` (two devices, or as many as
  ``@pytest.mark.simulated_devices(n)`` asks for) installed as the process default for the test;
- ``assert_leaves_device(runtime=None)``: a context manager that fails the test if the calling thread's
  device differs on leaving the block from what it was on entering.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import TracebackType

try:
    import pytest
except ImportError as exc:
    raise ImportError(
        "guard_lib.testing is a pytest plugin and needs pytest: pip install 'guard-lib[pytest]'"
    ) from exc

from .runtime import DeviceRuntime, SimulatedRuntime, get_runtime, use_runtime

__all__ = ["assert_leaves_device", "simulated_runtime"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "simulated_devices(n): the number of devices the simulated_runtime fixture has"
    )


@pytest.fixture
def simulated_runtime(request: pytest.FixtureRequest) -> Iterator[SimulatedRuntime]:
    """A fresh SimulatedRuntime, the process default for the duration of the test."""
    marker = request.node.get_closest_marker("simulated_devices")
    count = 2 if marker is None else marker.args[0]
    with use_runtime(SimulatedRuntime(device_count=count)) as runtime:
        yield runtime  # type: ignore[misc]


def _current(runtime: DeviceRuntime, when: str) -> int:
    code, index = runtime.get_device()
    if code:
        name = runtime.error_name(code)
        hint = (
            ""
            if isinstance(runtime, SimulatedRuntime)
            else "; no CUDA device answered: without a GPU, take the simulated_runtime fixture in the "
            "test (or pass runtime=SimulatedRuntime())"
        )
        raise AssertionError(f"assert_leaves_device: cannot read the device {when}: {name}{hint}")
    return int(index)


class assert_leaves_device:
    """``with assert_leaves_device():`` fails with AssertionError when the block changes this thread's
    current device, also when the block raised (its exception is then chained to the AssertionError)."""

    __slots__ = ("_before", "_runtime")

    def __init__(self, runtime: DeviceRuntime | None = None) -> None:
        self._runtime = runtime

    def __enter__(self) -> assert_leaves_device:
        if self._runtime is None:
            self._runtime = get_runtime()
        self._before = _current(self._runtime, "before the block")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._runtime is not None
        after = _current(self._runtime, "after the block")
        if after != self._before:
            raise AssertionError(
                f"the block left the current CUDA device at {after}; it was {self._before} before"
            )

"""Every behaviour test runs on the simulated runtime; the same tests run on the real one where a GPU is.

``rt`` is parametrized over the runtimes that ``GUARD_LIB_TEST_RUNTIME`` selects: ``simulated`` (the
simulated runtime, plain and offering C entry points), ``cuda``, or all three when it is unset
(``all``). The ``cuda`` case carries the ``cuda`` marker and skips where no device answers; a test
marked ``multi_gpu`` skips on a machine with fewer than two devices.
"""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Iterator

import pytest

from guard_lib.runtime import CudaRuntime, DeviceRuntime, SimulatedRuntime

from .support import EntryPointRuntime

TEST_RUNTIME_ENV = "GUARD_LIB_TEST_RUNTIME"
SIMULATED_DEVICES = 8
# "c-entry" is the simulated runtime offering C entry points, the path the compiled core takes for CUDA.
_CHOICES = {
    "simulated": ("simulated", "c-entry"),
    "cuda": ("cuda",),
    "all": ("simulated", "c-entry", "cuda"),
}


def _selected_runtimes() -> tuple[str, ...]:
    value = os.environ.get(TEST_RUNTIME_ENV, "all")
    try:
        return _CHOICES[value]
    except KeyError:
        raise pytest.UsageError(
            f"{TEST_RUNTIME_ENV}={value!r}: expected one of {', '.join(_CHOICES)}"
        ) from None


@functools.cache
def cuda_device_count() -> int:
    code, count = CudaRuntime().get_device_count()
    return 0 if code else int(count)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "rt" in metafunc.fixturenames:
        params = [
            pytest.param(name, id=name, marks=[pytest.mark.cuda] if name == "cuda" else [])
            for name in _selected_runtimes()
        ]
        metafunc.parametrize("rt", params, indirect=True)


@pytest.fixture
def rt(request: pytest.FixtureRequest) -> Iterator[DeviceRuntime]:
    needed = 2 if request.node.get_closest_marker("multi_gpu") else 1
    if request.param == "simulated":
        yield SimulatedRuntime(device_count=SIMULATED_DEVICES)
        return
    if request.param == "c-entry":
        yield EntryPointRuntime(device_count=SIMULATED_DEVICES)
        return
    available = cuda_device_count()
    if available < needed:
        found = "no CUDA device" if available == 0 else f"{available} CUDA device"
        pytest.skip(f"needs {needed} or more CUDA devices; this machine has {found}")
    runtime = CudaRuntime()
    # Each test starts and ends on device 0, so one that fails cannot shift the next one's baseline.
    runtime.set_device(0)
    yield runtime
    runtime.set_device(0)


@pytest.fixture(params=["plain", "c-entry"])
def sim(request: pytest.FixtureRequest) -> SimulatedRuntime:
    """A simulated runtime for the behaviours only it can show: call counts and injected faults.

    Also offering C entry points, so that the compiled core's C path meets every fault too.
    """
    if request.param == "c-entry":
        return EntryPointRuntime(device_count=SIMULATED_DEVICES)
    return SimulatedRuntime(device_count=SIMULATED_DEVICES)


@pytest.fixture(scope="module")
def frozen_heap() -> Iterator[None]:
    """What the process holds before a module's tests, frozen until they end: a collection a test makes to
    finalise what it dropped then looks only at what the module's tests made, not the whole process (pytest,
    hypothesis, every module imported), which each full collection would walk again."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()

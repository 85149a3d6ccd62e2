"""The pytest plugin a backend's own tests use: the simulated_runtime fixture and assert_leaves_device."""

from __future__ import annotations

from typing import Any

import pytest

from guard_lib.runtime import SimulatedRuntime, get_runtime
from guard_lib.testing import assert_leaves_device

BACKEND_TESTS = """
import pytest
import guard_lib
from guard_lib.testing import assert_leaves_device

def polite_backend():
    with guard_lib.device(1):
        pass

def leaky_backend():
    guard_lib.DeviceGuard.create(1).unwrap().take()  # the taker is dropped: nothing restores

def test_polite(simulated_runtime):
    with assert_leaves_device():
        polite_backend()
    assert ("set_device", (0,)) in simulated_runtime.calls

def test_leaky(simulated_runtime):
    with assert_leaves_device():
        leaky_backend()

@pytest.mark.simulated_devices(5)
def test_device_count_marker(simulated_runtime):
    assert simulated_runtime.device_count == 5
"""


def test_plugin_passes_a_polite_backend_and_fails_a_leaky_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_backend=BACKEND_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore::ResourceWarning")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_leaky*", "*left the current CUDA device at 1; it was 0 before*"])


def test_fixture_installs_a_fresh_default(simulated_runtime: SimulatedRuntime) -> None:
    assert get_runtime() is simulated_runtime
    assert simulated_runtime.device_count == 2
    assert simulated_runtime.calls == []


def test_assert_leaves_device_on_an_explicit_runtime() -> None:
    sim = SimulatedRuntime(device_count=2)
    with assert_leaves_device(sim):
        sim.set_device(1)
        sim.set_device(0)
    with pytest.raises(AssertionError, match="left the current CUDA device at 1; it was 0"):
        with assert_leaves_device(sim):
            sim.set_device(1)


def test_assert_leaves_device_reports_a_leak_even_when_the_block_raised() -> None:
    sim = SimulatedRuntime(device_count=2)
    with pytest.raises(AssertionError, match="left the current CUDA device") as info:
        with assert_leaves_device(sim):
            sim.set_device(1)
            raise ValueError("backend failed")
    assert isinstance(info.value.__context__, ValueError)
    sim.set_device(0)
    with pytest.raises(ValueError, match="backend failed"), assert_leaves_device(sim):
        raise ValueError("backend failed")


@pytest.mark.parametrize("when", ["before", "after"])
def test_assert_leaves_device_says_when_the_device_is_unreadable(when: str) -> None:
    sim = SimulatedRuntime(device_count=2)
    if when == "before":
        sim.fail_next("get_device", 100)
    with pytest.raises(AssertionError, match=f"cannot read the device {when} the block: cudaErrorNoDevice"):
        with assert_leaves_device(sim):
            if when == "after":
                sim.fail_next("get_device", 100)


def test_assert_leaves_device_hands_itself_to_the_block() -> None:
    sim = SimulatedRuntime()
    checker = assert_leaves_device(sim)
    with checker as entered:
        assert entered is checker


def test_the_plugin_registers_its_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_marked="""
import pytest

@pytest.mark.simulated_devices(3)
def test_three(simulated_runtime):
    assert simulated_runtime.device_count == 3
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=1)
    listed = pytester.runpytest("--markers")
    listed.stdout.fnmatch_lines(
        ["*simulated_devices(n): the number of devices the simulated_runtime fixture has*"]
    )


def test_a_block_that_leaves_a_lower_device_fails() -> None:
    sim = SimulatedRuntime(device_count=2)
    sim.set_device(1)
    with pytest.raises(AssertionError, match="left the current CUDA device at 0; it was 1 before"):
        with assert_leaves_device(sim):
            sim.set_device(0)


class _NotSimulated:
    """Any runtime but the simulated one (as CudaRuntime answers on a machine without a GPU)."""

    def __init__(self) -> None:
        self._inner = SimulatedRuntime()

    def get_device(self) -> tuple[int, int]:
        return 35, 0

    def error_name(self, code: int) -> str:
        return self._inner.error_name(code)


def _simulated_unreadable() -> SimulatedRuntime:
    sim = SimulatedRuntime()
    sim.fail_next("get_device", 35)
    return sim


@pytest.mark.parametrize(("make", "hinted"), [(_NotSimulated, True), (_simulated_unreadable, False)])
def test_an_unreadable_device_points_to_the_fixture_unless_simulated(make: Any, hinted: bool) -> None:
    with pytest.raises(AssertionError) as info, assert_leaves_device(make()):
        pass
    message = str(info.value)
    assert message.startswith("assert_leaves_device: cannot read the device before the block: ")
    assert "cudaErrorInsufficientDriver" in message
    assert ("take the simulated_runtime fixture" in message) is hinted


def test_the_plugin_without_pytest_says_which_extra_brings_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    # imported afresh through the normal machinery, as a program without pytest would import it
    monkeypatch.delitem(sys.modules, "guard_lib.testing")
    monkeypatch.setitem(sys.modules, "pytest", None)  # as if pytest were not installed
    with pytest.raises(ImportError, match=r"needs pytest: pip install 'guard-lib\[pytest\]'") as info:
        importlib.import_module("guard_lib.testing")
    assert isinstance(info.value.__cause__, ImportError)  # the original reason stays attached

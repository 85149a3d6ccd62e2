"""The runtimes behind the guard: the simulated one's model of CUDA, the real one, and the default."""

from __future__ import annotations

import importlib.abc
import os
import re
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

import guard_lib
import guard_lib.runtime as runtime_module
from guard_lib import DeviceGuard, GuardError, device
from guard_lib.cuda_errors import INVALID_DEVICE, LAUNCH_FAILURE, NO_DEVICE, error_name
from guard_lib.runtime import (
    RUNTIME_ENV,
    CudaRuntime,
    DeviceRuntime,
    SimulatedRuntime,
    get_runtime,
    runtime_from_spec,
    use_runtime,
)

from .conftest import cuda_device_count
from .support import refusal

# SimulatedRuntime


def test_simulated_keeps_a_device_and_a_call_log_per_thread() -> None:
    sim = SimulatedRuntime(device_count=3)
    assert sim.set_device(2) == (0,)
    seen: list[object] = []

    def other() -> None:
        seen.append(sim.get_device())
        seen.append(list(sim.calls))

    worker = threading.Thread(target=other)
    worker.start()
    worker.join()
    assert seen == [(0, 0), [("get_device", ())]]
    assert sim.get_device() == (0, 2)
    assert sim.calls == [("set_device", (2,)), ("get_device", ())]


def test_simulated_refuses_absent_and_negative_devices() -> None:
    sim = SimulatedRuntime(device_count=2)
    assert sim.set_device(2) == (INVALID_DEVICE,)
    assert sim.set_device(-1) == (INVALID_DEVICE,)
    assert sim.current_device == 0
    assert sim.get_device_count() == (0, 2)
    assert sim.device_count == 2


def test_simulated_last_error_is_kept_until_read() -> None:
    sim = SimulatedRuntime(device_count=1)
    sim.set_device(5)
    assert sim.peek_at_last_error() == (INVALID_DEVICE,)
    assert sim.peek_at_last_error() == (INVALID_DEVICE,)
    assert sim.get_last_error() == (INVALID_DEVICE,)
    assert sim.get_last_error() == (0,)


@pytest.mark.parametrize("op", ["get_device", "get_device_count"])
def test_fail_next_fails_exactly_the_next_call(op: str) -> None:
    sim = SimulatedRuntime(device_count=2)
    sim.fail_next(op, LAUNCH_FAILURE)
    call = getattr(sim, op)
    assert call()[0] == LAUNCH_FAILURE
    assert sim.peek_at_last_error() == (LAUNCH_FAILURE,)
    assert call()[0] == 0


def test_failing_set_can_still_move_the_thread() -> None:
    sim = SimulatedRuntime(device_count=4)
    sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=3)
    sim.fail_next("set_device", LAUNCH_FAILURE)
    assert sim.set_device(1) == (LAUNCH_FAILURE,)
    assert sim.current_device == 3
    assert sim.contexts == {3}
    assert sim.set_device(1) == (LAUNCH_FAILURE,)
    assert sim.current_device == 3
    assert sim.set_device(1) == (0,)
    assert sim.current_device == 1


def test_selection_creates_a_context_on_the_selected_device_only() -> None:
    sim = SimulatedRuntime(device_count=4)
    assert sim.contexts == set()
    sim.set_device(2)
    sim.set_device(9)
    assert sim.contexts == {2}


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("launch", 1), {}, "unknown op 'launch'"),
        (("set_device", 0), {}, "not cudaSuccess"),
        (("get_device", 1), {"moves_to": 1}, "only set_device"),
    ],
)
def test_fail_next_rejects_bad_requests(
    args: tuple[object, ...], kwargs: dict[str, int], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        SimulatedRuntime().fail_next(*args, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("count", [-1, 1.5, True, "2", None])
def test_simulated_rejects_bad_device_counts(count: object) -> None:
    with pytest.raises(ValueError, match="device_count"):
        SimulatedRuntime(device_count=count)  # type: ignore[arg-type]


def test_simulated_names_errors_and_describes_itself() -> None:
    sim = SimulatedRuntime(device_count=3)
    assert sim.error_name(INVALID_DEVICE) == "cudaErrorInvalidDevice"
    assert sim.error_name(4242) == "cudaError(4242)"
    assert repr(sim) == "SimulatedRuntime(device_count=3)"
    assert error_name(0) == "cudaSuccess"


def test_both_runtimes_satisfy_the_protocol() -> None:
    assert isinstance(SimulatedRuntime(), DeviceRuntime)
    assert isinstance(CudaRuntime(), DeviceRuntime)


# CudaRuntime


def test_cuda_runtime_binds_the_bindings_without_a_wrapper() -> None:
    from cuda.bindings import runtime as bindings

    cuda = CudaRuntime()
    assert cuda.get_device is bindings.cudaGetDevice
    assert cuda.set_device is bindings.cudaSetDevice
    assert cuda.get_device_count is bindings.cudaGetDeviceCount
    assert cuda.get_last_error is bindings.cudaGetLastError
    assert cuda.peek_at_last_error is bindings.cudaPeekAtLastError
    assert repr(cuda) == "CudaRuntime()"


def test_a_cuda_runtime_can_be_weakly_referenced_so_the_core_keeps_none_alive() -> None:
    import weakref

    cuda = CudaRuntime()
    held = weakref.ref(cuda)
    assert held() is cuda
    del cuda
    assert held() is None


def test_cuda_runtime_names_errors() -> None:
    cuda = CudaRuntime()
    assert cuda.error_name(INVALID_DEVICE) == "cudaErrorInvalidDevice"
    assert cuda.error_name(4242) == "cudaError(4242)"


def test_guard_without_a_driver_says_so() -> None:
    # Asked here, not in a skipif at import: collecting this module must make no CUDA call (a mutmut fork
    # server that collects would otherwise initialise CUDA and hand a dead context to every worker).
    if cuda_device_count() > 0:
        pytest.skip("a CUDA device is present on this machine")
    error = refusal(DeviceGuard.create(0, runtime=CudaRuntime()))
    assert "no CUDA driver or device was found" in str(error)
    assert error.code_name in {"cudaErrorInsufficientDriver", "cudaErrorNoDevice"}


def test_importing_guard_lib_makes_no_cuda_call() -> None:
    # cuda.bindings is not even loaded until a CudaRuntime is made, so no CUDA call can happen at import.
    code = "import sys, guard_lib; print('cuda.bindings.runtime' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_collecting_the_suite_makes_no_cuda_call() -> None:
    # scripts/mutmut_gpu.toml's fork server collects the suite before it forks mutmut's workers; a CUDA
    # call during collection would initialise CUDA there and leave every worker a dead context.
    tests = Path(__file__).parent
    args = ["--collect-only", "-q", "-p", "no:cacheprovider", str(tests)]
    code = f"import sys, pytest; pytest.main({args!r}); print('cuda.bindings.runtime' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stdout


# Without cuda-bindings

NOT_INSTALLED = (
    "cannot use the CUDA runtime: cuda-bindings is not installed; install it with pip install cuda-bindings "
    "(tests without CUDA can set GUARD_LIB_RUNTIME=simulated)"
)


@pytest.fixture
def no_bindings(monkeypatch: pytest.MonkeyPatch) -> None:
    """cuda-bindings as if it were not installed, with no default runtime made yet."""
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    monkeypatch.setattr(runtime_module, "_default", None)
    monkeypatch.delenv(RUNTIME_ENV, raising=False)


@pytest.mark.usefixtures("no_bindings")
def test_a_cuda_runtime_without_the_bindings_is_a_guard_error_that_says_so() -> None:
    with pytest.raises(GuardError) as raised:
        CudaRuntime()
    error = raised.value
    assert str(error) == NOT_INSTALLED
    assert (error.device_index, error.code, error.code_name) == (None, None, None)
    assert type(error.__cause__) is ModuleNotFoundError


@pytest.mark.parametrize("absent", ["cuda", "cuda.bindings", "cuda.bindings.runtime"])
def test_each_module_of_the_bindings_missing_reads_as_not_installed(
    monkeypatch: pytest.MonkeyPatch, absent: str
) -> None:
    # cuda is a namespace other packages share: any of the three missing means no cuda-bindings.
    class Absent(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: object, target: object = None) -> None:
            if fullname == absent:
                raise ModuleNotFoundError(f"No module named {absent!r}", name=absent)

    for name in ("cuda", "cuda.bindings", "cuda.bindings.runtime"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(sys, "meta_path", [Absent(), *sys.meta_path])
    if absent == "cuda.bindings.runtime":
        # A submodule that is simply not found reads as a name cuda.bindings lacks (a broken install);
        # one blocked in sys.modules is missing.
        monkeypatch.setitem(sys.modules, absent, None)
    with pytest.raises(GuardError) as raised:
        CudaRuntime()
    assert str(raised.value) == NOT_INSTALLED
    assert getattr(raised.value.__cause__, "name", None) == absent


def test_bindings_that_are_there_but_cannot_be_imported_are_named_as_such(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A package without its runtime module, as a broken or partial install leaves it.
    monkeypatch.setitem(sys.modules, "cuda.bindings", types.ModuleType("cuda.bindings"))
    monkeypatch.delitem(sys.modules, "cuda.bindings.runtime", raising=False)
    with pytest.raises(GuardError) as raised:
        CudaRuntime()
    message = str(raised.value)
    assert message.startswith("cannot use the CUDA runtime: cuda-bindings cannot be imported (cannot import ")
    assert "is not installed" not in message
    assert type(raised.value.__cause__) is ImportError


@pytest.mark.usefixtures("no_bindings")
def test_without_the_bindings_a_guard_on_the_default_runtime_is_an_err() -> None:
    error = refusal(DeviceGuard.create(0))
    assert type(error) is GuardError
    assert str(error) == NOT_INSTALLED
    with pytest.raises(GuardError, match=re.escape(NOT_INSTALLED)):
        with guard_lib.device(0):
            pytest.fail("the body ran without a runtime")

    @guard_lib.device(0)
    def body() -> None:
        pytest.fail("the body ran without a runtime")

    with pytest.raises(GuardError, match=re.escape(NOT_INSTALLED)):
        body()


def test_without_the_bindings_no_default_is_kept_and_each_use_asks_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import cuda.bindings as installed

    monkeypatch.setattr(runtime_module, "_default", None)
    monkeypatch.delenv(RUNTIME_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    for _ in range(2):
        with pytest.raises(GuardError, match=re.escape(NOT_INSTALLED)):
            get_runtime()
        assert runtime_module._default is None
    monkeypatch.setitem(sys.modules, "cuda.bindings", installed)
    assert isinstance(get_runtime(), CudaRuntime)


@pytest.mark.usefixtures("no_bindings")
def test_without_the_bindings_the_simulated_runtime_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    sim = SimulatedRuntime(device_count=2)
    with guard_lib.device(1, runtime=sim) as borrowed:
        assert borrowed.current_device == sim.get_device()[1] == 1
    assert sim.get_device() == (0, 0)
    monkeypatch.setenv(RUNTIME_ENV, "simulated:2")
    guard = DeviceGuard.create(1).unwrap()
    guard.close()


_WITHOUT_CUDA = """
import sys
from importlib.abc import MetaPathFinder


class NoCuda(MetaPathFinder):
    # As in an environment where cuda-bindings was never installed: no module named cuda at all.
    def find_spec(self, name, path=None, target=None):
        if name == "cuda" or name.startswith("cuda."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoCuda())
import guard_lib
from guard_lib import DeviceGuard, GuardError
from guard_lib.runtime import SimulatedRuntime

print(guard_lib.IMPLEMENTATION)
with guard_lib.device(1, runtime=SimulatedRuntime(device_count=2)) as borrowed:
    print("simulated", borrowed.current_device)
print("create", DeviceGuard.create(0).error)
try:
    with guard_lib.device(0):
        print("entered")
except GuardError as error:
    print("device", error)
print("cuda loaded", any(name == "cuda" or name.startswith("cuda.") for name in sys.modules))
"""


def test_guard_lib_imports_and_refuses_cleanly_where_cuda_bindings_is_not_installed() -> None:
    env = {**os.environ, "GUARD_LIB_IMPL": guard_lib.IMPLEMENTATION}
    env.pop(RUNTIME_ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_CUDA], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        guard_lib.IMPLEMENTATION,
        "simulated 1",
        f"create {NOT_INSTALLED}",
        f"device {NOT_INSTALLED}",
        "cuda loaded False",
    ]


# The default runtime


@pytest.fixture
def fresh_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_module, "_default", None)
    monkeypatch.delenv(RUNTIME_ENV, raising=False)


@pytest.mark.usefixtures("fresh_default")
def test_default_is_the_cuda_runtime() -> None:
    assert isinstance(get_runtime(), CudaRuntime)
    assert get_runtime() is get_runtime()


@pytest.mark.usefixtures("fresh_default")
def test_initialiser_keeps_a_default_set_while_it_waited(monkeypatch: pytest.MonkeyPatch) -> None:
    # Of two threads that both found no default, the second, once it has the lock, must take the first
    # one's default rather than build another.
    first = SimulatedRuntime()
    monkeypatch.setattr(runtime_module, "_default", first)
    assert runtime_module._init_default() is first


@pytest.mark.usefixtures("fresh_default")
@pytest.mark.parametrize(("spec", "count"), [("simulated", 2), ("simulated:5", 5), (" simulated:1 ", 1)])
def test_env_selects_the_simulated_runtime(monkeypatch: pytest.MonkeyPatch, spec: str, count: int) -> None:
    monkeypatch.setenv(RUNTIME_ENV, spec)
    runtime = get_runtime()
    assert isinstance(runtime, SimulatedRuntime)
    assert runtime.device_count == count


@pytest.mark.usefixtures("fresh_default")
def test_env_can_name_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RUNTIME_ENV, "cuda")
    assert isinstance(get_runtime(), CudaRuntime)


@pytest.mark.usefixtures("fresh_default")
@pytest.mark.parametrize("spec", ["gpu", "simulated:0", "simulated:x", "simulated:", "cuda:1", ""])
def test_env_with_an_unknown_value_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    monkeypatch.setenv(RUNTIME_ENV, spec)
    with pytest.raises(ValueError, match=f"{RUNTIME_ENV}={spec!r} names no runtime"):
        get_runtime()


def test_runtime_from_spec_builds_fresh_runtimes() -> None:
    assert runtime_from_spec("simulated") is not runtime_from_spec("simulated")


def test_use_runtime_nests_and_restores() -> None:
    outer, inner = SimulatedRuntime(), SimulatedRuntime()
    before = get_runtime()
    with use_runtime(outer) as given:
        assert given is outer
        assert get_runtime() is outer
        with use_runtime(inner):
            assert get_runtime() is inner
            seen: list[DeviceRuntime] = []
            worker = threading.Thread(target=lambda: seen.append(get_runtime()))
            worker.start()
            worker.join()
            assert seen == [inner]
        assert get_runtime() is outer
    assert get_runtime() is before


def test_use_runtime_restores_after_an_exception() -> None:
    before = get_runtime()
    with pytest.raises(RuntimeError), use_runtime(SimulatedRuntime()):
        raise RuntimeError
    assert get_runtime() is before


def test_use_runtime_rejects_what_is_not_a_runtime() -> None:
    with pytest.raises(TypeError, match="needs a DeviceRuntime, got int"), use_runtime(3):  # type: ignore[arg-type]
        pass


def test_simulated_runtime_with_no_devices_answers_as_cuda_with_none() -> None:
    sim = SimulatedRuntime(device_count=0)
    assert sim.get_device_count() == (NO_DEVICE, 0)
    assert sim.get_device() == (NO_DEVICE, None)
    assert sim.set_device(0) == (NO_DEVICE,)
    assert sim.get_last_error() == (NO_DEVICE,)
    # A guard selects nothing there, device 0 included, and says why as it would on CUDA.
    for index in (0, 1):
        error = refusal(DeviceGuard.create(index, runtime=sim))
        assert str(error) == (
            "cannot read the current CUDA device: no CUDA driver or device was found (cudaErrorNoDevice)"
        )
        assert error.code == NO_DEVICE
        with pytest.raises(GuardError, match="cudaErrorNoDevice"), device(index, runtime=sim):
            pytest.fail("a body ran on a runtime with no device")
    assert [name for name, _ in sim.calls if name == "set_device"] == ["set_device"]
    assert sim.contexts == set()


def test_failed_queries_answer_no_value_and_are_logged() -> None:
    sim = SimulatedRuntime(device_count=2)
    sim.fail_next("get_device", LAUNCH_FAILURE)
    sim.fail_next("get_device_count", LAUNCH_FAILURE)
    assert sim.get_device() == (LAUNCH_FAILURE, None)
    assert sim.get_device_count() == (LAUNCH_FAILURE, None)
    assert sim.calls == [("get_device", ()), ("get_device_count", ())]


def test_raise_next_refuses_bad_requests() -> None:
    sim = SimulatedRuntime()
    with pytest.raises(
        ValueError,
        match=r"^raise_next: unknown op 'launch'; expected one of get_device, set_device, get_device_count$",
    ):
        sim.raise_next("launch", KeyboardInterrupt())
    with pytest.raises(TypeError, match="raise_next: exception must be a BaseException instance, got"):
        sim.raise_next("set_device", KeyboardInterrupt)  # type: ignore[arg-type]
    assert sim.calls == []
    assert sim.get_device() == (0, 0)


def test_a_raising_set_device_takes_effect_first() -> None:
    sim = SimulatedRuntime(device_count=2)
    sim.raise_next("set_device", KeyboardInterrupt("late"))
    with pytest.raises(KeyboardInterrupt, match="late"):
        sim.set_device(1)
    assert sim.current_device == 1
    assert sim.contexts == {1}
    sim.raise_next("set_device", KeyboardInterrupt("late"))
    with pytest.raises(KeyboardInterrupt, match="late"):
        sim.set_device(5)
    assert sim.current_device == 1
    assert sim.peek_at_last_error() == (INVALID_DEVICE,)


def test_clear_faults_drops_what_no_call_met() -> None:
    sim = SimulatedRuntime()
    sim.fail_next("get_device", LAUNCH_FAILURE)
    sim.raise_next("set_device", KeyboardInterrupt())
    sim.clear_faults()
    assert sim.get_device() == (0, 0)
    assert sim.set_device(1) == (0,)

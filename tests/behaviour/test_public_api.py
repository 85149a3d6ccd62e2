"""What each module exports and binds at import: names, constants, the version, the logger."""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import guard_lib

PUBLIC = {
    "guard_lib": [
        "IMPLEMENTATION",
        "CallerStreamGuard",
        "DeviceGuard",
        "Err",
        "GuardError",
        "GuardTypeError",
        "Ok",
        "Result",
        "UncheckedResultWarning",
        "device",
        "get_caller_stream",
        "implementation",
        "runtime",
        "stream_handle",
    ],
    "guard_lib.caller_stream": ["CallerStreamGuard", "get_caller_stream", "stream_handle"],
    "guard_lib.cuda_errors": [
        "ERROR_NAMES",
        "INSUFFICIENT_DRIVER",
        "INVALID_DEVICE",
        "INVALID_VALUE",
        "LAUNCH_FAILURE",
        "NO_DEVICE",
        "SUCCESS",
        "error_name",
    ],
    "guard_lib.device_guard": ["DeviceGuard", "device"],
    # not public: what the two implementations share, the core included
    "guard_lib._shared": [
        "as_int",
        "closed_guard",
        "cuda_error",
        "logger",
        "not_owner",
        "refuse_undecoratable",
        "restore",
        "restore_failed",
        "type_error",
    ],
    "guard_lib.implementation": ["CORE", "IMPLEMENTATION", "IMPL_ENV", "REASON"],
    "guard_lib.errors": ["GuardError", "GuardTypeError", "UncheckedResultWarning"],
    "guard_lib.result": ["Err", "Ok", "Result"],
    "guard_lib.runtime": [
        "RUNTIME_ENV",
        "CudaRuntime",
        "DeviceRuntime",
        "RuntimeChoice",
        "SimulatedRuntime",
        "get_runtime",
        "runtime_from_spec",
        "use_runtime",
    ],
    "guard_lib.simulated": ["OPS", "SimulatedRuntime"],
    "guard_lib.testing": ["assert_leaves_device", "simulated_runtime"],
}


@pytest.mark.parametrize("module_name", PUBLIC)
def test_each_module_exports_exactly_its_public_names(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert module.__all__ == PUBLIC[module_name]
    namespace: dict[str, object] = {}
    exec(f"from {module_name} import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(PUBLIC[module_name])


def test_version_is_the_distributions() -> None:
    try:
        installed = importlib.metadata.version("guard-lib")
    except importlib.metadata.PackageNotFoundError:
        # a plain checkout on PYTHONPATH (scripts/gpu_proof.sh on an offline host): compare with the file
        text = (Path(guard_lib.__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8")
        installed = re.search(r'^version = "([^"]+)"', text, re.MULTILINE).group(1)  # type: ignore[union-attr]
    assert guard_lib.__version__ == installed


def test_constants_bound_at_import() -> None:
    from guard_lib import _shared, caller_stream, cuda_errors, device_guard, result, runtime, simulated

    assert runtime.RUNTIME_ENV == "GUARD_LIB_RUNTIME"
    assert (cuda_errors.SUCCESS, cuda_errors.INVALID_VALUE, cuda_errors.INSUFFICIENT_DRIVER) == (0, 1, 35)
    assert (cuda_errors.NO_DEVICE, cuda_errors.INVALID_DEVICE, cuda_errors.LAUNCH_FAILURE) == (100, 101, 719)
    assert frozenset({3, 34, 35, 100}) == cuda_errors.NO_CUDA_CODES
    assert type(cuda_errors.NO_CUDA_CODES) is frozenset  # shared by every guard: nobody may add to it
    assert simulated.OPS == ("get_device", "set_device", "get_device_count")
    assert caller_stream._CALLER_STREAM.name == "guard_lib.caller_stream"
    assert caller_stream._CALLER_STREAM.get() is None
    assert _shared.logger is logging.getLogger("guard_lib")
    # Finalisers use these: bound at import, they survive the module globals being cleared at shutdown.
    assert device_guard._warn is warnings.warn
    assert result._warn is warnings.warn


def test_the_library_leaves_logging_to_the_application() -> None:
    # No handler of its own, NullHandler included: with none configured, Python's last resort prints
    # guard_lib's errors to stderr rather than dropping them.
    assert logging.getLogger("guard_lib").handlers == []
    assert logging.getLogger("guard_lib").propagate is True


def _instances() -> list[object]:
    from guard_lib import CallerStreamGuard, DeviceGuard, Err, GuardError, Ok, device
    from guard_lib.runtime import SimulatedRuntime, use_runtime
    from guard_lib.testing import assert_leaves_device

    sim = SimulatedRuntime()
    guard = DeviceGuard.create(0, runtime=sim).unwrap()
    guard.close()
    ok, err = Ok(1), Err(GuardError("x", device_index=None))
    ok.is_ok()
    err.is_err()
    choice = use_runtime(sim)  # what use_runtime hands back, once the default it replaced is back
    choice.restore()
    from guard_lib.runtime import CudaRuntime

    return [
        guard,
        device(0),
        CallerStreamGuard(None),
        ok,
        err,
        sim,
        assert_leaves_device(sim),
        CudaRuntime(),
        choice,
    ]


@pytest.mark.parametrize("index", range(9))
def test_instances_take_no_new_attributes(index: int) -> None:
    # __slots__ all the way up: a guard made by the thousand stays small, and a typo fails loudly.
    obj = _instances()[index]
    assert not hasattr(obj, "__dict__")
    with pytest.raises(AttributeError):
        obj.typo = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, "CudaRuntime"), ({"GUARD_LIB_RUNTIME": "simulated:3"}, "SimulatedRuntime 3")],
)
def test_a_fresh_process_picks_its_default_runtime_once(env: dict[str, str], expected: str) -> None:
    program = (
        "from guard_lib.runtime import get_runtime\n"
        "first = get_runtime()\n"
        "assert get_runtime() is first\n"
        "print(type(first).__name__, getattr(first, 'device_count', ''))\n"
    )
    environ = {k: v for k, v in os.environ.items() if k != "GUARD_LIB_RUNTIME"}
    done = subprocess.run(
        [sys.executable, "-c", program], env={**environ, **env}, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == expected


PROTOCOL = (
    "get_device",
    "set_device",
    "get_device_count",
    "get_last_error",
    "peek_at_last_error",
    "error_name",
)


@pytest.mark.parametrize("missing", PROTOCOL)
def test_a_runtime_must_answer_every_question_of_the_protocol(missing: str) -> None:
    from guard_lib.runtime import DeviceRuntime, SimulatedRuntime, use_runtime

    sim = SimulatedRuntime()
    partial = type("Partial", (), {name: getattr(sim, name) for name in PROTOCOL if name != missing})()
    complete = type("Complete", (), {name: getattr(sim, name) for name in PROTOCOL})()
    assert isinstance(complete, DeviceRuntime)
    assert not isinstance(partial, DeviceRuntime)
    with pytest.raises(TypeError, match="use_runtime\\(\\) needs a DeviceRuntime, got Partial"):
        use_runtime(partial).__enter__()


def test_a_fresh_runtime_module_has_no_default_until_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same check as above, in this process: a fresh copy of the module, executed by its own loader.
    import importlib.util

    from guard_lib import runtime

    monkeypatch.delenv("GUARD_LIB_RUNTIME", raising=False)
    spec = runtime.__spec__
    assert spec is not None
    assert spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    first = fresh.get_runtime()
    assert type(first).__name__ == "CudaRuntime"
    assert fresh.get_runtime() is first

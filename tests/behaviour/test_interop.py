"""guard_lib beside PyTorch, CuPy and cuda.core in one process, on a real device (marker ``cuda``).

Backends that read the current device through their own frameworks must see the caller's device again
once a guard has closed, and a framework's own device context around or inside a guard must nest with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from guard_lib import CallerStreamGuard, DeviceGuard, device, get_caller_stream, stream_handle
from guard_lib.runtime import CudaRuntime

from .conftest import cuda_device_count
from .support import refusal

pytestmark = pytest.mark.cuda


@pytest.fixture
def cuda() -> Iterator[CudaRuntime]:
    if cuda_device_count() < 1:
        pytest.skip("needs a CUDA device; this machine has none")
    runtime = CudaRuntime()
    runtime.set_device(0)
    yield runtime
    runtime.set_device(0)


def _other_device() -> int:
    return 1 if cuda_device_count() > 1 else 0


def _current(runtime: CudaRuntime) -> int:
    code, index = runtime.get_device()
    assert not code, runtime.error_name(code)
    return int(index)


def test_frameworks_see_the_callers_device_after_a_guard(cuda: CudaRuntime) -> None:
    torch = pytest.importorskip("torch")
    cupy = pytest.importorskip("cupy")
    with DeviceGuard.create(_other_device(), runtime=cuda).unwrap():
        assert torch.cuda.current_device() == _other_device()
        assert cupy.cuda.runtime.getDevice() == _other_device()
    assert torch.cuda.current_device() == 0
    assert cupy.cuda.runtime.getDevice() == 0


@pytest.mark.multi_gpu
def test_guard_inside_torch_device_restores_to_it(cuda: CudaRuntime) -> None:
    torch = pytest.importorskip("torch")
    if cuda_device_count() < 2:
        pytest.skip("needs 2 or more CUDA devices")
    with torch.cuda.device(1):
        with device(0, runtime=cuda):
            assert torch.cuda.current_device() == 0
        assert torch.cuda.current_device() == 1
        assert _current(cuda) == 1
    assert _current(cuda) == 0


@pytest.mark.multi_gpu
def test_framework_contexts_inside_a_guard_restore_to_the_guards_device(cuda: CudaRuntime) -> None:
    torch = pytest.importorskip("torch")
    cupy = pytest.importorskip("cupy")
    if cuda_device_count() < 2:
        pytest.skip("needs 2 or more CUDA devices")
    with DeviceGuard.create(1, runtime=cuda).unwrap():
        with torch.cuda.device(0):
            assert _current(cuda) == 0
        assert _current(cuda) == 1
        with cupy.cuda.Device(0):
            assert _current(cuda) == 0
        assert _current(cuda) == 1
    assert torch.cuda.current_device() == 0


def test_same_device_guard_inside_torch_and_cupy_contexts(cuda: CudaRuntime) -> None:
    torch = pytest.importorskip("torch")
    cupy = pytest.importorskip("cupy")
    with torch.cuda.device(0), DeviceGuard.create(0, runtime=cuda).unwrap() as guard:
        assert guard.original_device == 0
        with cupy.cuda.Device(0), device(0, runtime=cuda):
            assert cupy.cuda.runtime.getDevice() == 0
    assert torch.cuda.current_device() == 0


def test_refusal_leaves_no_cuda_error_pending(cuda: CudaRuntime) -> None:
    assert int(cuda.peek_at_last_error()[0]) == 0
    absent = cuda_device_count()
    error = refusal(DeviceGuard.create(absent, runtime=cuda))
    assert error.code_name == "cudaErrorInvalidDevice"
    assert str(error) == f"cannot select CUDA device {absent}: cudaErrorInvalidDevice"
    assert int(cuda.peek_at_last_error()[0]) == 0
    assert _current(cuda) == 0


def _check_carried(stream: object, handle: int) -> None:
    with CallerStreamGuard(stream):
        assert get_caller_stream() is stream
    if hasattr(stream, "__cuda_stream__"):
        assert stream_handle(stream) == handle
    else:
        with pytest.raises(TypeError, match="is not a CUDA stream"):
            stream_handle(stream)


def test_caller_stream_carries_a_torch_stream(cuda: CudaRuntime) -> None:
    torch = pytest.importorskip("torch")
    stream = torch.cuda.Stream()
    _check_carried(stream, int(stream.cuda_stream))


def test_caller_stream_carries_a_cupy_stream(cuda: CudaRuntime) -> None:
    cupy = pytest.importorskip("cupy")
    stream = cupy.cuda.Stream(non_blocking=True)
    _check_carried(stream, int(stream.ptr))


def test_caller_stream_carries_a_cuda_core_stream(cuda: CudaRuntime) -> None:
    core: Any = pytest.importorskip("cuda.core")
    if not hasattr(core, "Device"):
        core = pytest.importorskip("cuda.core.experimental")
    dev = core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    assert hasattr(stream, "__cuda_stream__")
    _check_carried(stream, int(stream.handle))


def test_caller_stream_carries_a_raw_handle(cuda: CudaRuntime) -> None:
    from cuda.bindings import runtime as bindings

    code, raw = bindings.cudaStreamCreate()
    assert not code
    handle = int(raw)
    try:
        with CallerStreamGuard(handle):
            assert get_caller_stream() == handle
        assert stream_handle(handle) == handle
    finally:
        bindings.cudaStreamDestroy(raw)

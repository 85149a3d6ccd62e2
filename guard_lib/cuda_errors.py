"""The CUDA runtime error codes guard_lib and the simulated runtime speak (values of ``cudaError_t``)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "ERROR_NAMES",
    "INSUFFICIENT_DRIVER",
    "INVALID_DEVICE",
    "INVALID_VALUE",
    "LAUNCH_FAILURE",
    "NO_DEVICE",
    "SUCCESS",
    "error_name",
]

SUCCESS: Final = 0
INVALID_VALUE: Final = 1
INSUFFICIENT_DRIVER: Final = 35
NO_DEVICE: Final = 100
INVALID_DEVICE: Final = 101
LAUNCH_FAILURE: Final = 719

ERROR_NAMES: Final[dict[int, str]] = {
    SUCCESS: "cudaSuccess",
    INVALID_VALUE: "cudaErrorInvalidValue",
    3: "cudaErrorInitializationError",
    34: "cudaErrorStubLibrary",
    INSUFFICIENT_DRIVER: "cudaErrorInsufficientDriver",
    46: "cudaErrorDevicesUnavailable",
    NO_DEVICE: "cudaErrorNoDevice",
    INVALID_DEVICE: "cudaErrorInvalidDevice",
    216: "cudaErrorDeviceAlreadyInUse",
    700: "cudaErrorIllegalAddress",
    LAUNCH_FAILURE: "cudaErrorLaunchFailure",
    999: "cudaErrorUnknown",
}

# Codes that mean the process has no usable driver or device at all, rather than a bad request.
NO_CUDA_CODES: Final = frozenset({3, 34, INSUFFICIENT_DRIVER, NO_DEVICE})


def error_name(code: int) -> str:
    """Name of a CUDA error code, with the number where the code is not one guard_lib knows."""
    return ERROR_NAMES.get(int(code), f"cudaError({int(code)})")

#!/usr/bin/env python3
"""Measure whether borrowing a device leaves a CUDA primary context on a device the program never used.

From CUDA 12 on, ``cudaSetDevice`` creates the target's primary context at once, so a guard that
"restores" a device the thread was on only by default can leave a context (hundreds of MiB) on a GPU
the program never touched. Each scenario runs in a fresh process (primary contexts are per process) on
a fresh thread, and reads every device's primary-context state with the driver's
``cuDevicePrimaryCtxGetState`` before and after.

    python scripts/context_probe.py [--json FILE]

Scenarios that need two devices are reported as skipped on one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

SCENARIOS = {
    "borrow-current-device": (1, "with guard_lib.device(0, runtime=rt): pass"),
    "refused-absent-device": (1, "assert guard_lib.DeviceGuard.create(count, runtime=rt).is_err()"),
    "borrow-other-device": (2, "with guard_lib.device(1, runtime=rt): pass"),
    "select-then-unbind-context": (
        2,
        "rt.set_device(1); driver.cuCtxSetCurrent(driver.CUcontext(0))",
    ),
}

CHILD = """
import json, sys, threading
from cuda.bindings import driver, runtime
import guard_lib
from guard_lib.runtime import CudaRuntime

driver.cuInit(0)
count = runtime.cudaGetDeviceCount()[1]
rt = CudaRuntime()

def states():
    return [int(driver.cuDevicePrimaryCtxGetState(driver.CUdevice(i))[2]) for i in range(count)]

result = {}
def body():
    result["before"] = states()
    result["device_before"] = int(runtime.cudaGetDevice()[1])
    exec(sys.argv[1])
    result["after"] = states()
    result["device_after"] = int(runtime.cudaGetDevice()[1])

thread = threading.Thread(target=body)
thread.start()
thread.join()
print(json.dumps(result))
"""


def device_count() -> int:
    from cuda.bindings import runtime

    code, count = runtime.cudaGetDeviceCount()
    return 0 if code else int(count)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    count = device_count()
    if count == 0:
        print("context_probe: no CUDA device here", file=sys.stderr)
        return 2
    results: dict[str, object] = {"devices": count}
    for name, (needed, statement) in SCENARIOS.items():
        if count < needed:
            results[name] = f"skipped: needs {needed} devices"
        else:
            run = subprocess.run(
                [sys.executable, "-c", CHILD, statement], capture_output=True, text=True, check=False
            )
            lines = run.stdout.strip().splitlines()
            results[name] = json.loads(lines[-1]) if run.returncode == 0 and lines else run.stderr[-2000:]
        print(f"{name}: {results[name]}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

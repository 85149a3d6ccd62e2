#!/usr/bin/env bash
# Prove guard_lib on a GPU host: build the compiled core, the whole suite on both runtimes against both
# implementations, the edits engine on the real runtime (cold: CUDA is not fork-safe once initialised),
# mutmut with the GPU configuration, the gate, and the benchmark of both implementations. Every step runs
# even if one before it failed; the outputs go to one folder and the exit status is the first failure's.
#   benchmarks/gpu_proof.sh [OUTDIR]          (default: reports/gpu)
#   PROOF_STEPS="build suite-compiled" benchmarks/gpu_proof.sh   (only these steps; default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-reports/gpu}"
mkdir -p "$out"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
# This checkout's guard_lib, not whatever copy an earlier install left on the path, is what gets measured.
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# A plain checkout on an offline host is not pip-installed, so pytest has no entry point for the plugin:
# register it by name (for the harness's children too). Installed, the entry point registers it.
if "$PY" -c "import importlib.metadata as m; m.distribution('guard-lib')" 2>/dev/null; then
    plugin="installed guard-lib (pytest plugin from its entry point)"
else
    export PYTEST_PLUGINS="guard_lib.testing${PYTEST_PLUGINS:+,$PYTEST_PLUGINS}"
    plugin="plain checkout on PYTHONPATH (pytest plugin by PYTEST_PLUGINS=guard_lib.testing)"
fi
status=0
step() {  # step NAME COMMAND...: run, keep its output, remember the first failure
    local name=$1; shift
    if [ -n "${PROOF_STEPS:-}" ] && [[ " $PROOF_STEPS " != *" $name "* ]]; then return 0; fi
    local start=$SECONDS
    "$@" >"$out/$name.txt" 2>&1
    local rc=$?
    echo "$name: exit $rc in $((SECONDS - start)) s" | tee -a "$out/steps.txt"
    if [ "$status" -eq 0 ] && [ "$rc" -ne 0 ]; then status=$rc; fi
}

# First, what this host is: printed and kept.
{
    echo "guard_lib: $plugin"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || echo "nvidia-smi: not found"
    "$PY" - <<'PY'
import importlib, platform
print("python", platform.python_version(), platform.machine())
for name in ("cuda.bindings", "cuda.core", "torch", "cupy", "pytest", "hypothesis", "mutmut", "libcst"):
    try:
        module = importlib.import_module(name)
        print(name, getattr(module, "__version__", "?"))
    except Exception as error:  # noqa: BLE001 - a report of what is there, not a check
        print(name, "not importable:", error)
try:
    from cuda.bindings import runtime
except ImportError as error:
    print("cuda.bindings not importable:", error)
else:
    err, count = runtime.cudaGetDeviceCount()
    print("devices:", count if not int(err) else f"none ({runtime.cudaGetErrorName(err)[1].decode()})")
    print("CUDA driver:", runtime.cudaDriverGetVersion()[1], "runtime:", runtime.cudaRuntimeGetVersion()[1])
PY
} 2>&1 | tee "$out/environment.txt"
if ! "$PY" -c "import mutmut, libcst" 2>/dev/null; then
    echo "note: mutmut or libcst is missing, so the mutmut step will fail; offline, carry the wheels docs/tests.md names"
fi

# The core, built in place for this host's Python; a build that fails is a failed step, not a fallback.
step build env GUARD_LIB_BUILD=compiled "$PY" setup.py -q build_ext --inplace --force
step suite-compiled env GUARD_LIB_IMPL=compiled "$PY" -m pytest -q -rs -p no:cacheprovider --junitxml="$out/suite-compiled.xml"
step suite-python env GUARD_LIB_IMPL=python "$PY" -m pytest -q -rs -p no:cacheprovider --junitxml="$out/suite-python.xml" tests/behaviour/test_*.py
step edits-cuda "$PY" -m guard_mutation run edits --runtime cuda --store "$out/store.json" --json "$out/edits-cuda.json"
step bench-same "$PY" benchmarks/bench_guard.py --runtime cuda --path same --json "$out/bench-cuda-same.json"
step bench-simulated "$PY" benchmarks/bench_guard.py --runtime simulated --json "$out/bench-simulated-same.json"
step profile-device "$PY" benchmarks/bench_guard.py --runtime cuda --profile "guard_lib.device [python]" --iterations 200000
if "$PY" -c "from cuda.bindings import runtime as r; raise SystemExit(r.cudaGetDeviceCount()[1] < 2)"; then
    step bench-switch "$PY" benchmarks/bench_guard.py --runtime cuda --path switch --json "$out/bench-cuda-switch.json"
fi
# mutmut reads ./pyproject.toml alone: its [tool.mutmut] takes the GPU keys for this run, and is put back.
rm -rf mutants
cp pyproject.toml "$out/pyproject.toml.orig"
"$PY" - <<'PY'
import re, sys
from pathlib import Path
gpu = Path("scripts/mutmut_gpu.toml").read_text().split("[tool.mutmut]\n", 1)[1]
keys = dict(line.split(" = ", 1) for line in gpu.splitlines() if " = " in line and not line.startswith("#"))
text = Path("pyproject.toml").read_text()
for key, value in keys.items():
    text = re.sub(rf"^{key} = .*$", f"{key} = {value}", text, count=1, flags=re.M)
    if f"{key} = {value}" not in text:
        text = text.replace("[tool.mutmut]\n", f"[tool.mutmut]\n{key} = {value}\n", 1)
Path("pyproject.toml").write_text(text)
PY
step mutmut mutmut run
cp "$out/pyproject.toml.orig" pyproject.toml
step mutmut-read "$PY" -m guard_mutation run mutmut --option from=results --store "$out/store.json"
step gate "$PY" -m guard_mutation gate --store "$out/store.json"
exit "$status"

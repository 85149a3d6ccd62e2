#!/usr/bin/env bash
# Prove guard_lib on a GPU host: the whole suite on both runtimes, the critical harness on the real
# runtime, mutmut with the GPU configuration, and the benchmark. Every step runs even if one before it
# failed; the outputs go to one folder and the exit status is the first failure's.
#   scripts/gpu_proof.sh [OUTDIR]          (default: reports/gpu)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-reports/gpu}"
mkdir -p "$out"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
# This checkout's guard_lib, not whatever copy an earlier install left on the path, is what gets measured.
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
status=0
step() {  # step NAME COMMAND...: run, keep its output, remember the first failure
    local name=$1; shift
    local start=$SECONDS
    "$@" >"$out/$name.txt" 2>&1
    local rc=$?
    echo "$name: exit $rc in $((SECONDS - start)) s" | tee -a "$out/steps.txt"
    if [ "$status" -eq 0 ] && [ "$rc" -ne 0 ]; then status=$rc; fi
}

{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    "$PY" - <<'PY'
import importlib, platform, sys
print("python", platform.python_version(), platform.machine())
for name in ("cuda.bindings", "cuda.core", "torch", "cupy", "pytest", "hypothesis", "mutmut"):
    try:
        module = importlib.import_module(name)
        print(name, getattr(module, "__version__", "?"))
    except Exception as error:  # noqa: BLE001 - a report of what is there, not a check
        print(name, "not importable:", error)
from cuda.bindings import runtime
print("cudaRuntimeGetVersion", runtime.cudaRuntimeGetVersion())
print("cudaDriverGetVersion", runtime.cudaDriverGetVersion())
print("cudaGetDeviceCount", runtime.cudaGetDeviceCount())
PY
} >"$out/environment.txt" 2>&1

step suite "$PY" -m pytest -q -rs -p no:cacheprovider --junitxml="$out/suite.xml"
step critical-cuda "$PY" scripts/critical_mutants.py run --runtime cuda --json "$out/critical-cuda.json"
step bench-same "$PY" scripts/bench_guard.py --runtime cuda --path same --json "$out/bench-cuda-same.json"
step bench-simulated "$PY" scripts/bench_guard.py --runtime simulated --json "$out/bench-simulated-same.json"
step profile-device "$PY" scripts/bench_guard.py --runtime cuda --profile guard_lib.device --iterations 200000
step context-probe "$PY" scripts/context_probe.py --json "$out/context-probe.json"
if "$PY" -c "from cuda.bindings import runtime as r; raise SystemExit(r.cudaGetDeviceCount()[1] < 2)"; then
    step bench-switch "$PY" scripts/bench_guard.py --runtime cuda --path switch --json "$out/bench-cuda-switch.json"
fi
rm -rf mutants
step mutmut "$PY" scripts/mutation_run.py run --override scripts/mutmut_gpu.toml --out "$out/mutmut-cuda.json"
step gate "$PY" scripts/mutation_gate.py --results "$out/mutmut-cuda.json" --critical "$out/critical-cuda.json"
exit "$status"

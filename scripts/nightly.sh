#!/usr/bin/env bash
# The nightly mutation sequence in one local command, the same steps as
# .github/workflows/nightly-mutation.yml (unsharded): mutmut, the sweep, critical harness, report, gate.
#   scripts/nightly.sh                      # whole package
#   scripts/nightly.sh --changed-since main # the proof of a change, as a pull request gets it: every
#                                           # engine scoped to the code changed since main
#                                           # (guard-mutation run --changed-since), the store untouched
#   scripts/nightly.sh --override scripts/mutmut_gpu.toml   # on a CUDA host (see docs/mutmut.md)
# Extra arguments go to `mutation_run.py run`. Exit status is the gate's: 0 pass, 1 findings, 2 bad input.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
# Check the environment before anything is touched: a missing tool must not cost tonight's mutants/.
if ! command -v "$PY" >/dev/null 2>&1; then
  echo "nightly.sh: no '$PY' on PATH; activate the project's venv or set PYTHON=/path/to/python" >&2
  exit 2
fi
if ! missing=$("$PY" - <<'PYCHECK' 2>&1
import importlib.util, sys
need = ["mutmut", "libcst", "pytest", "coverage", "guard_lib"]
gone = [name for name in need if importlib.util.find_spec(name) is None]
sys.exit(", ".join(gone) if gone else 0)
PYCHECK
); then
  echo "nightly.sh: $PY lacks ${missing}; install the tools first: pip install -e '.[test,dev]' -e ./scripts (see README)" >&2
  exit 2
fi
mkdir -p reports
if [ "${1:-}" = "--changed-since" ]; then
  [ $# -ge 2 ] || { echo "nightly.sh: --changed-since needs a git ref" >&2; exit 2; }
  exec "$PY" -m guard_mutation run --changed-since "$2" --markdown reports/scoped/summary.md "${@:3}"
fi
# a stale mutants/ from another commit or config would mix old verdicts into tonight's
rm -rf mutants

"$PY" scripts/mutation_run.py run --out reports/mutmut-results.json "$@"
"$PY" scripts/mutation_run.py survivors --results reports/mutmut-results.json --out reports/survivors.txt

# The harness's own exit status reports its findings; the gate below judges them from the JSON, so
# go on to write the reports either way.
"$PY" scripts/mutation_sweep.py run --out reports/sweep-results.json

harness_status=0
"$PY" scripts/critical_mutants.py run --json reports/critical.json || harness_status=$?
echo "critical harness exited with $harness_status"

# The compiled core: every one-line statement deleted in turn and rebuilt (a finding here fails the night).
deletions_status=0
"$PY" scripts/core_deletions.py --json reports/core-deletions.json || deletions_status=$?
echo "core deletions exited with $deletions_status"

"$PY" scripts/mutation_report.py --results reports/mutmut-results.json --critical reports/critical.json \
  --sweep reports/sweep-results.json --core-deletions reports/core-deletions.json \
  --json reports/mutation-report.json --html reports/mutation-report.html --markdown reports/mutation-summary.md
"$PY" scripts/mutation_gate.py --results reports/mutmut-results.json --critical reports/critical.json \
  --sweep reports/sweep-results.json --core-deletions reports/core-deletions.json
gate_status=$?
exit $(( gate_status ? gate_status : deletions_status ))

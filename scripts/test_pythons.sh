#!/usr/bin/env bash
# The behaviour suite (tests/behaviour) on every supported Python, on the compiled core and then on the
# Python reference, each Python in a venv of its own with the package installed editable with its test
# extra and the core built (GUARD_LIB_BUILD=compiled: a core that does not build fails the run).
#
#   scripts/test_pythons.sh [VENVS] [PYTEST_ARGS...]
#
# VENVS (default .venvs, ignored by git) holds one venv per Python, kept for the next run, and each one's
# logs. PYTEST_ARGS go to every pytest run (e.g. --deselect NODE). GUARD_LIB_PYTHONS="3.12 3.13" runs only
# those (CI's matrix runs one per job); JOBS (default 2) is how many Pythons run their suites at once.
# Each interpreter is pythonX.Y on PATH where that is the version, else pyenv's newest X.Y.
set -euo pipefail
cd "$(dirname "$0")/.."

SUPPORTED=(3.10 3.11 3.12 3.13)
venvs=.venvs
if [[ $# -gt 0 && $1 != -* ]]; then
    venvs=$1
    shift
fi
[[ ${1:-} == -- ]] && shift
mkdir -p "$venvs"
venvs=$(cd "$venvs" && pwd)
read -r -a versions <<<"${GUARD_LIB_PYTHONS:-${SUPPORTED[*]}}"
jobs_at_once=${JOBS:-2}

interpreter() {
    local version=$1 candidate root
    if candidate=$(command -v "python$version") &&
        [[ $("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) == "$version" ]]; then
        echo "$candidate"
        return
    fi
    root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
    # shellcheck disable=SC2012 # version-sorted names, not arbitrary file names
    candidate=$(ls -d "$root/versions/$version".*/bin/"python$version" 2>/dev/null | sort -V | tail -n 1)
    [[ -n $candidate ]] && echo "$candidate"
}

declare -A python_of
missing=()
for version in "${versions[@]}"; do
    if found=$(interpreter "$version"); then
        python_of[$version]=$found
    else
        missing+=("$version")
    fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "test_pythons: no interpreter for Python ${missing[*]} (neither python<X.Y> on PATH nor pyenv)" >&2
    exit 2
fi

make_venv() {
    local venv=$venvs/$1
    [[ -x $venv/bin/python ]] || "${python_of[$1]}" -m venv "$venv"
    # The build's own requirements first, so that the build uses this venv instead of making one.
    "$venv/bin/python" -m pip install -q 'setuptools>=77' 'Cython>=3.0'
}

# Every editable build translates guard_lib/_core.pyx into the same guard_lib/_core.c, which Cython
# rewrites in place: translated once here, before the builds run side by side, each finds it up to date.
for version in "${versions[@]}"; do
    rm -f "$venvs/$version".{status,summary,compiled.log,python.log}
    : >"$venvs/$version.install.log"
done
first=${versions[0]}
make_venv "$first" >>"$venvs/$first.install.log" 2>&1 || {
    cat "$venvs/$first.install.log" >&2
    exit 1
}
"$venvs/$first/bin/python" -c \
    "from Cython.Build import cythonize; cythonize(['guard_lib/_core.pyx'], language_level=3, quiet=True)"

one_python() {
    local version=$1 venv=$venvs/$1 impl line started status=0 summary=()
    shift
    started=$SECONDS
    if ! {
        make_venv "$version" &&
            GUARD_LIB_BUILD=compiled "$venv/bin/python" -m pip install -q --no-build-isolation -e '.[test]' &&
            "$venv/bin/python" -c 'import guard_lib, sys; sys.exit(guard_lib.IMPLEMENTATION != "compiled")'
    } >>"$venv.install.log" 2>&1; then
        echo 1 >"$venv.status"
        echo "Python $version: the install or the core's build failed (log: $venv.install.log)" >"$venv.summary"
        return
    fi
    summary+=("installed, core built [$((SECONDS - started)) s]")
    for impl in compiled python; do
        started=$SECONDS
        # Each Python keeps its own examples: one shared database would be written by several at once.
        if ! GUARD_LIB_IMPL=$impl HYPOTHESIS_STORAGE_DIRECTORY=$venv/.hypothesis \
            "$venv/bin/python" -m pytest tests/behaviour -q -p no:cacheprovider "$@" >"$venv.$impl.log" 2>&1; then
            status=1
        fi
        line=$(grep -E '^=* ?[0-9]+ (passed|failed|error)' "$venv.$impl.log" | tail -n 1 | tr -d '=' | sed 's/^ *//; s/ *$//')
        summary+=("$impl: ${line:-no summary, see $venv.$impl.log} [$((SECONDS - started)) s]")
    done
    echo "$status" >"$venv.status"
    local IFS=';'
    echo "Python $version ($("$venv/bin/python" -V 2>&1)): ${summary[*]}" | sed 's/;/; /g' >"$venv.summary"
}

for version in "${versions[@]}"; do
    while [[ $(jobs -rp | wc -l) -ge $jobs_at_once ]]; do
        wait -n || true
    done
    one_python "$version" "$@" &
done
wait

failed=()
for version in "${versions[@]}"; do
    if [[ ! -f $venvs/$version.status ]]; then
        echo "Python $version: did not finish (logs: $venvs/$version.*.log)"
        failed+=("$version")
        continue
    fi
    cat "$venvs/$version.summary"
    if [[ $(cat "$venvs/$version.status") != 0 ]]; then
        failed+=("$version")
        for impl in compiled python; do
            [[ -f $venvs/$version.$impl.log ]] || continue
            grep -E '^(FAILED|ERROR) tests/' "$venvs/$version.$impl.log" | sed "s/^/    $impl: /" || true
        done
    fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "test_pythons: failed on Python ${failed[*]} in $SECONDS s (logs: $venvs/<version>.*.log)" >&2
    exit 1
fi
echo "test_pythons: the behaviour suite passed on Python ${versions[*]}, on both implementations, in $SECONDS s"

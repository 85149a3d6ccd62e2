"""mutmut in a child process: starting it, logging its output, and the hooks the child sets before mutmut.

The one module that imports mutmut (its private modules too, each pinned by mutmut's version in
pyproject.toml and exercised by the tooling's tests); every import is inside the function that needs it.

The child is ``mutation_run.py`` itself (its private ``_mutmut``, ``_generate`` and ``_stats`` commands),
so the parent never imports pytest, the test suite or CUDA.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mutation_io import InputError, read_toml
from mutation_scope import named

RUN_SCRIPT = Path(__file__).resolve().with_name("mutation_run.py")
IMPL_ENV = "GUARD_LIB_IMPL"
OVERRIDE_ENV = "GUARD_LIB_MUTMUT_OVERRIDE"


def run_child(args: list[str], override: Path | None) -> int:
    """``mutation_run.py ARGS`` in a child that tests the Python reference, its output logged here."""
    cmd = [sys.executable, str(RUN_SCRIPT), *args]
    env = dict(os.environ)
    # mutmut mutates the Python reference, so the tests must import it rather than the compiled core.
    # guard_lib takes it by itself in mutmut's copy; by name here, so an exported GUARD_LIB_IMPL cannot
    # turn a sharded or scoped run into one whose tests never reach a mutant.
    env[IMPL_ENV] = "python"
    if override is not None:
        env[OVERRIDE_ENV] = str(override)
    if sys.stdout.isatty():
        return subprocess.run(cmd, env=env, check=False).returncode
    # Into a log: mutmut's spinner frames would pile up on one line; keep each line's last frame.
    # Bytes, split on "\n" only: text mode would turn every "\r" of a redrawn line into a line of its own.
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as proc:
        assert proc.stdout is not None
        previous = None
        for raw in proc.stdout:
            cleaned = log_line(raw.decode("utf-8", errors="replace"))
            if cleaned is not None and cleaned != previous:
                print(cleaned, flush=True)
            previous = cleaned
    return proc.returncode


_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def log_line(line: str) -> str | None:
    """A line of mutmut's output as a log should hold it: the last frame of a line redrawn in place,
    without its spinner; None for what a log does not need (a note about copying a file that is absent)."""
    frame = line.rstrip("\n").split("\r")[-1].rstrip()
    if frame[:1] in _SPINNER and frame[1:2] == " ":
        frame = frame[2:]
    words = frame.split()
    if words[:2] == ["also", "copying"] and len(words) == 3 and not Path(words[2]).exists():
        return None
    return frame if frame.strip() else None


def _install_override() -> None:
    """Layer ``[tool.mutmut]`` of ``$GUARD_LIB_MUTMUT_OVERRIDE`` over pyproject's, before mutmut reads it.

    mutmut 3.8 has no --config option or env var; it reads ./pyproject.toml once through
    ``mutmut.configuration._config_reader``, so wrapping that reader is the narrowest hook.
    """
    path = os.environ.get(OVERRIDE_ENV)
    if not path:
        return
    extra = read_toml(Path(path)).get("tool", {}).get("mutmut", {})
    if not isinstance(extra, dict) or not extra:
        raise InputError(f"{path}: has no [tool.mutmut] table to override with")
    from mutmut import configuration

    base_reader = configuration._config_reader

    def reader() -> Any:
        base = base_reader()

        def lookup(key: str, default: Any) -> Any:
            return extra[key] if key in extra else base(key, default)

        return lookup

    configuration._config_reader = reader
    configuration.reset_config()


def _run_fastest_tests_first_in_forkserver() -> None:
    """Give the fork server's workers a mutant's tests fastest first, as mutmut's fork runner does.

    mutmut 3.8's ``ForkRunner`` sorts a mutant's tests by their stats-pass duration before ``pytest -x``,
    so the cheapest failing test kills the mutant; ``ForkServerRunner.submit`` passes them in set order
    (random from run to run), so a mutant could first meet the hypothesis state machine, which shrinks a
    failure for longer than mutmut's wall timeout: a "timeout" verdict, slower, and different from the
    fork run's "killed". Sorting here (by duration, then name) restores the fork runner's order.
    """
    from mutmut.state import state
    from mutmut.workers.isolation import ForkServerRunner

    submit = ForkServerRunner.submit

    def fastest_first(
        self: ForkServerRunner, mutant_name: str, tests: list[str], cpu_time_limit: int, estimated_time: float
    ) -> None:
        durations = state().duration_by_test
        ordered = sorted(tests, key=lambda test: (durations.get(test, 0.0), test))
        submit(self, mutant_name, ordered, cpu_time_limit, estimated_time)

    ForkServerRunner.submit = fastest_first  # type: ignore[method-assign]


def _prepare_child_process() -> None:
    # this script's directory must not shadow anything the tests import
    script_dir = str(RUN_SCRIPT.parent)
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(script_dir)]
    _install_override()
    _run_fastest_tests_first_in_forkserver()


def child_mutmut(argv: list[str]) -> int:
    _prepare_child_process()
    from mutmut.__main__ import cli

    try:
        cli.main(args=argv, prog_name="mutmut", standalone_mode=True)
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    return 0


def child_generate(max_children: int) -> int:
    """The mutant-generation prefix of ``mutmut run``: writes mutants/ and the .meta name lists.

    It runs no test, so listing or sharding the mutants costs seconds; the later ``mutmut run``
    finds the files up to date (mutmut compares mtimes) and keeps the same names.
    """
    _prepare_child_process()
    # imported only after the override is installed; mutmut.__main__ also sets the fork start method
    from mutmut.__main__ import create_mutants, store_lines_covered_by_tests
    from mutmut.utils.file_utils import (
        copy_also_copy_files,
        copy_src_dir,
        setup_source_paths,
    )

    Path("mutants").mkdir(exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    store_lines_covered_by_tests()
    stats = create_mutants(max_children)
    print(f"generated mutants: {stats.mutated} files mutated, {stats.unmodified} unchanged")
    return 0


def child_stats(out: Path, targets: list[str]) -> int:
    """mutmut's stats run for the tests ``targets`` name alone, written to ``out`` as the functions each
    reaches (mangled name -> node ids), not into mutmut's own record: a scoped run reads what a new or
    changed test reaches now, and mutmut's next run keeps its record's baseline as it was."""
    _prepare_child_process()
    # mutmut.__main__ first, as every child here: it sets the start method its workers fork with
    from mutmut.__main__ import CatchOutput
    from mutmut.configuration import config
    from mutmut.mutation.trampoline import set_mutant_under_test
    from mutmut.state import state
    from mutmut.utils.file_utils import setup_source_paths
    from mutmut.workers.isolation import get_mutant_runner

    setup_source_paths()  # the tests import the package from mutmut's copy, where its trampolines record
    runner = get_mutant_runner(1)
    found: dict[str, list[str]] = {}
    # pytest's listing of every test, and its dots, are shown only where the stats run fails
    with CatchOutput(spinner_title="Stats of the changed tests") as caught:
        try:
            chosen = sorted(t for t in runner.list_all_tests().ids if named(t, targets))
            # none (only removed tests): nothing to record, where an empty list would run them all
            if chosen:
                # what mutmut's own stats run sets first (mutmut.__main__.run_stats_collection)
                set_mutant_under_test("stats")
                os.environ["PY_IGNORE_IMPORTMISMATCH"] = "1"
                os.environ["MUTMUT_DEPENDENCY_DEPTH"] = str(config().dependency_tracking_depth)
                if runner.collect_stats(chosen) != 0:
                    raise RuntimeError("a changed test failed")
        except Exception as exc:  # mutmut's own collection error included: the caller judges everything
            caught.dump_output()
            print(f"mutmut: no stats run of the changed tests ({type(exc).__name__}: {exc})")
            return 1
    found = {f: sorted(t) for f, t in state().tests_by_mangled_function_name.items() if t}
    out.write_text(json.dumps({"tests": chosen, "tests_by_mangled_function_name": found}), encoding="utf-8")
    return 0


def function_texts(name: str, source_path: str) -> tuple[str, str]:
    """The unmutated copy and the mutant of a function, exactly as ``mutmut show`` diffs them."""
    # imported here, as every mutmut import of this module is: the parent process never loads mutmut
    import libcst as cst
    from mutmut.mutation.diff_apply import (
        read_functions_from_index,
        read_mutant_function,
        read_mutants_module,
        read_original_function,
    )

    functions = read_functions_from_index(name, source_path)
    if functions is None:
        module = read_mutants_module(source_path)
        functions = (read_original_function(module, name), read_mutant_function(module, name))
    orig, mutant = (cst.Module([function]).code.strip() for function in functions)
    return orig, mutant

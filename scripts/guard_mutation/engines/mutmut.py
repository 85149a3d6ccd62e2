"""The mutmut engine: plain ``mutmut run`` (mutmut 3.8, configured by ``[tool.mutmut]``) as users type it,
its results in ``mutants/`` read into this tool's records, and the one reuse rule around its cache.

mutmut keeps a verdict while its function's text is unchanged, even when the test that killed it changed.
So each outcome carries ``depends``: a digest of the mutant's diff, the code of the package and of the
helpers beside the tests, the code of the test files that reached its function (``mutmut-stats.json``),
``[tool.mutmut]``, ``[tool.pytest.ini_options]``, mutmut's version and the interpreter. Before mutmut
runs, each verdict in ``mutants/`` whose ``depends`` is not the previous run's is cleared from its
``.meta``; an outcome is reused only where the digest is the same; with nothing left to judge, mutmut is
not started. mutmut records the functions a test reaches for new tests alone, so a test file edited since
its last run is made new to it, and a kept verdict whose inputs that changes is judged in a second
``mutmut run NAMES``. Options: ``from=results`` reads a ``mutmut run`` made before, and runs nothing.
"""

from __future__ import annotations

import filecmp
import fnmatch
import json
import logging
import os
import shutil
import subprocess
import sys
from collections import deque
from collections.abc import Iterable, Sequence
from importlib.metadata import distributions
from pathlib import Path
from subprocess import PIPE, STDOUT
from typing import Any

from .. import reuse
from ..model import Mutant, Outcome, Record, Run
from . import EngineError, Request
from .mutmut_results import MUTANTS, STATS, State, function_key, key_of

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

logger = logging.getLogger(__name__)

TEST_FILES = ("test_*.py", "*_test.py")  # pytest's python_files unless [tool.pytest.ini_options] says
CODE = (".py", ".pyx", ".pxd")
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
# The generation step of `mutmut run` alone (its start, up to the stats), for a listing and the selection.
GENERATE = """import os, sys
from mutmut.__main__ import create_mutants, store_lines_covered_by_tests
from mutmut.configuration import config
from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths
os.makedirs("mutants", exist_ok=True)
copy_src_dir()
if config().mutate_only_covered_lines:
    copy_also_copy_files(); setup_source_paths(); store_lines_covered_by_tests()
create_mutants(int(sys.argv[1]))
"""


class MutmutEngine:
    name = "mutmut"

    def mutants(self, request: Request) -> Sequence[Mutant]:
        """Every mutant of mutmut's generation step (run here where ``mutants/`` is older than the code)."""
        _generate(request, _tool(request.root)["mutmut"])
        state = State(request.root, "")
        return [state.mutant(n) for n in state.names()]

    def run(self, request: Request) -> Run:
        root, tool, reading = request.root, _tool(request.root), request.options.get("from") == "results"
        changed = set() if reading else _prepare(request, tool["mutmut"])
        base = _base(root, tool)
        state, kept = State(root, base), dict[str, Outcome]()
        if not reading:
            held = [n for n, e in state.entries.items() if e.exit_code is not None]
            kept = {n: o for n in held if (o := reuse.kept(request.previous, n, state.depends(n)))}
            state.clear(set(held) - kept.keys())
            state.forget_tests(changed)
            if request.whole and not kept:
                (state.dir / STATS).unlink(missing_ok=True)  # nothing kept: mutmut records every reach anew
        scope = _scope(request, state)
        todo = [n for n in scope if n not in kept]
        # [] is plain `mutmut run`: it judges every mutant without a result, and records what the tests of
        # a changed file reach even where there is none
        due = not reading and bool(todo or (changed and request.whole))
        names = ([] if request.whole else todo) if due else None
        ran, judged = names is not None, set[str]()
        while names is not None:
            _mutmut(request, names)
            state = State(root, base)
            judged |= set(names) or set(state.entries) - kept.keys()
            scope = _scope(request, state)
            # a kept verdict whose function the changed tests reach now (as this run recorded) goes again
            now = {n: state.depends(n) for n in scope if n not in judged}
            again = [n for n, depends in now.items() if depends != getattr(kept.get(n), "depends", "")]
            kept, names = {n: o for n, o in kept.items() if n not in again}, again or None
        records = [Record(state.mutant(n), kept.get(n) or state.outcome(n)) for n in scope]
        reused = sum(r.outcome.reused for r in records)
        how = "read from mutants/, nothing run" if reading else "mutmut ran" if ran else "mutmut was not run"
        notes = [f"{how}: {reused} reused, {len(records) - reused} judged; mutmut names no killing test"]
        notes += ["not `full`: mutmut runs a mutant's tests as its stats name them"] * request.full
        return Run(self.name, tuple(records), request.whole, tuple(notes))


ENGINE = MutmutEngine()


def _scope(request: Request, state: State) -> list[str]:
    """The mutants the request asks for: ``only`` (every one must exist), or those of the functions the
    change touches and of the functions its changed tests reached, or all."""
    names = state.names()
    if request.only:
        unknown = sorted(set(request.only) - set(names))
        if unknown:
            raise EngineError(f"mutmut has no mutant named {', '.join(unknown[:5])}")
        return [n for n in names if n in request.only]
    change = request.change
    if change is None:
        return names
    keys = {k for k, tests in state.tests.items() if any(change.changed_test(t) for t in tests)}
    for function in change.functions:
        module, _, qualname = function.partition(":")
        parts = qualname.split(".")
        path = module.replace(".", "/")
        for file in [f for f in (f"{path}.py", f"{path}/__init__.py") if (state.root / f).is_file()]:
            found = state.source(file)[1]
            # mutmut mutates a nested function as a part of the function or method that holds it
            holding = [".".join(parts[:k]) for k in range(len(parts), 0, -1) if ".".join(parts[:k]) in found]
            keys |= {key_of(module, holding[0])} if holding else set()
    return [n for n in names if function_key(n) in keys]


def _base(root: Path, tool: dict[str, Any]) -> str:
    """What every verdict depends on: the package's code and the tests' helpers, the settings, the tools."""
    package = [p for p in _files(root, tool["mutmut"].get("source_paths") or []) if p.suffix in CODE]
    code = reuse.files_digest(root, [*package, *_helpers(root, tool)])
    mutmut = [d.version for d in distributions(name="mutmut")]
    return reuse.digest([reuse.interpreter(), *mutmut, json.dumps(tool, sort_keys=True, default=str), code])


def _tool(root: Path) -> dict[str, Any]:
    """pyproject.toml's ``[tool]`` table, with ``pytest`` its ``ini_options``."""
    path = root / "pyproject.toml"
    try:
        tool = tomllib.loads(path.read_text(encoding="utf-8") if path.is_file() else "").get("tool") or {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise EngineError(f"{path}: cannot read it: {exc}") from exc
    return {"mutmut": tool.get("mutmut") or {}, "pytest": (tool.get("pytest") or {}).get("ini_options") or {}}


def _files(root: Path, where: Iterable[str]) -> list[Path]:
    found: list[Path] = []
    for place in map(root.joinpath, where):
        below = sorted(place.rglob("*")) if place.is_dir() else [place] if place.is_file() else []
        found += [p for p in below if p.is_file() and "__pycache__" not in p.parts]
    return found


def _selection(root: Path, tool: dict[str, Any]) -> list[str]:
    chosen = tool.get("mutmut", {}).get("pytest_add_cli_args_test_selection") or ["tests", "test"]
    return [str(p).rstrip("/") for p in chosen if not str(p).startswith("-") and (root / str(p)).exists()]


def _helpers(root: Path, tool: dict[str, Any]) -> list[Path]:
    """What any test may use beside the tests: conftest files up to the root, and every module of the
    test folders that pytest does not collect."""
    patterns = tool.get("pytest", {}).get("python_files") or TEST_FILES
    patterns = patterns.split() if isinstance(patterns, str) else patterns
    found = set()
    for where in _selection(root, tool):
        modules = [p for p in _files(root, [where]) if p.suffix == ".py"]
        found |= {p for p in modules if not any(fnmatch.fnmatch(p.name, x) for x in patterns)}
        found |= {d / "conftest.py" for d in (root / where).parents if d.is_relative_to(root)}
    return sorted(found)


def _same(one: Path, other: Path) -> bool:
    return other.is_file() and filecmp.cmp(one, other, shallow=False)


def _prepare(request: Request, table: dict[str, Any]) -> set[str]:
    """Make ``mutants/`` what mutmut would make of today's project, and return the test files edited since
    mutmut's last run (which copies them). mutmut never removes a copied test file the project has no
    more, nor copies again a built file (the compiled core) rebuilt since: both are done here."""
    root, mutants = request.root, request.root / MUTANTS
    copied = [c for c in ["tests", "test", *map(str, table.get("also_copy") or [])] if (mutants / c).is_dir()]
    for path in _files(mutants, copied):
        if not (root / path.relative_to(mutants)).exists():
            logger.info("mutmut: %s is gone from the project, so from mutants/", path.relative_to(mutants))
            path.unlink()
    for path in _files(root, table.get("source_paths") or []):
        copy = mutants / path.relative_to(root)
        if path.suffix != ".py" and copy.is_file() and not _same(path, copy):
            logger.info("mutmut: %s was built since mutmut copied it: copied again", path.relative_to(root))
            shutil.copy2(path, copy)
    tests = [p for p in _files(root, _selection(root, {"mutmut": table})) if p.suffix == ".py"]
    changed = {p.relative_to(root).as_posix() for p in tests if not _same(p, mutants / p.relative_to(root))}
    _generate(request, table)
    return changed


def _generate(request: Request, table: dict[str, Any]) -> None:
    """mutmut's generation step, where a source file is newer than its mutants (mutmut's own test)."""
    root = request.root
    sources = [p for p in _files(root, table.get("source_paths") or []) if p.suffix == ".py"]
    copies = {p: root / MUTANTS / p.relative_to(root) for p in sources}
    if sources and all(c.is_file() and p.stat().st_mtime < c.stat().st_mtime for p, c in copies.items()):
        return
    command = [sys.executable, "-c", GENERATE, str(request.jobs or os.cpu_count() or 1)]
    env = {**os.environ, "MUTANT_UNDER_TEST": "mutant_generation"}
    logger.info("mutmut: generating the mutants")
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise EngineError(f"mutmut's generation step failed in {root}: {done.stderr.strip()[-2000:]}")


def _mutmut(request: Request, names: list[str]) -> None:
    """``mutmut run [--max-children N] [NAMES]`` in the project, its output logged line by line."""
    script = Path(sys.executable).with_name("mutmut")
    command = [str(script) if script.is_file() else "mutmut", "run"]
    command += [*(["--max-children", str(request.jobs)] if request.jobs else []), *names]
    logger.info("mutmut run %s", f"({len(names)} named mutants)" if names else "")
    env = {**os.environ, "GUARD_LIB_TEST_RUNTIME": request.runtime}
    tail: deque[str] = deque(maxlen=20)
    try:
        with subprocess.Popen(command, cwd=request.root, env=env, stdout=PIPE, stderr=STDOUT) as process:
            assert process.stdout is not None
            for raw in process.stdout:
                # a line redrawn in place (mutmut's spinner and progress) is logged as its last frame
                line = raw.decode("utf-8", errors="replace").rstrip("\n").split("\r")[-1].strip()
                line = line[2:] if line[:1] in SPINNER else line
                if line and (not tail or line != tail[-1]):
                    tail.append(line)
                    logger.info("mutmut: %s", line)
    except OSError as exc:
        raise EngineError(f"cannot start {command[0]}: {exc}; install mutmut 3.8") from exc
    if process.returncode != 0:
        said = " | ".join(list(tail)[-6:])
        raise EngineError(f"`mutmut run` failed (exit status {process.returncode}) in {request.root}: {said}")

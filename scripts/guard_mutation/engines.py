"""The engines, registered by entry point: how each runs, lists, shows, and reads and merges its results.

Each engine keeps its own command line and results format; an adapter here is all the tool knows of it:
how it runs (whole, a shard, or scoped to a change), lists, shows, reads, merges, and judges a scoped run.
Adding an engine is one adapter and its entry point in ``GROUP`` (scripts/pyproject.toml); ``ENGINES`` holds
what is registered there. Modules are imported when used, so that
``guard-mutation --help`` loads no engine (nor mutmut).
"""

from __future__ import annotations

import importlib
import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .scoped import Judged

if TYPE_CHECKING:
    from mutation_model import Run


class EngineError(Exception):
    """An engine's results that its own reader refuses, or cannot merge."""


@dataclass(frozen=True)
class RunOptions:
    shard: str | None = None  # "I/N"
    jobs: int | None = None
    changed_since: str | None = None  # a git ref: only what a change since it selects
    # each engine's earlier whole run, by engine: the verdicts whose inputs are unchanged are kept
    reuse: Mapping[str, Path] = field(default_factory=dict)

    def scope(self) -> list[str]:
        return [] if self.changed_since is None else ["--changed-since", self.changed_since]


def _through_file(document: Mapping[str, Any], read: Callable[[Path], Any], label: str = "results") -> Any:
    # The engines read their results from files: hand them one, and name it as the caller knows it.
    with tempfile.TemporaryDirectory(prefix="guard-mutation-") as scratch:
        path = Path(scratch) / "results.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        try:
            return read(path)
        except EngineError as exc:
            raise EngineError(str(exc).replace(str(path), label)) from exc


def _written(write: Callable[[Path], None]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="guard-mutation-") as scratch:
        path = Path(scratch) / "merged.json"
        write(path)
        document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return document


@dataclass(frozen=True)
class Engine:
    name: str
    summary: str
    run: Callable[[RunOptions, Path], int]  # writes the results to the path; the engine's exit status
    read: Callable[[Path], Any]  # the engine's own reader: EngineError where it refuses the file
    list: Callable[[Sequence[str]], int]
    show: Callable[[str], int]
    merge: Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]
    # a run scoped to a change (results, config) -> its verdicts, judged against the reviews
    judge_scoped: Callable[[Path, Path], Judged]
    # a whole run's results file -> its records, the one model the store holds and the gate reads
    records: Callable[[Path], Run]

    def is_shard(self, document: Mapping[str, Any]) -> bool:
        return document.get("shard") is not None

    def check(self, document: Mapping[str, Any], label: str) -> None:
        """EngineError where the engine's own reader refuses ``document`` (``label`` names it)."""
        _through_file(document, self.read, label)

    def run_of(self, document: Mapping[str, Any], label: str) -> Run:
        """``document`` (a whole run) as records; EngineError where it is partial or refused."""
        run: Run = _through_file(document, self.records, label)
        return run


def _command(module: str, command: str) -> Callable[..., int]:
    """``module``'s own command line (its ``main``), imported when called, with ``command`` first."""

    def call(*args: str) -> int:
        main: Callable[[list[str]], int] = importlib.import_module(module).main
        return main([command, *args])

    return call


def _list(module: str) -> Callable[[Sequence[str]], int]:
    command = _command(module, "list")
    return lambda args: command(*args)


# --- the critical-mutant catalogue --------------------------------------------------------------------


def _catalogue_run(options: RunOptions, out: Path) -> int:
    from critical_harness.cli import main

    argv = ["run", "--json", str(out), *options.scope()]
    if "catalogue" in options.reuse:
        argv += ["--reuse", str(options.reuse["catalogue"])]
    if options.jobs is not None:
        argv += ["--jobs", str(options.jobs)]
    return main(argv)


def _records(module: str, reader: str) -> Callable[[Path], Any]:
    """``module.reader`` (a ``mutation_records`` reader), imported when called; EngineError for bad input."""

    def read(path: Path) -> Any:
        from mutation_io import InputError

        try:
            return getattr(importlib.import_module(module), reader)(path)
        except InputError as exc:
            raise EngineError(str(exc)) from exc

    return read


_catalogue_read = _records("mutation_records", "read_critical")


def _catalogue_judge(results: Path, config: Path) -> Judged:
    from mutation_records import read_critical

    records = read_critical(results).records
    alive = tuple(r for r in records if r.outcome.status != "killed")
    return Judged("catalogue", killed=len(records) - len(alive), not_killed=alive)


def _catalogue_merge(documents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    raise EngineError("the catalogue runs whole, never in shards: there is nothing to merge")


# --- mutmut ---------------------------------------------------------------------------------------------


def _mutmut_run(options: RunOptions, out: Path) -> int:
    from mutation_run import main

    argv = ["run", "--out", str(out), *options.scope()]
    if "mutmut" in options.reuse:
        argv += ["--reuse", str(options.reuse["mutmut"])]
    if options.shard:
        argv += ["--shard", options.shard]
    if options.jobs is not None:
        argv += ["--max-children", str(options.jobs)]
    return main(argv)


def _mutmut_read(path: Path) -> Any:
    from mutation_common import load_results
    from mutation_io import InputError

    try:
        return load_results(path, hint="guard-mutation run mutmut")
    except InputError as exc:
        raise EngineError(str(exc)) from exc


def _mutmut_show(mutant_id: str) -> int:
    import subprocess
    import sys

    # mutmut's own command shows its mutants; it reads ./mutants, which a run left.
    return subprocess.run([sys.executable, "-m", "mutmut", "show", mutant_id], check=False).returncode


def _mutmut_judge(results: Path, config: Path) -> Judged:
    from mutation_common import load_results
    from mutation_evaluation import EXCLUDED, KILLED
    from mutation_gate_config import equivalent_matches, load_gate_config
    from mutation_records import mutmut_run

    reviews = load_gate_config(config).equivalents
    hint = "guard-mutation run mutmut --changed-since REF"
    records = mutmut_run(load_results(results, hint=hint), whole=False).records
    killed = sum(r.outcome.status in KILLED for r in records)
    skipped = sum(r.outcome.status in EXCLUDED for r in records)
    rest = [r for r in records if r.outcome.status not in KILLED | EXCLUDED]
    reviewed = [
        r
        for r in rest
        if r.outcome.status == "survived" and any(equivalent_matches(e, r.mutant) for e in reviews)
    ]
    alive = tuple(r for r in rest if r not in reviewed)
    return Judged("mutmut", killed, len(reviewed), skipped, alive)


def _mutmut_merge(documents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    from mutation_io import InputError
    from mutation_shards import merge_results

    try:
        merged = merge_results([_through_file(d, _mutmut_read) for d in documents])
    except InputError as exc:
        raise EngineError(str(exc)) from exc
    return _written(merged.write)


# --- the line sweep -----------------------------------------------------------------------------------


def _sweep_run(options: RunOptions, out: Path) -> int:
    from mutation_sweep.cli import main

    argv = ["run", "--out", str(out), *options.scope()]
    if "sweep" in options.reuse:
        argv += ["--reuse", str(options.reuse["sweep"])]
    if options.shard:
        argv += ["--shard", options.shard]
    if options.jobs is not None:
        argv += ["--jobs", str(options.jobs)]
    return main(argv)


def _sweep_read(path: Path) -> Any:
    from mutation_sweep.results import ResultsError, load

    try:
        return load(path)
    except ResultsError as exc:
        raise EngineError(str(exc)) from exc


def _sweep_judge(results: Path, config: Path) -> Judged:
    from mutation_model import KILLED, TIMEOUT
    from mutation_records import read_sweep
    from mutation_sweep.config import load
    from mutation_sweep.work_item import INVALID

    reviews = load(config).equivalents
    found = read_sweep(results, whole=False).records
    killed = sum(r.outcome.status in (KILLED, TIMEOUT) for r in found)
    skipped = sum(r.outcome.status == INVALID for r in found)
    rest = [r for r in found if r.outcome.status not in (KILLED, TIMEOUT, INVALID)]
    reviewed = [r for r in rest if any(e.matches(r.mutant) for e in reviews)]
    alive = tuple(r for r in rest if r not in reviewed)
    return Judged("sweep", killed, len(reviewed), skipped, alive)


def _sweep_merge(documents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    from mutation_sweep.results import ResultsError, merge

    try:
        merged = merge([_through_file(d, _sweep_read) for d in documents])
    except ResultsError as exc:
        raise EngineError(str(exc)) from exc
    return _written(merged.write)


CATALOGUE = Engine(
    "catalogue",
    "the named critical mutants (mutation_config.toml [[mutant]]), each killed by its named tests",
    _catalogue_run,
    _catalogue_read,
    _list("critical_harness.cli"),
    _command("critical_harness.cli", "show"),
    _catalogue_merge,
    _catalogue_judge,
    _records("mutation_records", "read_critical"),
)

MUTMUT = Engine(
    "mutmut",
    "mutmut 3.8 over the reference's function bodies",
    _mutmut_run,
    _mutmut_read,
    _list("mutation_run"),
    _mutmut_show,
    _mutmut_merge,
    _mutmut_judge,
    _records("mutation_records", "read_mutmut"),
)

SWEEP = Engine(
    "sweep",
    "every executable line of the Python and the core's Cython, by the sweep's operators",
    _sweep_run,
    _sweep_read,
    _list("mutation_sweep.cli"),
    _command("mutation_sweep.cli", "show"),
    _sweep_merge,
    _sweep_judge,
    _records("mutation_records", "read_sweep"),
)


GROUP = "guard_mutation.engines"  # the entry-point group every engine registers in (scripts/pyproject.toml)


def registered() -> dict[str, Engine]:
    """Every engine installed under ``GROUP``, by name: the one place the tool learns of one."""
    found: dict[str, Engine] = {}
    for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
        try:
            engine = point.load()
        except Exception as exc:  # a plug-in's import may fail any way; name it, never a traceback
            raise EngineError(f"engine {point.name!r} ({point.value}) does not load: {exc}") from exc
        if not isinstance(engine, Engine) or engine.name != point.name:
            raise EngineError(f"engine {point.name!r} ({point.value}) is not an Engine of that name")
        found[point.name] = engine
    if not found:
        raise EngineError(f"no engine is registered under {GROUP!r}: is guard-mutation installed?")
    return found


def _registry() -> tuple[dict[str, Engine], str | None]:
    try:
        return registered(), None
    except EngineError as exc:
        return {}, str(exc)


# Read once, on import; a registry that cannot be read is the command's error (exit 2), not the import's.
ENGINES, REGISTRY_ERROR = _registry()


def engine_of(mutant_id: str) -> Engine:
    """The engine that names its mutants so: the sweep's ``sweep-…``, the core deletions' ``deletion-…``,
    mutmut's ``…__mutmut_N``, else the catalogue's."""
    if mutant_id.startswith("sweep-"):
        return ENGINES["sweep"]
    if mutant_id.startswith("deletion-"):
        return ENGINES["core-deletions"]
    if "__mutmut_" in mutant_id:
        return ENGINES["mutmut"]
    return ENGINES["catalogue"]

"""Shared pieces of the mutmut CI tooling: result files, mutant naming, sharding, change scoping.

Nothing here imports mutmut, pytest or guard_lib, so the gate, the report and the merge step run on
a machine that only has the exported JSON (a CI job that downloaded shard artifacts).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from mutation_config_file import ConfigFileError, read_config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib

RESULTS_FORMAT = "guard-lib-mutmut-results"
RESULTS_VERSION = 1

# Mirrors mutmut 3.8's ``mutmut.stats.status_by_exit_code`` (a test pins the two together), copied
# so reading results never needs mutmut importable. Anything unmapped is "suspicious", as in mutmut.
STATUS_BY_EXIT_CODE: dict[int | None, str] = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    2: "check was interrupted by user",
    None: "not checked",
    33: "no tests",
    34: "skipped",
    35: "suspicious",
    36: "timeout",
    37: "caught by type check",
    -24: "timeout",
    24: "timeout",
    152: "timeout",
    255: "timeout",
    -11: "segfault",
    -9: "segfault",
}

CLASS_SEPARATOR = "ǁ"


class InputError(Exception):
    """Bad or missing input: the CLI turns it into exit status 2 with the message."""


def status_for_exit_code(exit_code: int | None) -> str:
    return STATUS_BY_EXIT_CODE.get(exit_code, "suspicious")


@dataclass(frozen=True)
class MutantName:
    """A mutmut mutant name split into the parts that stay stable when code elsewhere changes."""

    name: str
    module: str
    mangled: str  # x_func / xǁClassǁmethod, without the __mutmut_N suffix
    qualname: str  # func / Class.method
    number: int

    @property
    def function(self) -> str:
        """``module:qualname``: the key reviewers write in ``[[equivalent]]`` entries."""
        return f"{self.module}:{self.qualname}"

    @property
    def function_key(self) -> str:
        """The prefix mutmut itself uses for stats and globs (``module.mangled``)."""
        return f"{self.module}.{self.mangled}"


_NAME_RE = re.compile(r"^(?P<prefix>.+)__mutmut_(?P<number>\d+)$")


def parse_mutant_name(name: str) -> MutantName:
    match = _NAME_RE.match(name)
    if not match:
        raise InputError(f"not a mutmut mutant name: {name!r}")
    prefix = match["prefix"]
    parts = prefix.split(".")
    # Scan from the right: a module may itself be called x_something, the function part is last.
    for index in range(len(parts) - 1, -1, -1):
        if parts[index].startswith(("x_", "x" + CLASS_SEPARATOR)):
            module = ".".join(parts[:index])
            mangled = ".".join(parts[index:])
            break
    else:
        raise InputError(f"mutant name has no x_/x{CLASS_SEPARATOR} function part: {name!r}")
    if mangled.startswith("x" + CLASS_SEPARATOR):
        _, class_name, method = mangled.split(CLASS_SEPARATOR, 2)
        qualname = f"{class_name}.{method}"
    else:
        qualname = mangled[2:]
    number = int(match["number"])
    return MutantName(name=name, module=module, mangled=mangled, qualname=qualname, number=number)


def mangle(qualname: str) -> str:
    """``Class.method`` -> ``xǁClassǁmethod``; ``func`` -> ``x_func`` (mutmut's scheme)."""
    if "." in qualname:
        class_name, method = qualname.split(".", 1)
        return f"x{CLASS_SEPARATOR}{class_name}{CLASS_SEPARATOR}{method}"
    return f"x_{qualname}"


def module_for_path(path: str | Path) -> str:
    """``guard_lib/device_guard.py`` -> ``guard_lib.device_guard``, the way mutmut names modules."""
    p = Path(path)
    dotted = ".".join(p.with_suffix("").parts)
    dotted = dotted.removeprefix("src.")
    return dotted.removesuffix(".__init__")


def diff_sides(diff: str) -> tuple[list[str], list[str]]:
    """The removed and added lines of a unified diff, without the +/- marker and outer whitespace."""
    removed: list[str] = []
    added: list[str] = []
    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("-"):
            removed.append(line[1:].strip())
        elif line.startswith("+"):
            added.append(line[1:].strip())
    return removed, added


def normalise_code(text: str) -> str:
    """Whitespace-insensitive form of code lines, so reviewed entries survive reformatting."""
    lines = [re.sub(r"\s+", " ", line.strip().removeprefix("+").strip()) for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


@dataclass
class MutantRecord:
    """One mutmut mutant as exported: what the gate and the report need, without mutants/."""

    name: str
    file: str
    status: str
    exit_code: int | None
    diff: str = ""
    line: int = 1
    column: int = 1
    end_line: int = 1
    end_column: int = 1
    replacement: str = ""
    original: str = ""
    mutator: str = "Mutation"
    duration: float | None = None

    @property
    def parsed(self) -> MutantName:
        return parse_mutant_name(self.name)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> MutantRecord:
        missing = {"name", "file", "status", "exit_code"} - set(data)
        if missing:
            raise InputError(f"{where}: mutant entry {_label(data)} lacks {sorted(missing)}")
        for key, kinds in _RECORD_TYPES.items():
            if key in data and not _is(data[key], kinds):
                wanted = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
                got = type(data[key]).__name__
                raise InputError(f"{where}: mutant {_label(data)}: {key!r} must be {wanted}, not {got}")
        file = PurePosixPath(data["file"])
        if file.is_absolute() or ".." in file.parts or not data["file"].strip():
            raise InputError(
                f"{where}: mutant {_label(data)}: 'file' {data['file']!r} must be a path inside the "
                "repository, relative to its root"
            )
        record = cls(**{k: data[k] for k in data if k in cls.__dataclass_fields__})
        record.parsed  # noqa: B018 - validates the name early, with the file in the message
        return record


_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "file": (str,),
    "status": (str,),
    "exit_code": (int, type(None)),
    "diff": (str,),
    "line": (int,),
    "column": (int,),
    "end_line": (int,),
    "end_column": (int,),
    "replacement": (str,),
    "original": (str,),
    "mutator": (str,),
    "duration": (int, float, type(None)),
}


def _is(value: object, kinds: tuple[type, ...]) -> bool:
    return isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)


def _label(data: Mapping[str, Any]) -> str:
    name = data.get("name")
    return repr(name) if isinstance(name, str) else "(unnamed)"


@dataclass
class Results:
    """The exported result of one mutmut run, one shard, or the merge of shards."""

    mutants: list[MutantRecord]
    scope: dict[str, Any] = field(default_factory=lambda: {"kind": "full"})
    shard: dict[str, int] | None = None
    universe: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    mutmut_version: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RESULTS_FORMAT,
            "version": RESULTS_VERSION,
            "mutmut_version": self.mutmut_version,
            "scope": self.scope,
            "shard": self.shard,
            "universe": self.universe,
            "sources": self.sources,
            "mutants": [asdict(m) for m in sorted(self.mutants, key=lambda m: natural_key(m.name))],
        }

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def natural_key(name: str) -> tuple[str, int]:
    """Sort ``f__mutmut_10`` after ``f__mutmut_9``."""
    head, _, number = name.rpartition("__mutmut_")
    return (head, int(number) if number.isdigit() else -1)


def load_results(path: Path, *, hint: str) -> Results:
    """Read an exported results file; ``hint`` says which command produces it."""
    if not path.is_file():
        raise InputError(f"{path}: no such results file. Run `{hint}` first.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: cannot read results ({exc}). Re-run `{hint}`.") from exc
    if not isinstance(data, dict) or data.get("format") != RESULTS_FORMAT:
        raise InputError(f"{path}: not a {RESULTS_FORMAT} file. Run `{hint}` to produce one.")
    if data.get("version") != RESULTS_VERSION:
        raise InputError(f"{path}: results version {data.get('version')!r}, expected {RESULTS_VERSION}.")
    raw_mutants = data.get("mutants")
    if not isinstance(raw_mutants, list):
        raise InputError(f"{path}: 'mutants' must be a list.")
    mutants = [MutantRecord.from_json(m, str(path)) for m in raw_mutants if isinstance(m, dict)]
    if len(mutants) != len(raw_mutants):
        raise InputError(f"{path}: every entry of 'mutants' must be an object.")
    scope = data.get("scope") or {"kind": "full"}
    if not isinstance(scope, dict) or not isinstance(scope.get("kind", "full"), str):
        raise InputError(f"{path}: 'scope' must be an object with a string 'kind', got {scope!r}")
    shard = data.get("shard")
    if shard is not None and not (
        isinstance(shard, dict)
        and all(_is(shard.get(k), (int,)) for k in ("index", "count"))
        and 1 <= shard["index"] <= shard["count"]
    ):
        raise InputError(f"{path}: 'shard' must be null or {{'index': I, 'count': N}} with 1 <= I <= N")
    universe = data.get("universe") or {}
    if not isinstance(universe, dict):
        raise InputError(f"{path}: 'universe' must be an object")
    sources = data.get("sources") or {}
    if not isinstance(sources, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in sources.items()
    ):
        raise InputError(f"{path}: 'sources' must map file names to their text")
    return Results(
        mutants=mutants,
        scope=dict(scope),
        shard=shard,
        universe=dict(universe),
        sources=dict(sources),
        mutmut_version=str(data.get("mutmut_version", "")),
    )


def universe_of(names: Iterable[str]) -> dict[str, Any]:
    """Fingerprint of the full mutant list, so merge can prove all shards split the same list."""
    ordered = sorted(names, key=natural_key)
    digest = hashlib.sha256("\n".join(ordered).encode()).hexdigest()
    return {"count": len(ordered), "sha256": digest}


# --- sharding -------------------------------------------------------------------------------------


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``. Shards are 1-based, as CI matrices usually are."""
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match:
        raise InputError(f"--shard must look like I/N (e.g. 1/4), got {text!r}")
    index, count = int(match[1]), int(match[2])
    if count < 1 or not 1 <= index <= count:
        raise InputError(f"--shard {text}: need 1 <= I <= N")
    return index, count


def select_shard(names: Iterable[str], index: int, count: int) -> list[str]:
    """Mutants of shard ``index`` (1-based) of ``count``.

    Round-robin over the naturally sorted names: every shard sees the same list (all are generated
    from one commit), so each mutant lands in exactly one shard and the shards differ in size by at
    most one. Neighbouring mutants of one function are spread across shards, which spreads a slow
    function's cost too.
    """
    ordered = sorted(set(names), key=natural_key)
    return ordered[index - 1 :: count]


def merge_results(parts: Sequence[Results]) -> Results:
    """Combine shard exports into one, refusing anything that is not an exact partition."""
    if not parts:
        raise InputError("merge: no result files given")
    universes = {json.dumps(p.universe, sort_keys=True) for p in parts}
    if len(universes) != 1:
        raise InputError(
            "merge: shards were cut from different mutant lists (universe differs); "
            "all shards must run on the same commit and config"
        )
    counts = {p.shard["count"] if p.shard else 1 for p in parts}
    if len(counts) != 1:
        raise InputError(f"merge: shards disagree on the shard count: {sorted(counts)}")
    count = counts.pop()
    indices = sorted(p.shard["index"] if p.shard else 1 for p in parts)
    if indices != list(range(1, count + 1)):
        raise InputError(f"merge: expected shards 1..{count} once each, got {indices}")
    by_name: dict[str, MutantRecord] = {}
    for part in parts:
        for mutant in part.mutants:
            if mutant.name in by_name:
                raise InputError(f"merge: mutant {mutant.name} appears in more than one shard")
            by_name[mutant.name] = mutant
    universe = parts[0].universe
    if not universe:
        raise InputError(
            "merge: the shards carry no universe (the mutant list they were cut from), so nothing shows "
            "that they add up to a whole run; re-run them with `python scripts/mutation_run.py run --shard`"
        )
    if universe_of(by_name) != universe:
        raise InputError(
            f"merge: shards hold {len(by_name)} mutants but the mutant list has {universe.get('count')}; "
            "a shard is missing mutants or holds extra ones"
        )
    sources: dict[str, str] = {}
    for part in parts:
        sources.update(part.sources)
    return Results(
        mutants=list(by_name.values()),
        scope=parts[0].scope,
        shard=None,
        universe=universe,
        sources=sources,
        mutmut_version=parts[0].mutmut_version,
    )


# --- mapping source lines to the functions mutmut mutates ---------------------------------------


@dataclass(frozen=True)
class FunctionSpan:
    """A function mutmut can put a trampoline on: module-level ``def`` or a method of a module-level class."""

    qualname: str
    start: int  # first decorator line, else the def line
    end: int
    def_line: int
    def_col: int


def mutable_units(source: str) -> list[FunctionSpan]:
    """Top-level functions and methods of top-level classes: mutmut's unit of mutation and naming.

    Nested functions and classes belong to the enclosing unit (mutmut names their mutants after it).
    """
    tree = ast.parse(source)
    spans: list[FunctionSpan] = []

    def add(node: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str) -> None:
        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        end = node.end_lineno or node.lineno
        spans.append(FunctionSpan(qualname, start, end, node.lineno, node.col_offset))

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            add(node, node.name)
        elif isinstance(node, ast.ClassDef):
            for child in node.body:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    add(child, f"{node.name}.{child.name}")
    return spans


_HUNK_RE = re.compile(r"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,(?P<count>\d+))? @@")


def changed_lines_from_diff(diff_text: str) -> dict[str, set[int]]:
    """Lines of the *new* files touched by a ``git diff -U0`` output, per path.

    A pure deletion (``+c,0``) has no new line; it marks ``c`` and ``c+1``, the lines either side of
    the gap, because the removed code belonged to whichever function surrounds that gap.
    """
    changed: dict[str, set[int]] = {}
    current: str | None = None
    for line in diff_text.splitlines():
        if line.startswith("+++ "):
            target = line[4:].strip()
            current = None if target == "/dev/null" else target.removeprefix("b/")
            if current is not None:
                changed.setdefault(current, set())
            continue
        match = _HUNK_RE.match(line)
        if match and current is not None:
            start = int(match["start"])
            count = 1 if match["count"] is None else int(match["count"])
            if count == 0:
                changed[current].update(n for n in (start, start + 1) if n >= 1)
            else:
                changed[current].update(range(start, start + count))
    return changed


def functions_touching(source: str, lines: set[int]) -> set[str]:
    units = mutable_units(source)
    return {span.qualname for span in units if any(span.start <= n <= span.end for n in lines)}


def verify_ref(ref: str, repo: Path) -> str:
    """The commit ``ref`` names, checked by git before anything uses it; an option-like ref is refused."""
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        raise InputError(f"--changed-since {ref!r}: cannot run git: {exc}") from exc
    if found.returncode != 0 or not found.stdout.strip():
        raise InputError(
            f"--changed-since {ref!r}: not a commit in {repo} (`git rev-parse --verify` refused it)"
        )
    return found.stdout.strip()


def git_changed_functions(ref: str, paths: Sequence[str], repo: Path) -> set[str]:
    """``module:qualname`` of every mutable unit changed since ``ref`` (committed, staged or not, or new)."""
    commit = verify_ref(ref, repo)
    try:
        diff = subprocess.run(
            ["git", "diff", "-U0", "--no-color", "--no-ext-diff", commit, "--", *paths],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        untracked = subprocess.run(
            ["git", "ls-files", "--others", "--exclude-standard", "--", *paths],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = exc.stderr.strip() if isinstance(exc, subprocess.CalledProcessError) else str(exc)
        raise InputError(f"--changed-since {ref}: git diff failed: {detail}") from exc
    changed = changed_lines_from_diff(diff)
    new_files = {path for path in untracked.splitlines() if path.endswith(".py")}
    result: set[str] = set()
    for path in sorted(set(changed) | new_files):
        file = repo / path
        if not path.endswith(".py") or not file.is_file():
            continue
        source = file.read_text(encoding="utf-8")
        # an untracked file is new as a whole
        lines = set(range(1, source.count("\n") + 2)) if path in new_files else changed[path]
        module = module_for_path(path)
        result.update(f"{module}:{qualname}" for qualname in functions_touching(source, lines))
    return result


def filter_by_functions(names: Iterable[str], functions: set[str]) -> list[str]:
    return sorted((n for n in names if parse_mutant_name(n).function in functions), key=natural_key)


# --- mutation_config.toml --------------------------------------------------------------------------


@dataclass(frozen=True)
class Equivalent:
    function: str
    diff: str
    reason: str
    removed: str | None
    index: int

    def describe(self) -> str:
        return f"[[equivalent]] #{self.index} ({self.function}: {normalise_code(self.diff)!r})"


@dataclass(frozen=True)
class GateConfig:
    min_score: float
    equivalents: tuple[Equivalent, ...]


GATE_KEYS = {"min_score"}
EQUIVALENT_KEYS = {"function", "diff", "reason", "removed"}


def load_gate_config(path: Path) -> GateConfig:
    """Read ``[gate]`` and ``[[equivalent]]``; the harness's tables in the same file are not ours."""
    data = read_mutation_config(path)
    gate = data.get("gate", {})
    if not isinstance(gate, dict):
        raise InputError(f"{path}: [gate] must be a table")
    unknown = set(gate) - GATE_KEYS
    if unknown:
        raise InputError(f"{path}: unknown key(s) in [gate]: {sorted(unknown)}; known: {sorted(GATE_KEYS)}")
    min_score = gate.get("min_score", 100.0)
    if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or not 0 <= min_score <= 100:
        raise InputError(f"{path}: [gate] min_score must be a number from 0 to 100, got {min_score!r}")
    raw = data.get("equivalent", [])
    if not isinstance(raw, list):
        raise InputError(f"{path}: 'equivalent' must be an array of tables ([[equivalent]])")
    entries: list[Equivalent] = []
    for index, entry in enumerate(raw, start=1):
        where = f"{path}: [[equivalent]] #{index}"
        if not isinstance(entry, dict):
            raise InputError(f"{where} must be a table")
        unknown = set(entry) - EQUIVALENT_KEYS
        if unknown:
            raise InputError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(EQUIVALENT_KEYS)}")
        for key in ("function", "diff", "reason"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise InputError(f"{where}: '{key}' must be a non-empty string")
        removed = entry.get("removed")
        if removed is not None and (not isinstance(removed, str) or not removed.strip()):
            raise InputError(f"{where}: 'removed' must be a non-empty string when given")
        function = entry["function"].strip()
        if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)?", function):
            raise InputError(
                f"{where}: function must be 'package.module:function' or 'package.module:Class.method', "
                f"got {function!r}"
            )
        entries.append(Equivalent(function, entry["diff"], entry["reason"].strip(), removed, index))
    return GateConfig(float(min_score), tuple(entries))


def equivalent_matches(entry: Equivalent, mutant: MutantRecord) -> bool:
    if mutant.parsed.function != entry.function:
        return False
    removed, added = diff_sides(mutant.diff)
    if normalise_code("\n".join(added)) != normalise_code(entry.diff):
        return False
    return entry.removed is None or normalise_code("\n".join(removed)) == normalise_code(entry.removed)


def repo_text(path: str, root: Path) -> str | None:
    """The text of ``path`` when it is a file inside ``root`` (links resolved), else None: a report
    never copies in a file from elsewhere on the machine."""
    try:
        resolved = (root / path).resolve()
        resolved.relative_to(root.resolve())
        return resolved.read_text(encoding="utf-8") if resolved.is_file() else None
    except (ValueError, OSError, UnicodeDecodeError):
        return None


def check_output(path: Path, option: str) -> None:
    """A file the tool will write: not a folder, its folder made and writable, before any work starts."""
    if path.is_dir():
        raise InputError(f"{option} {path} is a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot create its folder ({exc.strerror})") from exc
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise InputError(f"{option} {path}: not writable")


def read_toml(path: Path) -> dict[str, Any]:
    """Any TOML file (pyproject.toml, an override); mutation_config.toml goes through read_mutation_config."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"{path}: cannot parse TOML: {exc}") from exc


def read_mutation_config(path: Path) -> dict[str, Any]:
    try:
        return read_config(path)
    except ConfigFileError as exc:
        raise InputError(str(exc)) from exc


def add_input_arguments(parser: argparse.ArgumentParser, *, critical_help: str) -> None:
    """The inputs the gate and the report both read: mutmut's results, the config, the harness's JSON."""
    parser.add_argument("--results", type=Path, default=Path("reports/mutmut-results.json"))
    parser.add_argument("--config", type=Path, default=Path("mutation_config.toml"))
    parser.add_argument("--critical", type=Path, help=critical_help)
    parser.add_argument(
        "--sweep", type=Path, help="the sweep's results (python scripts/mutation_sweep.py run)"
    )

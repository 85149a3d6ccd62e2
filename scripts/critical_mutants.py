"""Critical-mutant harness: prove that named tests catch named, hand-written bugs.

Random mutation testing (mutmut) says how many arbitrary edits the suite notices; it cannot say
that *the* bug we care about - "the guard forgets to restore the caller's device" - is caught, nor
by *which* test.  This harness takes a short, reviewed list of such bugs from
``mutation_config.toml``: each entry is one exact textual edit (``delete``, or ``replace``/``by``)
inside one named function, the reason it matters (``why``) and the tests that must fail because of
it (``killed_by``).  A run succeeds only when every mutant is killed and each one's ``killed_by``
tests are among the tests that failed; a kill by some other test is reported as ``wrong-reason``,
because it means the test that claims to guard the behaviour does not.

Safety rules, and why:

* Edits are applied only to temporary copies of the project (one per parallel job) under the
  system temp dir, never to the working tree, so an interrupted or SIGKILLed run cannot leave a
  mutated file behind.  SIGINT/SIGTERM kill the children and delete the copies.
* pytest runs with the copy first on ``PYTHONPATH``; the run is refused if the package that the
  tests really import resolves anywhere else (an editable install, a ``pytest11`` plugin entry
  point), because then every mutant would "survive" for the wrong reason.
* The unmutated suite must be green first, and a canary mutant must die before the others run:
  otherwise a survivor could mean "the edits are not taking effect" rather than "the tests are weak".
* Edits are located with ``ast`` (the scope) plus exact text (the anchor), and must match exactly
  once, so that a refactor turns a stale entry into a loud config error instead of a silent no-op.

Anchor rule (``delete`` / ``replace`` text): the text is dedented, trailing whitespace is dropped
from each line and leading/trailing blank lines are removed.  A single-line ``replace`` text matches
anywhere inside a line (a substring).  A ``delete`` text, and any multi-line text, matches whole
lines: every text line must equal the source line minus one common indentation (blank text lines
match blank source lines; trailing whitespace is ignored).  The match must lie inside the lines of
the scope's definition (decorators included) and occur exactly once there, counted across every
definition with that qualified name (a property getter and setter share one).  ``by`` is dedented
and re-indented to the matched line's indentation; a single-line ``by`` for a substring match is
inserted verbatim.  A deletion that leaves a block empty gets ``pass`` instead.

Judging one mutant: it must compile and its package must import (else ``invalid``); then only its
``killed_by`` tests run.  Each entry matches a node id exactly or as the prefix of parametrized ids
(``test_a`` matches ``test_a[simulated]``); it failed if any matching item failed.  An entry whose
items were all skipped on this runtime is not required to fail (all skipped: ``not-exercised``);
every other entry must fail, or the kill is ``wrong-reason``.  When no entry fails, the whole suite
runs with ``-x`` to tell ``survived`` from a kill by some other test (``wrong-reason``).  ``timeout_s``
bounds each child process (the import probe, each pytest run) on its own.  ``--full`` runs the whole
suite per mutant instead and prints the kill matrix.  The canary always runs first, also with
``--only``; it must die (``killed`` or ``wrong-reason``) or the run is void.  A ``killed_by`` entry
that matches no test reported by the unmutated run is bad input.

Exit status: 0 every mutant killed for the right reason; 1 a finding; 2 bad input or broken setup;
130/143 interrupted by SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import io
import itertools
import json
import math
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import FrameType

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PLUGIN_MODULE = "_mutant_outcomes"
PLUGIN_SOURCE = Path(__file__).resolve().with_name(f"{PLUGIN_MODULE}.py")
OUTCOMES_ENV = "CRITICAL_MUTANTS_OUTCOMES"
PACKAGE_ENV = "CRITICAL_MUTANTS_PACKAGE"
PARENT_ENV = "CRITICAL_MUTANTS_PARENT_PID"
RUNTIME_ENV = "GUARD_LIB_TEST_RUNTIME"
DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "mutation_config.toml"

EXIT_OK, EXIT_FINDING, EXIT_BAD_INPUT = 0, 1, 2
EXIT_SIGINT, EXIT_SIGTERM = 130, 143

KILLED, SURVIVED, WRONG_REASON = "killed", "survived", "wrong-reason"
TIMEOUT, INVALID, NOT_EXERCISED = "timeout", "invalid", "not-exercised"
VERDICTS = (KILLED, SURVIVED, WRONG_REASON, TIMEOUT, INVALID, NOT_EXERCISED)

_TOP_KEYS = frozenset({"harness", "mutant"})
_FOREIGN_TABLES = frozenset(
    {"gate", "equivalent", "sweep", "sweep_equivalent"}
)  # read by another tool; not ours to judge
_HARNESS_KEYS = frozenset({"package", "tests", "pytest_args", "timeout_s", "jobs", "canary"})
MODULE_SCOPE = "<module>"  # the scope of an edit to a module-level statement
# A mutant id shows in tables, JSON, JUnit XML and shell arguments: nothing that could break any of them.
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
_MUTANT_KEYS = frozenset({"id", "file", "scope", "delete", "replace", "by", "why", "killed_by"})
_ROOT_EXCLUDES = frozenset({".git", ".venv", "venv", ".tox", ".nox", "mutants"})
_CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"})
_OUTCOME_RANK = {"passed": 0, "xfailed": 1, "skipped": 2, "failed": 3}

DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


class ConfigError(Exception):
    """The configuration (or the command line) is wrong; nothing was run."""


class SetupError(Exception):
    """The project or environment cannot give a trustworthy verdict."""


class _Terminated(Exception):
    """SIGTERM arrived; raised in the main thread so that cleanup runs."""


class _Cancelled(Exception):
    """The run is being torn down; worker threads stop starting processes."""


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Harness:
    package: str
    tests: tuple[str, ...]
    pytest_args: tuple[str, ...]
    timeout_s: float
    jobs: int
    canary: str | None


@dataclass(frozen=True)
class MutantSpec:
    id: str
    file: str
    scope: str
    why: str
    killed_by: tuple[str, ...]
    delete: str | None
    replace: str | None
    by: str | None


@dataclass(frozen=True)
class Mutant:
    spec: MutantSpec
    original: str
    mutated: str
    diff: str


@dataclass(frozen=True)
class Config:
    path: Path
    root: Path
    harness: Harness
    mutants: tuple[Mutant, ...]

    def canary(self) -> Mutant:
        wanted = self.harness.canary or self.mutants[0].spec.id
        return next(m for m in self.mutants if m.spec.id == wanted)


def _table(value: object, where: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table")
    return value


def _reject_unknown(table: dict[str, object], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}")


def _string(table: dict[str, object], key: str, where: str, *, required: bool) -> str | None:
    value = table.get(key)
    if value is None:
        if required:
            raise ConfigError(f"{where}: missing required key {key!r}")
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {key!r} must be a non-empty string")
    return value


def _required_string(table: dict[str, object], key: str, where: str) -> str:
    value = _string(table, key, where, required=True)
    assert value is not None  # _string raised otherwise
    return value


def _string_list(table: dict[str, object], key: str, where: str, default: list[str] | None) -> list[str]:
    value = table.get(key, default)
    if value is None:
        raise ConfigError(f"{where}: missing required key {key!r}")
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where}: {key!r} must be a non-empty list of strings")
    if not all(isinstance(item, str) and item.strip() for item in value):
        raise ConfigError(f"{where}: {key!r} must be a non-empty list of strings")
    return [str(item) for item in value]


def _positive_number(value: object, where: str) -> float:
    # inf and nan are floats too, and pass a plain "> 0" test (nan by failing every comparison)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ConfigError(f"{where}: 'timeout_s' must be a finite, positive number of seconds, got {value!r}")
    return float(value)


def _jobs(value: object, where: str) -> int:
    if value == "auto":
        return os.cpu_count() or 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: 'jobs' must be \"auto\" or a positive integer")
    return value


def _inside_root(root: Path, rel: str, where: str, key: str) -> Path:
    if Path(rel).is_absolute() or PurePosixPath(rel).is_absolute():
        raise ConfigError(f"{where}: {key} {rel!r} must be a path relative to the project root {root}")
    resolved = (root / rel).resolve()
    if not resolved.is_relative_to(root):
        raise ConfigError(f"{where}: {key} {rel!r} is outside the project root {root}")
    relative = resolved.relative_to(root)
    if relative.parts and (relative.parts[0] in _ROOT_EXCLUDES or _CACHE_DIRS & set(relative.parts)):
        raise ConfigError(f"{where}: {key} {rel!r} lies in a directory the harness does not copy")
    return resolved


def _parse_harness(value: object, root: Path) -> Harness:
    where = "[harness]"
    table = _table(value, where)
    _reject_unknown(table, _HARNESS_KEYS, where)
    package = _required_string(table, "package", where)
    if not package.isidentifier():
        raise ConfigError(f"{where}: package {package!r} must be a top-level import name")
    if not (root / package).is_dir() and not (root / f"{package}.py").is_file():
        raise ConfigError(f"{where}: package {package!r} not found under the project root {root}")
    tests = _string_list(table, "tests", where, ["tests"])
    for test in tests:
        if not _inside_root(root, test.split("::")[0], where, "tests path").exists():
            raise ConfigError(f"{where}: tests path {test!r} does not exist under {root}")
    return Harness(
        package=package,
        tests=tuple(tests),
        pytest_args=tuple(_string_list(table, "pytest_args", where, None)) if "pytest_args" in table else (),
        timeout_s=_positive_number(table.get("timeout_s", 30), where),
        jobs=_jobs(table.get("jobs", "auto"), where),
        canary=_string(table, "canary", where, required=False),
    )


def _parse_mutant(value: object, index: int, root: Path) -> MutantSpec:
    table = _table(value, f"[[mutant]] number {index}")
    mutant_id = _required_string(table, "id", f"[[mutant]] number {index}")
    if not SAFE_ID.fullmatch(mutant_id):
        raise ConfigError(
            f"[[mutant]] number {index}: id {mutant_id!r} must be 1-80 characters of ASCII letters, digits, "
            "'.', '_' and '-', starting with a letter or digit (it names tables, files and JUnit cases)"
        )
    where = f"mutant {mutant_id!r}"
    _reject_unknown(table, _MUTANT_KEYS, where)
    file = _required_string(table, "file", where)
    path = _inside_root(root, file, where, "file")
    if path.suffix != ".py" or not path.is_file():
        raise ConfigError(f"{where}: file {file!r} does not exist or is not a .py file")
    delete = table.get("delete")
    replace, by = table.get("replace"), table.get("by")
    if (delete is None) == (replace is None):
        raise ConfigError(f"{where}: give exactly one of 'delete' or 'replace' (with 'by')")
    if delete is not None and by is not None:
        raise ConfigError(f"{where}: 'by' only goes with 'replace'")
    if replace is not None and by is None:
        raise ConfigError(f"{where}: 'replace' needs 'by'")
    if by is not None and not isinstance(by, str):
        raise ConfigError(f"{where}: 'by' must be a string")
    return MutantSpec(
        id=mutant_id,
        file=path.relative_to(root).as_posix(),
        scope=_required_string(table, "scope", where),
        why=_required_string(table, "why", where),
        killed_by=tuple(_string_list(table, "killed_by", where, None)),
        delete=_string(table, "delete", where, required=False),
        replace=_string(table, "replace", where, required=False),
        by=by,
    )


def _read_toml(path: Path) -> dict[str, object]:
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config {path} is not UTF-8: {exc}") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # The message carries "(at line L, column C)"; keep it verbatim.
        raise ConfigError(f"malformed TOML in {path}: {exc}") from exc


def project_root(given: Path | None, config: Path) -> Path:
    """``--root`` when given; else the git top-level of the working directory; else the config's folder."""
    if given is not None:
        if not given.is_dir():
            raise ConfigError(f"--root {given}: not a directory")
        return given.resolve()
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        top = None
    if top is not None and top.returncode == 0 and top.stdout.strip():
        return Path(top.stdout.strip()).resolve()
    return config.resolve().parent


def load_config(path: Path, root: Path | None = None) -> Config:
    """Parse and validate the whole file, and build every mutant; raise ConfigError on any fault.

    Paths in the file are relative to ``root``, the project (default: the file's own folder).
    """
    path = path.resolve()
    data = _read_toml(path)
    root = path.parent if root is None else root.resolve()
    _reject_unknown(data, _TOP_KEYS | _FOREIGN_TABLES, f"config {path.name}")
    harness = _parse_harness(data.get("harness", {}), root)
    entries = data.get("mutant")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"config {path.name}: no [[mutant]] entries")
    specs = [_parse_mutant(entry, number, root) for number, entry in enumerate(entries, start=1)]
    ids = [spec.id for spec in specs]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ConfigError(f"duplicate mutant id(s): {', '.join(map(repr, duplicates))}")
    if harness.canary is not None and harness.canary not in ids:
        raise ConfigError(f"[harness]: canary {harness.canary!r} is not a mutant id")
    return Config(path, root, harness, tuple(build_mutant(spec, root) for spec in specs))


# --------------------------------------------------------------------------- locating edits


@dataclass(frozen=True)
class _Match:
    line: int  # 0-based index of the first matched line
    n_lines: int
    indent: str  # indentation of the first matched line
    col: int | None = None  # substring matches only
    end: int | None = None


def _split_lines(source: str) -> list[str]:
    # Python's own newline set (\n, \r\n, \r), not str.splitlines(), which also splits on \f etc.
    return io.StringIO(source, newline="").readlines()


def _content(line: str) -> str:
    return line.rstrip("\r\n")


def _indent_of(text: str) -> str:
    return text[: len(text) - len(text.lstrip())]


def _normalise(text: str) -> list[str]:
    lines = [line.rstrip() for line in textwrap.dedent(text.replace("\r\n", "\n")).split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _nested_bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    bodies: list[list[ast.stmt]] = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list):
            bodies.append([item for item in value if isinstance(item, ast.stmt)])
    for holder in [*getattr(stmt, "handlers", []), *getattr(stmt, "cases", [])]:
        bodies.append(list(holder.body))
    return bodies


def _defs_named(body: list[ast.stmt], name: str) -> Iterator[DefNode]:
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if stmt.name == name:
                yield stmt
        else:
            # Definitions under `if TYPE_CHECKING:` / `try:` still belong to the enclosing scope.
            for nested in _nested_bodies(stmt):
                yield from _defs_named(nested, name)


def scope_spans(tree: ast.Module, qualname: str) -> list[tuple[int, int]]:
    """0-based inclusive line ranges of every definition named `qualname` (decorators included).

    ``<module>`` is the whole file, for the few critical lines that live outside any function.
    """
    if qualname == MODULE_SCOPE:
        return [(0, max((node.end_lineno or node.lineno) for node in tree.body) - 1)] if tree.body else []
    nodes: list[DefNode] = []
    bodies: list[list[ast.stmt]] = [tree.body]
    for part in qualname.split("."):
        nodes = [node for body in bodies for node in _defs_named(body, part)]
        bodies = [node.body for node in nodes]
    spans = []
    for node in nodes:
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        spans.append((first - 1, (node.end_lineno or node.lineno) - 1))
    return spans


def _block_indent(lines: list[str], k: int, text: list[str]) -> str | None:
    first = _content(lines[k]).rstrip()
    if not first.endswith(text[0]):
        return None
    indent = first[: len(first) - len(text[0])]
    if indent.strip():
        return None
    for offset, want in enumerate(text[1:], start=1):
        have = _content(lines[k + offset]).rstrip()
        if have != (indent + want if want else ""):
            return None
    return indent


def _line_matches(lines: list[str], spans: list[tuple[int, int]], text: list[str]) -> list[_Match]:
    found = set()
    for start, end in spans:
        for k in range(start, end - len(text) + 2):
            indent = _block_indent(lines, k, text)
            if indent is not None:
                found.add(_Match(k, len(text), indent))
    return sorted(found, key=lambda m: m.line)


def _substring_matches(lines: list[str], spans: list[tuple[int, int]], needle: str) -> list[_Match]:
    found = set()
    for start, end in spans:
        for k in range(start, end + 1):
            content = _content(lines[k])
            col = content.find(needle)
            while col != -1:
                found.add(_Match(k, 1, _indent_of(content), col, col + len(needle)))
                col = content.find(needle, col + 1)
    return sorted(found, key=lambda m: (m.line, m.col or 0))


def _parses(lines: list[str]) -> bool:
    try:
        ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        return False
    return True


def _eol(line: str, fallback: str = "\n") -> str:
    return line[len(_content(line)) :] or fallback


def _replace_block(lines: list[str], match: _Match, by_lines: list[str]) -> list[str]:
    before, after = lines[: match.line], lines[match.line + match.n_lines :]
    if by_lines:
        eol = _eol(lines[match.line])
        new = [(match.indent + text if text else "") + eol for text in by_lines]
        new[-1] = new[-1][: -len(eol)] + _eol(lines[match.line + match.n_lines - 1], "")
        return before + new + after
    if _parses(before + after):
        return before + after
    padded = [*before, f"{match.indent}pass{_eol(lines[match.line])}", *after]
    return padded if _parses(padded) else before + after


def _replace_inline(lines: list[str], match: _Match, by: str) -> list[str]:
    # Substring matches always carry columns.
    assert match.col is not None
    assert match.end is not None
    line = lines[match.line]
    content = _content(line)
    by_lines = [by] if "\n" not in by else _normalise(by) or [""]
    joiner = _eol(line)
    inserted = by_lines[0] + "".join(joiner + (match.indent + t if t else "") for t in by_lines[1:])
    new = content[: match.col] + inserted + content[match.end :] + line[len(content) :]
    return [*lines[: match.line], new, *lines[match.line + 1 :]]


def _edit(spec: MutantSpec, lines: list[str], spans: list[tuple[int, int]]) -> list[str]:
    anchor = spec.delete if spec.delete is not None else spec.replace
    assert anchor is not None  # load_config demands one of them
    text = _normalise(anchor)
    inline = spec.delete is None and len(text) == 1
    matches = _substring_matches(lines, spans, text[0]) if inline else _line_matches(lines, spans, text)
    if len(matches) != 1:
        kind = "delete" if spec.delete is not None else "replace"
        count = "not found" if not matches else f"found {len(matches)} times"
        raise ConfigError(
            f"mutant {spec.id!r}: {kind} text {_preview(anchor)} {count} in scope {spec.scope!r} "
            f"of {spec.file} (it must occur exactly once)"
        )
    if inline:
        return _replace_inline(lines, matches[0], spec.by or "")
    return _replace_block(lines, matches[0], _normalise(spec.by or ""))


def _preview(text: str) -> str:
    lines = _normalise(text)
    return repr(lines[0] + (" ..." if len(lines) > 1 else ""))


def unified_diff(file: str, original: str, mutated: str) -> str:
    diff = difflib.unified_diff(
        [_content(line) for line in _split_lines(original)],
        [_content(line) for line in _split_lines(mutated)],
        fromfile=f"a/{file}",
        tofile=f"b/{file}",
        lineterm="",
    )
    return "\n".join(diff) + "\n"


def build_mutant(spec: MutantSpec, root: Path) -> Mutant:
    try:
        source = (root / spec.file).read_bytes().decode("utf-8")
        tree = ast.parse(source, filename=spec.file)
    except (UnicodeDecodeError, SyntaxError, ValueError) as exc:
        raise ConfigError(f"mutant {spec.id!r}: cannot parse {spec.file}: {exc}") from exc
    spans = scope_spans(tree, spec.scope)
    if not spans:
        raise ConfigError(f"mutant {spec.id!r}: scope {spec.scope!r} not found in {spec.file}")
    mutated = "".join(_edit(spec, _split_lines(source), spans))
    if mutated == source:
        raise ConfigError(f"mutant {spec.id!r}: the edit leaves {spec.file} unchanged (scope {spec.scope!r})")
    return Mutant(spec, source, mutated, unified_diff(spec.file, source, mutated))


# --------------------------------------------------------------------------- running processes


def _kill_group(proc: subprocess.Popen[str]) -> None:
    # also after the leader exited: what it left in its group goes with it
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36
# Runs first in every child: the kernel kills it when the harness dies, however the harness dies
# (SIGKILL included, and a child spinning in C code with the GIL held); then it becomes the command.
_LAUNCH = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)\n"
    "if os.getppid() != int(sys.argv[1]): os._exit(70)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    return bool(ctypes.CDLL(None, use_errno=True).prctl(option, value) == 0)


def become_subreaper() -> bool:
    """Orphans of our children (a daemon a mutant started with setsid) become ours, so they can be ended."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            # the fields after the command name, which may itself hold spaces and parentheses
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


class Runner:
    """Starts children in their own process group so that a timeout or an interrupt kills all of it.

    A child's output goes to a file, not a pipe, so a grandchild that keeps the output open (a daemon)
    cannot hold the harness past the child's end; whatever the child left running is ended with it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[str]] = set()
        self._cancelled = False
        self._launch = sys.platform.startswith("linux")

    def cancel_all(self) -> None:
        with self._lock:
            self._cancelled = True
            for proc in self._procs:
                _kill_group(proc)
            self._end_orphans()

    def _end_orphans(self) -> None:
        """Kill and reap our children that no run started: orphans handed to us as subreaper."""
        ours = {proc.pid for proc in self._procs}
        for pid in _children_of(os.getpid()):
            if pid in ours:
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)

    def run(self, cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str]:
        """Return (exit status or None on timeout, combined output)."""
        if self._launch:
            cmd = [sys.executable, "-c", _LAUNCH, str(os.getpid()), shutil.which(cmd[0]) or cmd[0], *cmd[1:]]
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as out:
            with self._lock:
                if self._cancelled:
                    raise _Cancelled
                proc = subprocess.Popen(
                    cmd,
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    text=True,
                    start_new_session=True,
                )
                self._procs.add(proc)
            try:
                code = self._wait(proc, timeout)
            except BaseException:
                _kill_group(proc)
                proc.wait()
                raise
            finally:
                _kill_group(proc)
                with self._lock:
                    self._procs.discard(proc)
                    self._end_orphans()
            out.seek(0)
            return code, out.read()

    def _wait(self, proc: subprocess.Popen[str], timeout: float) -> int | None:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            return None
        if self._cancelled:
            raise _Cancelled
        return proc.returncode


# --------------------------------------------------------------------------- pytest results


@dataclass
class TestRun:
    returncode: int | None  # None: killed at the timeout
    output: str
    outcomes: dict[str, str] = field(default_factory=dict)  # nodeid -> passed/failed/skipped/xfailed
    messages: dict[str, str] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    collect_errors: list[str] = field(default_factory=list)
    package_files: list[str] | None = None
    package_error: str | None = None

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def failed(self) -> list[str]:
        return [nodeid for nodeid in self.order if self.outcomes[nodeid] == "failed"]

    def first_failure(self) -> tuple[str, str] | None:
        """(node id, one-line message) of the first test that failed, in report order."""
        failed = self.failed()
        return (failed[0], self.messages.get(failed[0], "")) if failed else None


def _record_report(run: TestRun, record: dict[str, object]) -> None:
    nodeid = str(record["nodeid"])
    outcome = str(record["outcome"])
    if outcome == "skipped" and record.get("xfail"):
        outcome = "xfailed"
    if nodeid not in run.outcomes:
        run.order.append(nodeid)
        run.outcomes[nodeid] = outcome
    elif _OUTCOME_RANK[outcome] > _OUTCOME_RANK[run.outcomes[nodeid]]:
        run.outcomes[nodeid] = outcome
    else:
        return
    run.messages[nodeid] = str(record.get("message") or "")


def _apply_record(run: TestRun, record: dict[str, object], started: list[str]) -> bool:
    event = record.get("event")
    if event == "start":
        started.append(str(record["nodeid"]))
    elif event == "report":
        _record_report(run, record)
    elif event == "collect_error":
        run.collect_errors.append(f"{record['nodeid'] or '<session>'}: {record['message']}")
    elif event == "package":
        files = record.get("files")
        run.package_files = [str(f) for f in files] if isinstance(files, list) else []
        run.package_error = str(record["error"]) if record.get("error") else None
        return True
    return False


def parse_outcomes(path: Path, returncode: int | None, output: str) -> TestRun:
    run = TestRun(returncode, output)
    started: list[str] = []
    finished = False
    if path.exists():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
            finished = _apply_record(run, record, started) or finished
    if not finished and returncode is not None and started:
        # The process died inside a test (os._exit, a crash): that test is the one that failed.
        crashed = started[-1]
        if crashed not in run.outcomes:
            run.order.append(crashed)
        run.outcomes[crashed] = "failed"
        run.messages[crashed] = f"test process died (exit status {returncode})"
    return run


def entry_status(entry: str, outcomes: dict[str, str]) -> str:
    """failed / skipped / passed / absent for one killed_by entry (exact or `[`-parametrized match)."""
    matched = [o for nodeid, o in outcomes.items() if _entry_matches(entry, nodeid)]
    if not matched:
        return "absent"
    if "failed" in matched:
        return "failed"
    if all(o == "skipped" for o in matched):
        return "skipped"
    return "passed"


def _entry_matches(entry: str, nodeid: str) -> bool:
    return nodeid == entry or nodeid.startswith(entry + "[")


# --------------------------------------------------------------------------- judging mutants


@dataclass
class Result:
    mutant: Mutant
    verdict: str
    seconds: float = 0.0
    failed_tests: list[str] = field(default_factory=list)
    missing_killed_by: list[str] = field(default_factory=list)
    skipped_killed_by: list[str] = field(default_factory=list)
    first_failure: tuple[str, str] | None = None  # (node id, one-line message)
    detail: str | None = None
    canary: bool = False

    @property
    def is_finding(self) -> bool:
        return self.verdict != KILLED


def classify(mutant: Mutant, run: TestRun, other_failures: list[str] | None = None) -> Result:
    statuses = {entry: entry_status(entry, run.outcomes) for entry in mutant.spec.killed_by}
    failed = [e for e, s in statuses.items() if s == "failed"]
    skipped = [e for e, s in statuses.items() if s == "skipped"]
    # A killed_by test skipped on this runtime cannot be asked to fail; every other one must.
    missing = [e for e, s in statuses.items() if s not in ("failed", "skipped")]
    failures = run.failed() + (other_failures or [])
    result = Result(
        mutant, SURVIVED, failed_tests=failures, missing_killed_by=missing, skipped_killed_by=skipped
    )
    result.first_failure = run.first_failure()
    if failed:
        result.verdict = WRONG_REASON if missing else KILLED
    elif not missing:
        result.verdict = NOT_EXERCISED
    elif failures:
        result.verdict = WRONG_REASON
    return result


def _module_names(package: str, file: str) -> list[str]:
    parts = list(PurePosixPath(file).with_suffix("").parts)
    if parts[0] != package:
        return [package]
    if parts[-1] == "__init__":
        parts.pop()
    return [package, ".".join(parts)] if len(parts) > 1 else [package]


def _tail(output: str, lines: int = 1) -> str:
    kept = [line.strip() for line in output.splitlines() if line.strip()]
    return " | ".join(kept[-lines:]) if kept else "(no output)"


class Context:
    """Everything a mutant evaluation needs: config, temp area, runner and child environment."""

    def __init__(self, config: Config, tmp: Path, runner: Runner, runtime: str) -> None:
        self.config = config
        self.tmp = tmp
        self.runner = runner
        self.runtime = runtime
        self.plugin_dir = tmp / "plugin"
        self.snapshot = tmp / "snapshot"
        self._ids = itertools.count()
        self.print_lock = threading.Lock()

    @property
    def timeout(self) -> float:
        return self.config.harness.timeout_s

    def env(self, project: Path, outcomes: Path | None) -> dict[str, str]:
        env = dict(os.environ)
        inherited = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join([str(project), str(self.plugin_dir), *inherited])
        # No .pyc files: a restored file with the mutant's size and mtime second could reuse its bytecode.
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env[RUNTIME_ENV] = self.runtime
        env[PACKAGE_ENV] = self.config.harness.package
        env[PARENT_ENV] = str(os.getpid())
        if outcomes is not None:
            env[OUTCOMES_ENV] = str(outcomes)
        else:
            env.pop(OUTCOMES_ENV, None)
        return env

    def pytest(self, project: Path, targets: Sequence[str], *, exitfirst: bool) -> TestRun:
        outcomes = self.tmp / "outcomes" / f"{next(self._ids)}.jsonl"
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", PLUGIN_MODULE]
        cmd += [f"--rootdir={project}", *self.config.harness.pytest_args, *(["-x"] if exitfirst else [])]
        cmd += targets
        code, output = self.runner.run(cmd, project, self.env(project, outcomes), self.timeout)
        return parse_outcomes(outcomes, code, output)

    def import_check(self, project: Path, file: str) -> tuple[int | None, str]:
        cmd = [sys.executable, "-m", PLUGIN_MODULE, *_module_names(self.config.harness.package, file)]
        return self.runner.run(cmd, project, self.env(project, None), self.timeout)

    def say(self, message: str) -> None:
        with self.print_lock:
            print(message, file=sys.stderr, flush=True)


def _broken_run(mutant: Mutant, run: TestRun, phase: str) -> Result | None:
    if run.timed_out:
        return Result(mutant, TIMEOUT, detail=f"{phase} did not finish within the time limit")
    if run.collect_errors:
        return Result(mutant, INVALID, detail=f"collection error: {run.collect_errors[0]}")
    if run.returncode in (2, 3, 4):
        return Result(mutant, INVALID, detail=f"pytest exit status {run.returncode}: {_tail(run.output)}")
    if run.returncode == 5:
        return Result(mutant, INVALID, detail="pytest collected no tests")
    return None


def _judge(ctx: Context, project: Path, mutant: Mutant, full: bool) -> Result:
    code, output = ctx.import_check(project, mutant.spec.file)
    if code is None:
        return Result(mutant, TIMEOUT, detail=f"importing the package took over {ctx.timeout:g}s")
    if code != 0:
        return Result(mutant, INVALID, detail=f"package does not import: {_tail(output)}")
    targets = ctx.config.harness.tests if full else mutant.spec.killed_by
    run = ctx.pytest(project, targets, exitfirst=False)
    broken = _broken_run(mutant, run, "the killed_by tests" if not full else "the full suite")
    if broken is not None:
        return broken
    result = classify(mutant, run)
    if full or result.verdict != SURVIVED:
        return result
    # killed_by tests passed: does anything else fail?  That tells `survived` from a wrong-reason kill.
    confirm = ctx.pytest(project, ctx.config.harness.tests, exitfirst=True)
    broken = _broken_run(mutant, confirm, "the full suite (killed_by tests passed)")
    if broken is not None:
        return broken
    others = [t for t in confirm.failed() if not any(_entry_matches(e, t) for e in mutant.spec.killed_by)]
    result = classify(mutant, run, others)
    result.first_failure = result.first_failure or confirm.first_failure()
    return result


def evaluate(ctx: Context, project: Path, mutant: Mutant, full: bool) -> Result:
    started = time.monotonic()
    try:
        compile(mutant.mutated, mutant.spec.file, "exec")
    except (SyntaxError, ValueError) as exc:
        result = Result(mutant, INVALID, detail=f"mutated file does not compile: {exc}")
    else:
        target = project / mutant.spec.file
        original = target.read_bytes()
        target.write_bytes(mutant.mutated.encode("utf-8"))
        try:
            result = _judge(ctx, project, mutant, full)
        finally:
            target.write_bytes(original)
    result.seconds = time.monotonic() - started
    return result


# --------------------------------------------------------------------------- orchestration


def _copy_ignore(root: Path) -> Callable[[str, list[str]], set[str]]:
    root = root.resolve()

    def ignore(directory: str, names: list[str]) -> set[str]:
        skip = {name for name in names if name in _CACHE_DIRS}
        if Path(directory).resolve() == root:
            skip |= {name for name in names if name in _ROOT_EXCLUDES}
        return skip

    return ignore


def make_copy(root: Path, dest: Path) -> Path:
    shutil.copytree(root, dest, ignore=_copy_ignore(root), symlinks=True)
    return dest


def _check_package_location(run: TestRun, project: Path, package: str) -> None:
    if run.package_error:
        raise SetupError(f"inside pytest, `import {package}` fails in the project copy: {run.package_error}")
    files = run.package_files or []
    # A namespace package lists every portion on sys.path; its submodules come from the first one.
    if not files or not Path(files[0]).resolve().is_relative_to(project.resolve()):
        raise SetupError(
            f"inside pytest, `import {package}` resolves to {', '.join(files) or 'nothing'}, not to the "
            f"temporary project copy {project}; mutants would not be seen by the tests (an installed "
            f"copy or a pytest11 plugin entry point shadows it)"
        )


def _describe_red(run: TestRun) -> str:
    lines = [f"  {error}" for error in run.collect_errors]
    lines += [f"  {t}: {run.messages.get(t, '')}".rstrip(": ") for t in run.failed()]
    if not lines:
        lines = [f"  pytest exit status {run.returncode}: {_tail(run.output, 5)}"]
    return "\n".join(lines)


def run_baseline(ctx: Context, project: Path) -> TestRun:
    ctx.say(f"[baseline] running the unmutated suite: {' '.join(ctx.config.harness.tests)}")
    started = time.monotonic()
    run = ctx.pytest(project, ctx.config.harness.tests, exitfirst=False)
    if run.timed_out:
        raise SetupError(
            f"the unmutated suite did not finish within timeout_s={ctx.timeout:g}; raise timeout_s"
        )
    if run.returncode != 0:
        raise SetupError(f"the unmutated suite is not green; refusing to run mutants:\n{_describe_red(run)}")
    _check_package_location(run, project, ctx.config.harness.package)
    ctx.say(f"[baseline] {len(run.outcomes)} tests green in {time.monotonic() - started:.1f}s")
    return run


def check_killed_by_exist(config: Config, baseline: TestRun) -> None:
    problems = [
        f"  mutant {m.spec.id!r}: killed_by {entry!r}"
        for m in config.mutants
        for entry in m.spec.killed_by
        if entry_status(entry, baseline.outcomes) == "absent"
    ]
    if problems:
        raise ConfigError(
            "killed_by test(s) not collected by the configured tests "
            f"({', '.join(config.harness.tests)}):\n" + "\n".join(problems)
        )


def _report_progress(ctx: Context, result: Result, done: int, total: int) -> None:
    note = f" - {result.detail}" if result.detail and result.verdict != KILLED else ""
    ctx.say(f"[{done}/{total}] {result.mutant.spec.id}: {result.verdict} ({result.seconds:.1f}s){note}")


def run_canary(ctx: Context, project: Path, full: bool, total: int) -> Result:
    canary = ctx.config.canary()
    ctx.say(f"[start] {canary.spec.id} (canary)")
    result = evaluate(ctx, project, canary, full)
    result.canary = True
    _report_progress(ctx, result, 1, total)
    if result.verdict not in (KILLED, WRONG_REASON):
        raise SetupError(
            f"run is void: canary mutant {canary.spec.id!r} was {result.verdict}"
            f"{' (' + result.detail + ')' if result.detail else ''}; the harness's edits or test runs "
            "are not taking effect, so no other verdict could be trusted"
        )
    return result


def _worker(ctx: Context, slots: queue.Queue[Path], mutant: Mutant, full: bool) -> Result:
    project = slots.get()
    try:
        ctx.say(f"[start] {mutant.spec.id}")
        return evaluate(ctx, project, mutant, full)
    finally:
        slots.put(project)


def run_parallel(ctx: Context, first: Path, mutants: list[Mutant], jobs: int, full: bool) -> list[Result]:
    slots: queue.Queue[Path] = queue.Queue()
    slots.put(first)
    for index in range(1, min(jobs, len(mutants))):
        # from the snapshot taken before the baseline: the tree may have changed since
        slots.put(make_copy(ctx.snapshot, ctx.tmp / f"slot{index}" / "project"))
    results: list[Result] = []
    pool = ThreadPoolExecutor(max_workers=max(1, min(jobs, len(mutants))))
    try:
        futures: list[Future[Result]] = [pool.submit(_worker, ctx, slots, m, full) for m in mutants]
        for future in as_completed(futures):
            results.append(future.result())
            _report_progress(ctx, results[-1], len(results) + 1, len(mutants) + 1)
    except BaseException:
        ctx.runner.cancel_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results


@dataclass
class RunReport:
    results: list[Result]
    runtime: str
    full: bool
    seconds: float
    config: Path

    @property
    def exit_code(self) -> int:
        return EXIT_FINDING if any(r.is_finding for r in self.results) else EXIT_OK


COPIES_PREFIX = "critical-mutants-"
_OWNER = "owner"


def _identity(pid: int) -> str | None:
    """pid and kernel start time: a pid the kernel gave to a later process does not match."""
    try:
        return f"{pid} {Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[19]}"
    except (OSError, IndexError):
        return None


def remove_stale_copies(where: Path) -> list[Path]:
    """Remove the temporary copies of runs whose process is gone (a SIGKILLed harness leaves its own)."""
    removed = []
    for folder in where.glob(f"{COPIES_PREFIX}*"):
        owner = folder / _OWNER
        try:
            recorded = owner.read_text(encoding="utf-8").strip()
            pid = int(recorded.split()[0])
        except (OSError, ValueError, IndexError):
            # no owner written yet: a run between making the folder and naming itself, unless long dead
            with contextlib.suppress(OSError):
                if time.time() - folder.stat().st_mtime > 3600:
                    shutil.rmtree(folder, ignore_errors=True)
                    removed.append(folder)
            continue
        if not _still_running(pid, recorded):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _still_running(pid: int, recorded: str) -> bool:
    if Path("/proc/self/stat").is_file():
        return _identity(pid) == recorded
    try:  # no /proc: a live pid is taken as the owner
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_tree(tmp: Path) -> None:
    # a child killed a moment ago may still be closing files in it: try again briefly
    for _ in range(50):
        shutil.rmtree(tmp, ignore_errors=True)
        if not tmp.exists():
            return
        time.sleep(0.1)


def execute(config: Config, args: argparse.Namespace, selected: list[Mutant]) -> RunReport:
    started = time.monotonic()
    for stale in remove_stale_copies(Path(tempfile.gettempdir())):
        print(f"critical_mutants: removed {stale}, left by a run that is gone", file=sys.stderr)
    tmp = Path(tempfile.mkdtemp(prefix=COPIES_PREFIX))
    runner = Runner()
    try:
        (tmp / _OWNER).write_text(_identity(os.getpid()) or str(os.getpid()), encoding="utf-8")
        ctx = Context(config, tmp, runner, args.runtime)
        ctx.plugin_dir.mkdir()
        (tmp / "outcomes").mkdir()
        shutil.copy2(PLUGIN_SOURCE, ctx.plugin_dir / PLUGIN_SOURCE.name)
        # One snapshot of the tree, before the baseline; every copy comes from it, so editing the
        # working tree during a run changes no verdict.
        make_copy(config.root, ctx.snapshot)
        first = make_copy(ctx.snapshot, tmp / "slot0" / "project")
        check_killed_by_exist(config, run_baseline(ctx, first))
        canary = config.canary()
        others = [m for m in selected if m.spec.id != canary.spec.id]
        results = [run_canary(ctx, first, args.full, len(others) + 1)]
        jobs = args.jobs or config.harness.jobs
        results += run_parallel(ctx, first, others, jobs, args.full) if others else []
    finally:
        # A second ^C or a SIGTERM must not cut the cleanup short.
        previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
        runner.cancel_all()
        _remove_tree(tmp)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    order = {m.spec.id: i for i, m in enumerate(config.mutants)}
    results.sort(key=lambda r: order[r.mutant.spec.id])
    return RunReport(results, args.runtime, args.full, time.monotonic() - started, config.path)


# --------------------------------------------------------------------------- reporting


def _table_text(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None = None) -> str:
    """Columns padded to line up; with ``width``, each line is clipped to it (the JSON keeps it all)."""
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    lines = [
        "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [headers, [("-" * w) for w in widths], *rows]
    ]
    return "\n".join(_fit(line, width) for line in lines)


def _fit(line: str, width: int | None) -> str:
    return line if width is None or len(line) <= width else line[: max(1, width - 1)] + "…"


def terminal_width(verbose: bool) -> int | None:
    """Tables are clipped to the terminal (COLUMNS, else 100 off a terminal); not at all when verbose."""
    return None if verbose else max(40, shutil.get_terminal_size((100, 24)).columns)


def _note(result: Result) -> str:
    if result.verdict == KILLED:
        message = _clip(result.first_failure[1]) if result.first_failure else ""
        return f"failed: {', '.join(result.failed_tests)}" + (f" -- {message}" if message else "")
    if result.missing_killed_by:
        return f"should have failed and did not: {', '.join(result.missing_killed_by)}"
    if result.verdict == NOT_EXERCISED:
        return f"all killed_by skipped: {', '.join(result.skipped_killed_by)}"
    return result.detail or ""


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _finding_details(result: Result) -> str:
    spec = result.mutant.spec
    lines = [
        f"=== {spec.id}: {result.verdict} ===",
        f"file: {spec.file}   scope: {spec.scope}",
        f"why: {spec.why}",
        f"killed_by: {', '.join(spec.killed_by)}",
    ]
    if result.missing_killed_by:
        lines.append(f"should have failed and did not: {', '.join(result.missing_killed_by)}")
    if result.failed_tests:
        lines.append(f"tests that failed instead: {', '.join(result.failed_tests)}")
    if result.first_failure:
        lines.append(f"first failure: {result.first_failure[0]}: {result.first_failure[1]}")
    if result.detail:
        lines.append(f"detail: {result.detail}")
    return "\n".join(lines) + "\n" + result.mutant.diff


def kill_matrix(results: Sequence[Result], width: int | None = None) -> str:
    failed = {t for r in results for t in r.failed_tests}
    # A killed_by entry that matched no failing node id still gets a row, to show its "-".
    unmatched = {
        e for r in results for e in r.missing_killed_by if not any(_entry_matches(e, t) for t in failed)
    }
    legend = [_fit(f"  {i:>3}: {r.mutant.spec.id}", width) for i, r in enumerate(results, start=1)]
    # one character per mutant, in legend order, then the test: the grid stays narrow, the name is clipped
    rows = [["".join(_matrix_cell(test, r) for r in results), test] for test in sorted(failed | unmatched)]
    ruler = "".join(str(i % 10) for i in range(1, len(results) + 1))
    key = "K = killed_by test failed, x = other test failed, - = killed_by test did not fail, . = passed"
    return "\n".join(
        [_fit("Kill matrix (" + key + "):", width), *legend, _table_text([ruler, "test"], rows, width)]
    )


def _matrix_cell(test: str, result: Result) -> str:
    if test in result.failed_tests:
        return "K" if any(_entry_matches(e, test) for e in result.mutant.spec.killed_by) else "x"
    return "-" if any(_entry_matches(e, test) for e in result.missing_killed_by) else "."


def render(report: RunReport, width: int | None = None) -> str:
    rows = [
        [r.mutant.spec.id + (" (canary)" if r.canary else ""), r.verdict, f"{r.seconds:.1f}s", _note(r)]
        for r in report.results
    ]
    parts = [_table_text(["mutant", "verdict", "time", "tests"], rows, width)]
    parts += [_finding_details(r) for r in report.results if r.is_finding]
    if report.full:
        parts.append(kill_matrix(report.results, width))
    counts = {v: sum(r.verdict == v for r in report.results) for v in VERDICTS}
    summary = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    status = "OK" if report.exit_code == EXIT_OK else "FAIL"
    parts.append(
        f"critical mutants ({report.runtime} runtime): {len(report.results)} run, {summary} "
        f"in {report.seconds:.1f}s -> {status} (exit {report.exit_code})"
    )
    return "\n\n".join(parts)


def report_json(report: RunReport) -> dict[str, object]:
    totals: dict[str, int] = {v: sum(r.verdict == v for r in report.results) for v in VERDICTS}
    totals["mutants"] = len(report.results)
    totals["findings"] = sum(r.is_finding for r in report.results)
    data: dict[str, object] = {
        "config": str(report.config),
        "runtime": report.runtime,
        "full": report.full,
        "exit_code": report.exit_code,
        "seconds": round(report.seconds, 3),
        "totals": totals,
        "mutants": [_result_json(r) for r in report.results],
    }
    if report.full:
        data["kill_matrix"] = {r.mutant.spec.id: r.failed_tests for r in report.results}
    return data


def _result_json(result: Result) -> dict[str, object]:
    spec = result.mutant.spec
    return {
        "id": spec.id,
        "verdict": result.verdict,
        "finding": result.is_finding,
        "canary": result.canary,
        "file": spec.file,
        "scope": spec.scope,
        "why": spec.why,
        "killed_by": list(spec.killed_by),
        "failed_tests": result.failed_tests,
        "missing_killed_by": result.missing_killed_by,
        "skipped_killed_by": result.skipped_killed_by,
        "first_failure": result.first_failure[1] if result.first_failure else None,
        "first_failure_test": result.first_failure[0] if result.first_failure else None,
        "detail": result.detail,
        "diff": result.mutant.diff,
        "seconds": round(result.seconds, 3),
    }


def report_junit(report: RunReport) -> ET.ElementTree[ET.Element]:
    findings = sum(r.is_finding for r in report.results)
    suites = ET.Element("testsuites")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"critical-mutants.{report.runtime}",
        tests=str(len(report.results)),
        failures=str(findings),
        errors="0",
        skipped="0",
        time=f"{report.seconds:.3f}",
    )
    for result in report.results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=_xml_text(f"critical_mutants.{result.mutant.spec.file}"),
            name=result.mutant.spec.id,
            time=f"{result.seconds:.3f}",
        )
        if result.is_finding:
            failure = ET.SubElement(
                case, "failure", message=_xml_text(f"{result.verdict}: {_note(result)}"), type=result.verdict
            )
            failure.text = _xml_text(_finding_details(result))
    return ET.ElementTree(suites)


# XML 1.0 cannot hold these at all, escaped or not; test output can (a NUL in an assertion message).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


# --------------------------------------------------------------------------- command line


def _common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    add = common.add_argument
    # SUPPRESS lets the same options appear before or after the subcommand without clobbering.
    add(
        "--config",
        type=Path,
        default=argparse.SUPPRESS,
        help="config file (default: mutation_config.toml in the repo root)",
    )
    add(
        "--jobs",
        type=_positive_int,
        default=argparse.SUPPRESS,
        help="parallel mutants (default: config jobs)",
    )
    add(
        "--only",
        action="append",
        metavar="ID",
        default=argparse.SUPPRESS,
        help="run only this mutant (repeatable)",
    )
    add(
        "--full",
        action="store_true",
        default=argparse.SUPPRESS,
        help="run the whole suite per mutant; print the kill matrix",
    )
    add(
        "--runtime",
        choices=("simulated", "cuda"),
        default=argparse.SUPPRESS,
        help=f"exported as {RUNTIME_ENV}",
    )
    add(
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print tables at full width (otherwise clipped to the terminal; the JSON has everything)",
    )
    add(
        "--root",
        type=Path,
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="the project the catalogue describes (default: the git top-level of the working directory, "
        "else the config file's folder)",
    )
    add("--json", type=Path, metavar="FILE", default=argparse.SUPPRESS, help="write a JSON report")
    add("--junit", type=Path, metavar="FILE", default=argparse.SUPPRESS, help="write a JUnit XML report")
    return common


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    # Fresh option objects per parser: parents share Action objects, so set_defaults on the main
    # parser would otherwise turn the subcommands' SUPPRESS defaults into real ones.
    parser = argparse.ArgumentParser(
        prog="critical_mutants.py",
        description="Apply hand-written critical mutants to a temporary copy of the project and check "
        "that their named tests kill them. Exit 0: all killed; 1: a finding; 2: bad input or setup.",
        parents=[_common_options()],
    )
    parser.set_defaults(
        command="run",
        config=DEFAULT_CONFIG,
        jobs=None,
        only=[],
        full=False,
        runtime="simulated",
        verbose=False,
        root=None,
        json=None,
        junit=None,
    )
    sub = parser.add_subparsers(dest="command", metavar="{run,list,show}")
    sub.add_parser("run", parents=[_common_options()], help="run the mutants (the default)")
    sub.add_parser("list", parents=[_common_options()], help="list the mutants: id, file, scope, why")
    show = sub.add_parser("show", parents=[_common_options()], help="print one mutant's unified diff")
    show.add_argument("mutant_id", metavar="ID")
    return parser


def _select(config: Config, only: list[str]) -> list[Mutant]:
    known = {m.spec.id for m in config.mutants}
    unknown = [i for i in only if i not in known]
    if unknown:
        raise ConfigError(f"--only: unknown mutant id(s): {', '.join(map(repr, unknown))}")
    return [m for m in config.mutants if not only or m.spec.id in only]


def cmd_list(config: Config, width: int | None = None) -> int:
    rows = [[m.spec.id, m.spec.file, m.spec.scope, m.spec.why] for m in config.mutants]
    print(_table_text(["id", "file", "scope", "why"], rows, width))
    return EXIT_OK


def cmd_show(config: Config, mutant_id: str) -> int:
    mutant = next((m for m in config.mutants if m.spec.id == mutant_id), None)
    if mutant is None:
        raise ConfigError(f"show: unknown mutant id {mutant_id!r}")
    print(mutant.diff, end="")
    return EXIT_OK


def check_outputs(args: argparse.Namespace) -> None:
    """Every file the run will write, checked (its folder made) before any mutant runs."""
    for option, path in (("--json", args.json), ("--junit", args.junit)):
        if path is None:
            continue
        if path.is_dir():
            raise ConfigError(f"{option} {path} is a directory")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"{option} {path}: cannot create its folder ({exc.strerror})") from exc
        if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise ConfigError(f"{option} {path}: not writable")


def check_device(runtime: str) -> None:
    """``--runtime cuda`` needs a device that answers; without one, stop before the baseline."""
    if runtime != "cuda":
        return
    probe = (
        "from cuda.bindings import runtime as r\n"
        "err, count = r.cudaGetDeviceCount()\n"
        "print(int(err), count, r.cudaGetErrorName(err)[1].decode())\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
        )
        err, count, name = done.stdout.split()
    except (OSError, ValueError, subprocess.TimeoutExpired):
        raise SetupError(
            "--runtime cuda: cuda.bindings could not be asked for a device here "
            "(is cuda-python installed?); use --runtime simulated off a GPU host"
        ) from None
    if int(err) != 0 or int(count) < 1:
        raise SetupError(
            f"--runtime cuda: no CUDA device answers here ({name}, {count} device(s)); "
            "run on a GPU host, or use --runtime simulated"
        )


def cmd_run(config: Config, args: argparse.Namespace) -> int:
    check_outputs(args)
    check_device(args.runtime)
    report = execute(config, args, _select(config, args.only))
    print(render(report, terminal_width(args.verbose)))
    if args.json is not None:
        args.json.write_text(json.dumps(report_json(report), indent=2) + "\n", encoding="utf-8")
    if args.junit is not None:
        report_junit(report).write(args.junit, encoding="utf-8", xml_declaration=True)
    return report.exit_code


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    become_subreaper()
    # Explicit, because a shell starting us as a background job hands SIGINT down ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        config = load_config(args.config, project_root(args.root, args.config))
        if args.command == "list":
            return cmd_list(config, terminal_width(args.verbose))
        if args.command == "show":
            return cmd_show(config, args.mutant_id)
        return cmd_run(config, args)
    except (ConfigError, SetupError) as exc:
        kind = "config error" if isinstance(exc, ConfigError) else "error"
        print(f"critical_mutants: {kind}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("critical_mutants: interrupted; temporary copies removed", file=sys.stderr)
        return EXIT_SIGINT
    except _Terminated:
        print("critical_mutants: terminated; temporary copies removed", file=sys.stderr)
        return EXIT_SIGTERM


if __name__ == "__main__":
    sys.exit(main())

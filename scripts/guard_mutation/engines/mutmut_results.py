"""mutmut 3.8's own record of its mutants, read from ``mutants/`` into this tool's ``Mutant`` and ``Outcome``.

For each source file ``F`` mutmut writes ``mutants/F`` (each function's copy ``KEY__mutmut_orig`` beside
its mutants ``KEY__mutmut_N``), ``F.spans`` (the lines of each) and ``F.meta`` (``exit_code_by_key``: the
exit status of each mutant's tests, null until judged); ``mutmut-stats.json`` maps each function to the
tests that reached it. KEY is ``x_function`` or ``xǁClassǁmethod``. Read as JSON and text, without libcst.
"""

from __future__ import annotations

import ast
import difflib
import json
import textwrap
from pathlib import Path
from typing import Any, NamedTuple

from ..model import INVALID, KILLED, NO_TESTS, SURVIVED, TIMEOUT, Mutant, Outcome
from ..reuse import digest, files_digest
from . import EngineError

MUTANTS = "mutants"
STATS = "mutmut-stats.json"
SEPARATOR = "ǁ"  # U+01C1, between a method's class and its name in mutmut's keys

# mutmut's status as this tool's verdict; where the words differ, ``Outcome.detail`` keeps mutmut's.
VERDICT_BY_STATUS = {
    "killed": KILLED,
    "survived": SURVIVED,
    "no tests": NO_TESTS,
    "timeout": TIMEOUT,  # past mutmut's CPU or wall limit (exit 36, SIGXCPU, 255 from a fork-server worker)
    "segfault": TIMEOUT,  # the tests' process died of a signal (SIGSEGV, SIGKILL): noticed, as a hang is
    "caught by type check": INVALID,  # type_check_command refused it: it does not build, so no test ran
    "suspicious": INVALID,  # an exit status that is neither a pass nor a failure: the tests could not run
    "skipped": INVALID,  # mutmut set it aside (exit 34) and judged nothing
    "check was interrupted by user": INVALID,  # stopped (Ctrl-C) before its tests ended
    "not checked": INVALID,  # no result yet: a run that stopped early, or one that judged other mutants
}


def function_key(name: str) -> str:
    """The mangled function of a mutant (``module.KEY``), as mutmut's stats name it."""
    return name.rpartition("__mutmut_")[0]


def function_of(name: str) -> tuple[str, str]:
    """(module, qualified name) of the function a mutant belongs to."""
    module, _, key = function_key(name).rpartition(".")
    if key.startswith("x" + SEPARATOR):
        return module, key[2:].replace(SEPARATOR, ".")
    return module, key.removeprefix("x_")


def key_of(module: str, qualname: str) -> str:
    """The mangled function of ``module:qualname`` (a module-level function or a method)."""
    owner, _, name = qualname.rpartition(".")
    return f"{module}.x{SEPARATOR}{owner}{SEPARATOR}{name}" if owner else f"{module}.x_{name}"


def units(text: str) -> dict[str, tuple[int, int]]:
    """What mutmut may mutate (module-level functions, methods of module-level classes): name -> lines."""
    found: dict[str, tuple[int, int]] = {}
    for node in ast.parse(text).body:
        for item in node.body if isinstance(node, ast.ClassDef) else [node]:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{node.name}.{item.name}" if isinstance(node, ast.ClassDef) else item.name
                found[name] = (item.lineno, item.end_lineno or item.lineno)
    return found


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EngineError(f"{path}: unreadable ({exc}); remove {MUTANTS}/, run mutmut again") from exc
    if not isinstance(data, dict):
        raise EngineError(f"{path}: not the JSON object mutmut 3.8 writes")
    return data


class Entry(NamedTuple):
    file: str  # the source file, relative to the root
    exit_code: int | None
    seconds: float


class State:
    """``mutants/`` as mutmut left it: every mutant of a source file that still exists, and the stats."""

    def __init__(self, root: Path, base: str) -> None:
        self.root, self.dir, self.base = root, root / MUTANTS, base
        if not self.dir.is_dir():
            raise EngineError(f"{self.dir}: no mutmut results here; run `mutmut run` in {root} first")
        self.entries: dict[str, Entry] = {}
        for meta in sorted(self.dir.rglob("*.py.meta")):
            file = meta.relative_to(self.dir).as_posix().removesuffix(".meta")
            if not (root / file).is_file():
                continue  # left by a source file since deleted
            data = read_json(meta)
            codes, seconds = data.get("exit_code_by_key"), data.get("durations_by_key") or {}
            if not isinstance(codes, dict):
                raise EngineError(f"{meta}: no exit_code_by_key; not a .meta file of mutmut 3.8")
            for name, code in codes.items():
                self.entries[name] = Entry(file, code, float(seconds.get(name) or 0.0))
        path = self.dir / STATS
        stats = read_json(path).get("tests_by_mangled_function_name") if path.is_file() else {}
        self.tests = {str(k): frozenset(map(str, v)) for k, v in (stats or {}).items()}
        self._mutants: dict[str, Mutant] = {}
        self._tests: dict[str, str] = {}  # by function: the code of the tests that reach it, by file
        self._code: dict[str, str] = {}
        self._sources: dict[str, tuple[list[str], dict[str, tuple[int, int]]]] = {}
        self._mutated: dict[str, tuple[list[str], dict[str, list[int]]]] = {}

    def names(self) -> list[str]:
        number = {n: int(n.rpartition("__mutmut_")[2]) for n in self.entries}
        return sorted(self.entries, key=lambda n: (self.entries[n].file, function_key(n), number[n]))

    def depends(self, name: str) -> str:
        """The digest of ``base``, the mutant's diff and the code of the tests that reached its function."""
        key = function_key(name)
        if key not in self._tests:
            files = sorted({test.partition("::")[0] for test in self.tests.get(key, ())})
            for file in set(files) - self._code.keys():
                self._code[file] = files_digest(self.root, [self.root / file])
            self._tests[key] = digest([self._code[f] for f in files])
        return digest([self.base, self.mutant(name).diff, self._tests[key]])

    def source(self, file: str) -> tuple[list[str], dict[str, tuple[int, int]]]:
        if file not in self._sources:
            text = (self.root / file).read_text(encoding="utf-8")
            self._sources[file] = text.splitlines(), units(text)
        return self._sources[file]

    def mutant(self, name: str) -> Mutant:
        if name not in self._mutants:
            file = self.entries[name].file
            module, qualname = function_of(name)
            before, after = self.texts(name)
            diff = "\n".join(difflib.unified_diff(before, after, file, file, lineterm=""))
            line, end = self._where(file, qualname, before, after)
            self._mutants[name] = Mutant(
                "mutmut", name, file, line, end, "mutmut", diff, f"{module}:{qualname}"
            )
        return self._mutants[name]

    def texts(self, name: str) -> tuple[list[str], list[str]]:
        """The function before and after the mutation, as ``mutmut show`` diffs them, read by ``.spans``."""
        file = self.entries[name].file
        if file not in self._mutated:
            spans = read_json(self.dir / f"{file}.spans").get("spans") or {}
            self._mutated[file] = (self.dir / file).read_text(encoding="utf-8").splitlines(), spans
        lines, spans = self._mutated[file]
        generated = name.rpartition(".")[2]
        function = function_of(name)[1].rpartition(".")[2]
        texts = []
        for key in (generated.rpartition("__mutmut_")[0] + "__mutmut_orig", generated):
            if key not in spans:
                raise EngineError(
                    f"{self.dir / file}.spans has no {key}; remove {MUTANTS}/, run mutmut again"
                )
            first, last = spans[key]
            text = textwrap.dedent("\n".join(lines[first - 1 : last])).strip()
            texts.append(text.replace(f"def {key}(", f"def {function}(", 1).split("\n"))
        return texts[0], texts[1]

    def _where(self, file: str, qualname: str, before: list[str], after: list[str]) -> tuple[int, int]:
        """The source lines the mutation changes; the whole function where they cannot be told."""
        lines, found = self.source(file)
        first, last = found.get(qualname, (1, len(lines)))
        matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
        changed = [op for op in matcher.get_opcodes() if op[0] != "equal"]
        if not changed:
            return first, last
        start, stop = changed[0][1], max(changed[-1][2] - 1, changed[0][1])
        head = next((i for i, text in enumerate(before) if text.lstrip().startswith(("def ", "async "))), 0)
        line, end = first + start - head, first + stop - head
        anchor = before[min(start, len(before) - 1)].strip()
        if not first <= line <= end <= last or lines[line - 1].strip() != anchor:
            return first, last
        return line, end

    def outcome(self, name: str) -> Outcome:
        from mutmut.stats import status_by_exit_code  # its status of each exit code, "suspicious" for others

        entry = self.entries[name]
        status = status_by_exit_code[entry.exit_code]
        verdict = VERDICT_BY_STATUS[status]
        said = f"mutmut: {status} (exit status {entry.exit_code})"
        detail = "" if status.replace(" ", "-") == verdict else said
        return Outcome(verdict, (), entry.seconds, detail, self.depends(name) if verdict != INVALID else "")

    def clear(self, names: set[str]) -> None:
        """Forget mutmut's verdicts of ``names`` (``exit_code_by_key`` back to null): it judges them again."""
        for file in sorted({self.entries[n].file for n in names}):
            meta = self.dir / f"{file}.meta"
            data = read_json(meta)
            codes = data["exit_code_by_key"]
            data["exit_code_by_key"] = {k: None if k in names else v for k, v in codes.items()}
            meta.write_text(json.dumps(data, indent=4), encoding="utf-8")  # as mutmut does
        for name in names:
            self.entries[name] = Entry(self.entries[name].file, None, 0.0)

    def forget_tests(self, files: set[str]) -> None:
        """Make the tests of ``files`` new to mutmut, which records what a new test reaches (and no other)."""
        path = self.dir / STATS
        if files and path.is_file():
            data = read_json(path)
            timed = data.get("duration_by_test") or {}
            data["duration_by_test"] = {t: s for t, s in timed.items() if t.partition("::")[0] not in files}
            path.write_text(json.dumps(data, indent=4), encoding="utf-8")

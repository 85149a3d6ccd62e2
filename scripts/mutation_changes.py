"""What changed since a git commit, as every engine scopes by it: the lines whose code changed, per file.

A change that only touches comments, blank lines or the spacing inside a line changes no code, so it
selects nothing: each version of a file is read as its logical lines of tokens (comments and line breaks
inside brackets dropped, indentation kept as depth), and only the lines whose tokens differ count.
Nothing here imports mutmut, pytest or guard_lib.
"""

from __future__ import annotations

import ast
import difflib
import fnmatch
import hashlib
import io
import subprocess
import tokenize
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from mutation_io import InputError
from mutation_sweep import cython_view
from mutation_sweep.select_tests import definitions

SOURCES = (".py", ".pyx")
_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}


@dataclass(frozen=True)
class Changes:
    since: str  # the ref as given
    commit: str
    lines: dict[str, frozenset[int]] = field(default_factory=dict)  # file -> lines of changed code, now
    # test files whose code changed (or that are new or gone), and every test file beside or below a
    # changed helper (a conftest, a support module), which may change what any of them does
    tests: frozenset[str] = frozenset()
    cosmetic: tuple[str, ...] = ()  # files whose change was comments or spacing alone
    # file -> qualified names of the functions whose bodies hold changed lines (methods included)
    functions: dict[str, frozenset[str]] = field(default_factory=dict)
    # a test file of ``tests`` whose changed lines all lie inside its tests -> those tests (``Class.test_x``):
    # only they changed. A file of ``tests`` not here changed as a whole.
    test_functions: dict[str, frozenset[str]] = field(default_factory=dict)
    # what changed of how every test runs (``mutation_environment.configuration``): then every test counts
    # as changed, whole
    configuration: tuple[str, ...] = ()

    def in_changed_function(self, file: str, scope: str) -> bool:
        """Whether ``scope`` (a qualified name) is a function of ``file`` whose body changed."""
        return scope in self.functions.get(file, ())

    def changed_test(self, test: str) -> bool:
        """Whether the test (a node id, or its file) is one whose code, or a helper's beside it, changed."""
        file, name = function_of(test)
        if file not in self.tests:
            return False
        only = self.test_functions.get(file)
        return only is None or not name or name in only

    def touches(self, file: str, first: int, last: int) -> bool:
        changed = self.lines.get(file)
        return changed is not None and any(first <= n <= last for n in changed)

    def within(self, files: Collection[str], tests: Sequence[str]) -> Changes:
        """These changes as an engine sees them: in the files it mutates and the tests its suite runs."""
        under = tuple(t.rstrip("/") for t in tests)

        def ran(path: str) -> bool:
            return any(path == u or path.startswith(f"{u}/") for u in under)

        return replace(
            self,
            lines={f: n for f, n in self.lines.items() if f in files},
            functions={f: n for f, n in self.functions.items() if f in files},
            tests=frozenset(t for t in self.tests if ran(t)),
            test_functions={f: n for f, n in self.test_functions.items() if ran(f)},
            cosmetic=tuple(f for f in self.cosmetic if f in files),
        )

    def describe(self) -> str:
        """One line: what changed, file by file, as line ranges."""
        parts = [f"{f} {_ranges(sorted(lines))}" for f, lines in sorted(self.lines.items())]
        tests = [
            f"{t} ({', '.join(sorted(self.test_functions[t]))})" if t in self.test_functions else t
            for t in sorted(self.tests)
        ]
        parts += [f"tests {', '.join(tests)}"] if tests else []
        parts += [f"comments or spacing only in {', '.join(self.cosmetic)}"] if self.cosmetic else []
        parts += [f"{', '.join(self.configuration)}, so every test"] if self.configuration else []
        return f"changed since {self.since}: " + ("; ".join(parts) or "no code")


def verify_ref(ref: str, repo: Path) -> str:
    """The commit ``ref`` names, checked by git before anything uses it; an option-like ref is refused,
    and so is the checked-out commit of a clean tree: compared with itself, any change passes unseen."""
    commit = _commit(ref, repo)
    if commit is None:
        raise InputError(
            f"--changed-since {ref!r}: not a commit in {repo} (`git rev-parse --verify` refused it)"
        )
    if commit == _commit("HEAD", repo) and not _git(repo, "status", "--porcelain", "--untracked-files"):
        raise InputError(
            f"--changed-since {ref}: {ref} is the checked-out commit, so nothing is compared: name the "
            "commit the change started from, such as origin/main or HEAD~1"
        )
    return commit


def _commit(ref: str, repo: Path) -> str | None:
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
    return found.stdout.strip() if found.returncode == 0 and found.stdout.strip() else None


def changed_since(ref: str, repo: Path, tests: str = "tests") -> Changes:
    """The code changed since ``ref`` in the working tree (committed, staged or not, and new files)."""
    commit = verify_ref(ref, repo)
    names = _git(repo, "diff", "--name-only", "--no-renames", commit, "--")
    names += _git(repo, "ls-files", "--others", "--exclude-standard")
    lines: dict[str, frozenset[int]] = {}
    changed_tests: set[str] = set()
    cosmetic: list[str] = []
    functions: dict[str, frozenset[str]] = {}
    test_functions: dict[str, frozenset[str]] = {}
    for path in sorted({n for n in names if n.endswith(SOURCES)}):
        old = text_at(repo, commit, path)
        file = repo / path
        new = file.read_text(encoding="utf-8") if file.is_file() else ""
        found = changed_code_lines(old, new)
        if not found and not (old == "" or new == ""):
            cosmetic.append(path)
            continue
        if path.startswith(f"{tests}/"):
            changed_tests.add(path)
            only = changed_tests_within(old, new, found) if old and new else None
            if only is not None and Path(path).name.startswith("test_"):
                test_functions[path] = only
        elif new:
            lines[path] = frozenset(found)
            functions[path] = frozenset(functions_holding(new, found, cython=path.endswith(".pyx")))
    # imported here: it takes its reading of code from this module
    from mutation_environment import configuration_changed, python_files

    patterns = python_files(repo)
    beside = _beside_helpers(repo, changed_tests, patterns)
    beside |= _importers(repo, tests, changed_tests | beside, patterns)
    configured = configuration_changed(repo, commit)
    if configured:
        beside |= _test_files(repo / tests, repo, patterns)
    changed_tests |= beside
    # a test beside a changed helper may behave differently anywhere in it
    test_functions = {f: n for f, n in test_functions.items() if f not in beside}
    return Changes(
        ref, commit, lines, frozenset(changed_tests), tuple(cosmetic), functions, test_functions, configured
    )


def _test_files(folder: Path, repo: Path, patterns: Sequence[str]) -> set[str]:
    """The files under ``folder`` pytest collects (their names match one of ``patterns``)."""
    found = (p for p in folder.rglob("*.py") if any(fnmatch.fnmatch(p.name, n) for n in patterns))
    return {p.relative_to(repo).as_posix() for p in found}


def _importers(repo: Path, tests: str, changed: set[str], patterns: Sequence[str]) -> set[str]:
    """The test files that import from a changed test file."""
    found = set()
    for rel in sorted(_test_files(repo / tests, repo, patterns)):
        path = repo / rel
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        if imported_tests(rel, tree, repo) & changed:
            found.add(rel)
    return found


def _beside_helpers(repo: Path, changed: set[str], patterns: Sequence[str]) -> set[str]:
    """The test files in the folders (and below) of the changed files that are not tests themselves."""
    found: set[str] = set()
    for helper in (Path(t) for t in changed if not any(fnmatch.fnmatch(Path(t).name, n) for n in patterns)):
        found |= _test_files(repo / helper.parent, repo, patterns)
    return found


def changed_code_lines(old: str, new: str) -> set[int]:
    """Lines of ``new`` whose code differs from ``old``; a removal marks the lines either side of it."""
    before, after = _logical_lines(old), _logical_lines(new)
    matcher = difflib.SequenceMatcher(None, [k for k, _ in before], [k for k, _ in after], autojunk=False)
    found: set[int] = set()
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            for _, span in after[j1:j2]:
                found.update(span)
        elif tag == "delete":
            for _, span in after[max(j1 - 1, 0) : j1 + 1]:
                found.update(span)
    return found


def functions_holding(text: str, lines: Iterable[int], *, cython: bool = False) -> set[str]:
    """The qualified names of the innermost functions whose bodies hold any of ``lines``.

    Named as the engines name a mutant's scope: ``Class.method``, ``outer.inner``. Cython is read through
    the sweep's Python view of it; a source that still does not parse names none.
    """
    if cython:
        text = cython_view.view(text).text
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    spans = [
        (node.body[0].lineno, node.end_lineno or node.lineno, name)
        for name, node in definitions(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
    ]
    found = set()
    for line in lines:
        holding = [(end - start, name) for start, end, name in spans if start <= line <= end]
        if holding:
            found.add(min(holding)[1])
    return found


def function_of(test: str) -> tuple[str, str]:
    """A node id's file and qualified function: ``f.py::Class::test_x[p]`` -> ``(f.py, Class.test_x)``."""
    file, _, rest = test.partition("::")
    return file, rest.split("[", maxsplit=1)[0].replace("::", ".")


def spans_of_tests(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """Each test pytest collects by its default names (a module's ``test*`` functions, and the ``test*``
    methods of its ``Test*`` classes) by qualified name, with its lines from its first decorator to its
    end."""
    spans: dict[str, tuple[int, int]] = {}

    def visit(body: Iterable[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                spans[f"{prefix}{node.name}"] = (first, node.end_lineno or node.lineno)

    visit(tree.body, "")
    return spans


def shared_code(text: str, spans: Mapping[str, tuple[int, int]]) -> str:
    """The code of ``text`` outside the ``spans`` of its tests: what every test of the file depends on."""
    inside = {n for first, last in spans.values() for n in range(first, last + 1)}
    return code_of("\n".join(line for n, line in enumerate(text.splitlines(), start=1) if n not in inside))


def imported_tests(rel: str, tree: ast.Module, root: Path) -> set[str]:
    """The test files (``test_*.py``) the file ``rel`` imports from: their code is part of its tests'."""
    folder, found = Path(rel).parent, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.level - 1 > len(folder.parents):
                continue
            base = folder.parents[node.level - 2] if node.level > 1 else folder
            parts = node.module.split(".") if node.module else []
            paths = [base.joinpath(*parts)] if parts else [base / a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            paths = [Path(*node.module.split("."))]
        elif isinstance(node, ast.Import):
            paths = [Path(*a.name.split(".")) for a in node.names]
        else:
            continue
        for path in paths:
            file = path.parent / f"{path.name}.py"
            if file.name.startswith("test_") and (root / file).is_file():
                found.add(file.as_posix())
    return found


def changed_tests_within(old: str, new: str, lines: Collection[int]) -> frozenset[str] | None:
    """The tests of ``new`` that hold every one of its changed ``lines``; None where the change reaches
    past them, so the whole file counts: the file's shared code changed (a removal between two tests
    marks only the lines either side of it), a test of ``old`` is gone, or either version does not parse."""
    try:
        before, after = spans_of_tests(ast.parse(old)), spans_of_tests(ast.parse(new))
    except SyntaxError:
        return None
    if not after or set(before) - set(after) or shared_code(old, before) != shared_code(new, after):
        return None
    found: set[str] = set()
    for line in lines:
        holding = [name for name, (first, last) in after.items() if first <= line <= last]
        if not holding:
            return None
        found.update(holding)
    return frozenset(found)


def digest(parts: Iterable[str]) -> str:
    """One SHA-256 of ``parts`` in order, each ended so that no two lists of parts digest alike: what a
    reused verdict is keyed by, in every engine."""
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part.encode())
        sha.update(b"\0")
    return sha.hexdigest()


def code_of(text: str) -> str:
    """``text`` as its code alone: its logical lines of tokens, comments and spacing left out."""
    return "\n".join(key for key, _ in _logical_lines(text))


def _logical_lines(text: str) -> list[tuple[str, range]]:
    """Each logical line as (its tokens with its depth, the physical lines it spans)."""
    try:
        return _tokenized(text)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # Not tokenizable (a Cython construct Python's tokenizer refuses): compare physical lines, their
        # spacing squeezed and comment-only lines dropped.
        out = []
        for number, line in enumerate(text.splitlines(), start=1):
            squeezed = " ".join(line.split())
            if squeezed and not squeezed.startswith("#"):
                out.append((f"{len(line) - len(line.lstrip())}|{squeezed}", range(number, number + 1)))
        return out


def _tokenized(text: str) -> list[tuple[str, range]]:
    out: list[tuple[str, range]] = []
    depth, first = 0, 0
    tokens: list[str] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.INDENT:
            depth += 1
        elif tok.type == tokenize.DEDENT:
            depth -= 1
        elif tok.type == tokenize.NEWLINE:
            if tokens:
                out.append((f"{depth}|{' '.join(tokens)}", range(first, tok.start[0] + 1)))
            tokens = []
        elif tok.type not in _SKIPPED:
            if not tokens:
                first = tok.start[0]
            tokens.append(tok.string)
    if tokens:
        out.append((f"{depth}|{' '.join(tokens)}", range(first, first + 1)))
    return out


def text_at(repo: Path, commit: str, path: str) -> str:
    """``path`` as ``commit`` holds it; "" where it holds none."""
    shown = subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=repo, capture_output=True, text=True, check=False
    )
    return shown.stdout if shown.returncode == 0 else ""  # new since the commit


def _git(repo: Path, *args: str) -> list[str]:
    try:
        done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = exc.stderr.strip() if isinstance(exc, subprocess.CalledProcessError) else str(exc)
        raise InputError(f"git {args[0]} failed: {detail}") from exc
    return done.stdout.splitlines()


def _ranges(numbers: Iterable[int]) -> str:
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)

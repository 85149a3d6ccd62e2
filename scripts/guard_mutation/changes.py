"""What a change touches, for every engine: the lines and functions of code, the tests, the configuration.

A change is the working tree (committed since the ref, staged or not, and new files) against a git ref. A
change of comments or spacing alone changes no code and selects nothing: each version is read as its
logical lines of tokens (``reuse.code_of``). The proof of a change and the nightly gate judge what the
engines make of it through the same ``judge``. Never a false green: a ref that is the checked-out commit
compares what is committed with itself, so where the tree holds no edit of code or tests beside it, the
comparison is refused, naming the ref to use.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .reuse import logical_lines

SOURCES = (".py", ".pyx", ".pxd")
# Files whose change alters how every test runs: then every test counts as changed.
CONFIGURATION = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "mutation_config.toml")
TEST_FILES = ("test_*.py", "*_test.py")
# A definition's header, in Python or Cython.
_HEADER = re.compile(
    r"^(?P<indent>[ \t]*)(?:async\s+)?(?:(?:def|class)\s+|(?:cdef|cpdef)\s+(?:class\s+|inline\s+)?"
    r"(?:[\w.*\[\] ]+?(?:\s+|\*))?)(?P<name>\w+)\s*[(:]"
)


class ChangeError(Exception):
    """The ref cannot be compared with: bad input (exit 2)."""


@dataclass(frozen=True)
class Change:
    since: str  # the ref as given
    commit: str
    lines: dict[str, frozenset[int]] = field(default_factory=dict)  # code file -> its changed lines, now
    functions: frozenset[str] = frozenset()  # "package.module:Qualified.name" whose bodies changed
    tests: frozenset[str] = frozenset()  # test files changed, or beside (or below) a changed helper
    configuration: tuple[str, ...] = ()  # configuration files changed: every test counts as changed

    def touches(self, file: str, first: int, last: int) -> bool:
        return any(first <= n <= last for n in self.lines.get(file, ()))

    def changed_test(self, test: str) -> bool:
        """Whether the test (a node id or its file) may run differently now."""
        return bool(self.configuration) or test.partition("::")[0] in self.tests

    def describe(self) -> str:
        parts = [f"{f} lines {_ranges(sorted(n))}" for f, n in sorted(self.lines.items())]
        parts += [f"tests {', '.join(sorted(self.tests))}"] if self.tests else []
        parts += [f"{', '.join(self.configuration)} (so every test)"] if self.configuration else []
        return f"changed since {self.since}: " + ("; ".join(parts) or "no code")


def changed_since(ref: str, root: Path, package: str, tests: Iterable[str]) -> Change:
    commit = _verify(ref, root)
    names = set(_git(root, "diff", "--name-only", "--no-renames", commit, "--"))
    names |= set(_git(root, "ls-files", "--others", "--exclude-standard"))
    test_roots = tuple(t.rstrip("/") for t in tests)
    lines: dict[str, frozenset[int]] = {}
    functions: set[str] = set()
    changed_tests: set[str] = set()
    for path in sorted(n for n in names if n.endswith(SOURCES)):
        old, file = text_at(root, commit, path), root / path
        new = file.read_text(encoding="utf-8") if file.is_file() else ""
        found = changed_code_lines(old, new)
        if not found and old and new:
            continue  # comments or spacing alone
        if any(path == t or path.startswith(f"{t}/") for t in test_roots):
            changed_tests.add(path)
        elif path.startswith(f"{package}/") and new:
            lines[path] = frozenset(found)
            module = path.rsplit(".", 1)[0].removesuffix("/__init__").replace("/", ".")
            functions |= {f"{module}:{name}" for name in functions_holding(new, found)}
    # A changed helper (a conftest, a support module) may change any test beside or below it.
    for helper in [t for t in changed_tests if not _is_test_file(t)]:
        below = (root / helper).parent
        changed_tests |= {
            p.relative_to(root).as_posix() for p in below.rglob("*.py") if _is_test_file(p.name)
        }
    configuration = tuple(sorted(n for n in names if Path(n).name in CONFIGURATION))
    if not (lines or changed_tests or configuration) and commit == _commit("HEAD", root):
        raise ChangeError(
            f"--changed-since {ref}: {ref} is the checked-out commit, so what is committed on it is compared "
            "with itself and nothing is judged; name the commit the change started from "
            f"(HEAD~1, origin/main, `git merge-base {ref} origin/main`)"
        )
    return Change(ref, commit, lines, frozenset(functions), frozenset(changed_tests), configuration)


def changed_code_lines(old: str, new: str) -> set[int]:
    """Lines of ``new`` whose code differs from ``old``; a removal marks the lines either side of it."""
    before, after = logical_lines(old), logical_lines(new)
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


def definitions(text: str) -> list[tuple[str, int, int]]:
    """(qualified name, first line, last line) of every def and class of Python or Cython ``text``, read
    by indentation: a definition ends before the next line of code indented no deeper than its header."""
    lines = text.splitlines()
    found: list[tuple[str, int, int]] = []
    open_: list[tuple[int, str, int]] = []  # (indent, qualified name, first line)
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        while open_ and indent <= open_[-1][0] and not stripped.startswith((")", "]", "}")):
            _, name, first = open_.pop()
            found.append((name, first, _last_code(lines, number - 1)))
        header = _HEADER.match(line)
        if header:
            prefix = f"{open_[-1][1]}." if open_ else ""
            open_.append((indent, prefix + header["name"], number))
    while open_:
        _, name, first = open_.pop()
        found.append((name, first, _last_code(lines, len(lines))))
    return found


def functions_holding(text: str, lines: Iterable[int]) -> set[str]:
    """The innermost definitions holding any of ``lines``."""
    spans = definitions(text)
    found = set()
    for line in lines:
        holding = [(last - first, name) for name, first, last in spans if first <= line <= last]
        if holding:
            found.add(min(holding)[1])
    return found


def text_at(root: Path, commit: str, path: str) -> str:
    """``path`` as ``commit`` holds it; "" where it holds none."""
    shown = subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=root, capture_output=True, text=True, check=False
    )
    return shown.stdout if shown.returncode == 0 else ""


def _verify(ref: str, root: Path) -> str:
    commit = _commit(ref, root)
    if commit is None:
        raise ChangeError(
            f"--changed-since {ref!r}: not a commit in {root} (`git rev-parse --verify` refused it)"
        )
    return commit


def _commit(ref: str, root: Path) -> str | None:
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        raise ChangeError(f"--changed-since {ref!r}: cannot run git: {exc}") from exc
    return found.stdout.strip() if found.returncode == 0 and found.stdout.strip() else None


def _git(root: Path, *args: str) -> list[str]:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = exc.stderr.strip() if isinstance(exc, subprocess.CalledProcessError) else str(exc)
        raise ChangeError(f"git {args[0]} failed in {root}: {detail}") from exc
    return done.stdout.splitlines()


def _is_test_file(path: str) -> bool:
    return any(fnmatch.fnmatch(Path(path).name, p) for p in TEST_FILES)


def _last_code(lines: list[str], upto: int) -> int:
    while upto > 1 and (not lines[upto - 1].strip() or lines[upto - 1].strip().startswith("#")):
        upto -= 1
    return upto


def _ranges(numbers: Iterable[int]) -> str:
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)

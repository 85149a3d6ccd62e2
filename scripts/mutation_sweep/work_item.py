"""A generated mutant and its verdict: the one record every stage of the sweep shares.

Its key and its words for a verdict are the ones every engine uses (``mutation_model``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from mutation_model import KILLED, SURVIVED, TIMEOUT, mutant_key

# Verdicts. A mutant is killed when a selected test fails (or the mutant cannot be imported, which
# fails every test), survives when all of them pass, and times out past the per-mutant limit. A mutant
# of a compiled source that Cython refuses to translate is invalid: no program, so nothing to judge.
NO_TESTS = "no tests"
INVALID = "invalid"
# A kill's ``failed`` where the mutated module did not import, before any test ran: no test made it
IMPORT_FAILED = "<import>"
VERDICTS = (KILLED, SURVIVED, TIMEOUT, NO_TESTS, INVALID)


@dataclass(frozen=True)
class Mutant:
    """One edit of one node of one file.

    ``key`` names it by what it does, never by where: reviewed equivalents stay valid when code
    elsewhere moves, and go stale when the code they describe changes.
    """

    file: str  # relative to the project root, with forward slashes
    scope: str  # qualified name of the enclosing def or class, or "<module>"
    operator: str
    original: str  # the source text of the node, as written
    mutated: str  # the text that replaces it
    line: int  # first line of the node (1-based); for reports only, never part of the key
    end_line: int
    column: int = 0
    end_column: int = 0
    definition: bool = False  # the edit changes a def or class statement itself, not only its body
    at_import: bool = False  # the statement runs at import: module level or a class body
    # the same edit of the same text can occur more than once in one scope: 1 for the first, 2 for the
    # next, in source order; part of the id, not of the key
    occurrence: int = 1

    @property
    def key(self) -> str:
        return mutant_key(self.file, self.scope, self.operator, self.original, self.mutated)

    @property
    def id(self) -> str:
        """A short stable name: a digest of the key (and occurrence), so shards and reports agree on it."""
        named = self.key if self.occurrence == 1 else f"{self.key}#{self.occurrence}"
        return f"sweep-{hashlib.sha256(named.encode()).hexdigest()[:12]}"

    def lines(self) -> range:
        return range(self.line, self.end_line + 1)


@dataclass(frozen=True)
class Result:
    mutant: Mutant
    verdict: str
    tests: tuple[str, ...] = ()  # the tests run against it, or ("<suite>",) for the whole suite
    failed: str = ""  # the first test that failed, when one did
    duration: float = 0.0
    detail: str = field(default="", compare=False)
    # the digest of all the verdict depends on (``reuse``); "" where it was not recorded
    depends: str = field(default="", compare=False)

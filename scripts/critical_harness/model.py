"""What every stage of the harness shares: constants, errors, and the records of a run."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from mutation_model import CRITICAL_OPERATOR, KILLED, SURVIVED, TIMEOUT, mutant_key

PLUGIN_MODULE = "_mutant_outcomes"
PLUGIN_SOURCE = Path(__file__).resolve().parents[1] / f"{PLUGIN_MODULE}.py"  # copied into every run
OUTCOMES_ENV = "CRITICAL_MUTANTS_OUTCOMES"
PACKAGE_ENV = "CRITICAL_MUTANTS_PACKAGE"
PARENT_ENV = "CRITICAL_MUTANTS_PARENT_PID"
DECIDED_ENV = "CRITICAL_MUTANTS_DECIDED_BY"  # the killed_by entries whose failures decide a kill
SELECT_ENV = "CRITICAL_MUTANTS_SELECT"  # run only these entries' tests; record every collected node id
CALLS_ENV = "CRITICAL_MUTANTS_RECORD_CALLS"  # "1": record which package functions each test calls
PRELOAD_ENV = "CRITICAL_MUTANTS_PRELOAD"  # the warm server's preload list, comma-separated
FIRST_ENV = "CRITICAL_MUTANTS_FIRST"  # node ids to run before the other cases of their test function
RUNTIME_ENV = "GUARD_LIB_TEST_RUNTIME"
DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "mutation_config.toml"

EXIT_OK, EXIT_FINDING, EXIT_BAD_INPUT = 0, 1, 2
EXIT_SIGINT, EXIT_SIGTERM = 130, 143

WRONG_REASON, INVALID, NOT_EXERCISED = "wrong-reason", "invalid", "not-exercised"
VERDICTS = (KILLED, SURVIVED, WRONG_REASON, TIMEOUT, INVALID, NOT_EXERCISED)

MODULE_SCOPE = "<module>"  # the scope of an edit to a module-level statement
# A mutant id shows in tables, JSON, JUnit XML and shell arguments: nothing that could break any of them.
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")

DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


class ConfigError(Exception):
    """The configuration (or the command line) is wrong; nothing was run."""


class SetupError(Exception):
    """The project or environment cannot give a trustworthy verdict."""


class Terminated(Exception):
    """SIGTERM arrived; raised in the main thread so that cleanup runs."""


class Cancelled(Exception):
    """The run is being torn down; worker threads stop starting processes."""


@dataclass(frozen=True)
class Harness:
    package: str
    tests: tuple[str, ...]
    pytest_args: tuple[str, ...]
    timeout_s: float
    jobs: int
    canary: str | None
    # modules the warm test server imports once, before forking, that the tests import only when they run
    preload: tuple[str, ...] = ()


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

    @property
    def key(self) -> str:
        """What the edit does, as every engine names a mutant (``mutation_model.mutant_key``)."""
        return mutant_key(
            self.file, self.scope, CRITICAL_OPERATOR, self.replace or self.delete or "", self.by or ""
        )


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
    collected: list[str] | None = None  # every node id collected, where the run selected some of them
    calls: dict[str, list[str]] = field(default_factory=dict)  # node id -> "file:qualname" it called

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def failed(self) -> list[str]:
        return [nodeid for nodeid in self.order if self.outcomes[nodeid] == "failed"]

    def first_failure(self) -> tuple[str, str] | None:
        """(node id, one-line message) of the first test that failed, in report order."""
        failed = self.failed()
        return (failed[0], self.messages.get(failed[0], "")) if failed else None


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
    engine: str = "cold"  # which engine judged it: warm (forked, code swapped) or cold
    depends: str = ""  # the digest of everything the verdict depends on (``reuse.digests``)
    reused: bool = False  # taken from an earlier run whose inputs were the same (``--reuse``)

    @property
    def is_finding(self) -> bool:
        return self.verdict != KILLED


@dataclass
class RunReport:
    results: list[Result]
    runtime: str
    full: bool
    seconds: float
    config: Path
    engine: str = "cold"
    warm_runs: int = 0  # pytest runs made by the warm engine (the rest were cold)

    @property
    def exit_code(self) -> int:
        return EXIT_FINDING if any(r.is_finding for r in self.results) else EXIT_OK

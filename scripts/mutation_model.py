"""One model of a judged mutant, whichever engine made and ran it: what it edits, its key, its verdict.

mutmut, the sweep and the critical harness each keep the record their own run needs (mutmut's export,
the sweep's work items, the harness's results). The gate turns every one of them into a ``JudgedMutant``
(``mutation_evaluation.judged``), and from there on nothing tells the engines apart: the gate's counts, the
report's rows and the HTML page read only this.

Where things go: a new engine is one more adapter in ``mutation_evaluation.judged``; a new class of verdict is
one more member of ``Verdict``; a new report format reads ``JudgedMutant`` and nothing else.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

# The words the engines share for what their runs saw; each engine has a few more of its own (mutmut's
# "no tests", the harness's "wrong-reason", ...), kept verbatim in ``JudgedMutant.status``.
KILLED, SURVIVED, TIMEOUT = "killed", "survived", "timeout"

MUTMUT, SWEEP, CRITICAL = "mutmut", "sweep", "critical"
ENGINES = (MUTMUT, SWEEP, CRITICAL)
CRITICAL_OPERATOR = "CriticalMutant"  # the harness's kind of edit, beside mutmut's mutators and the sweep's


class Verdict(enum.Enum):
    """What the gate makes of a mutant: every mutant is counted as exactly one of these."""

    KILLED = "killed"
    EQUIVALENT = "reviewed equivalent"  # it survived, and a review says no test could tell it apart
    SKIPPED = "skipped"  # the engine set it aside without running it (mutmut's "skipped")
    NOT_KILLED = "not killed"


def mutant_key(file: str, scope: str, operator: str, original: str, mutated: str) -> str:
    """A mutant named by what it does, never by where: stays valid when code elsewhere moves.

    Whitespace inside the texts does not count, so a reformatted line keeps its key.
    """
    return "|".join((file, scope, operator, _one_line(original), _one_line(mutated)))


@dataclass(frozen=True)
class JudgedMutant:
    engine: str  # one of ENGINES
    id: str  # unique within its engine: mutmut's name, the sweep's digest, the catalogue's id
    key: str  # what it does (``mutant_key``), as its engine names the edit
    file: str  # relative to the project root, with forward slashes; "" when the engine did not say
    scope: str  # the qualified name of the enclosing def or class, or "<module>"
    operator: str  # the kind of edit: mutmut's mutator, the sweep's operator, "CriticalMutant"
    original: str
    replacement: str
    status: str  # the engine's own word for what its run saw
    verdict: Verdict
    line: int = 1
    end_line: int = 1
    column: int = 1
    end_column: int = 1
    note: str = ""  # why: the review's reason, the catalogue's why, or what the status means
    killed_by: tuple[str, ...] = ()  # the tests that failed against it, where the engine says
    duration: float | None = None  # seconds, where the engine measured it
    diff: str = ""

    @property
    def report_id(self) -> str:
        """Unique across engines: mutmut's names as they are, the others' prefixed by their engine."""
        return self.id if self.engine == MUTMUT else f"{self.engine}:{self.id}"


def _one_line(text: str) -> str:
    return " ".join(text.split())

"""The sweep: mutation operators over every executable line of a package, run from a warm process.

Stages, each in its own module: ``operators/`` (one file per operator, with its examples) propose
edits; ``generate`` walks each file and splices them in; ``interceptors/`` drop what need not run;
``select_tests`` maps lines to the tests that reach them; ``scope`` narrows a run to a change;
``runners/warm`` runs a mutant of one function's body in a child of a session that collected the suite
once, and ``runners/forked`` every other in a forked child that collects its own; ``results`` writes
and merges the results; ``reuse`` keeps a verdict whose inputs are unchanged, and ``carry`` what an
earlier run still proves test by test (each test's code, from ``suite_code``); ``judge`` is the sweep's
part of the gate. ``work_item`` holds the record they all share.
"""

from __future__ import annotations

from mutation_model import KILLED, SURVIVED, TIMEOUT

from .work_item import NO_TESTS, VERDICTS, Mutant, Result

__all__ = ["KILLED", "NO_TESTS", "SURVIVED", "TIMEOUT", "VERDICTS", "Mutant", "Result"]

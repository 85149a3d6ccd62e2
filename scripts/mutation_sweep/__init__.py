"""The sweep: mutation operators over every executable line of a package, run from a warm process.

Stages, each in its own module: ``operators/`` (one file per operator, with its examples) propose
edits; ``generate`` walks each file and splices them in; ``interceptors/`` drop what need not run;
``select_tests`` maps lines to the tests that reach them; ``scope`` narrows a run to a change;
``runners/forked`` runs each mutant in a forked child; ``results`` writes and merges the results;
``judge`` is the sweep's part of the gate. ``work_item`` holds the record they all share.
"""

from __future__ import annotations

from mutation_model import KILLED, SURVIVED, TIMEOUT

from .work_item import NO_TESTS, VERDICTS, Mutant, Result

__all__ = ["KILLED", "NO_TESTS", "SURVIVED", "TIMEOUT", "VERDICTS", "Mutant", "Result"]

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

import sys

from critical_harness.catalogue import load_config
from critical_harness.cli import main
from critical_harness.edits import build_mutant
from critical_harness.model import ConfigError, Mutant, MutantSpec
from critical_harness.outcomes import entry_status

__all__ = ["ConfigError", "Mutant", "MutantSpec", "build_mutant", "entry_status", "load_config", "main"]

if __name__ == "__main__":
    sys.exit(main())

"""Run the sweep: see ``mutation_sweep/cli.py`` or ``--help``."""

from __future__ import annotations

import sys

from mutation_sweep.cli import main

if __name__ == "__main__":
    sys.exit(main())

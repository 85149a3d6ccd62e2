"""``python -m guard_mutation``: the same as the ``guard-mutation`` command."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())

"""``python -m guard_mutation``: the same command as ``guard-mutation``."""

from .cli import main

raise SystemExit(main())

"""guard-lib's mutation tooling as one command, ``guard-mutation``: its engines, one store, report and gate.

The engines (the critical-mutant catalogue, mutmut, the line sweep) are registered in ``engines``; each
run's results go into one store (``store``), which the report and the gate read.
"""

from __future__ import annotations

from .engines import ENGINES, Engine, EngineError, RunOptions
from .store import Store, StoreError

__all__ = ["ENGINES", "Engine", "EngineError", "RunOptions", "Store", "StoreError"]

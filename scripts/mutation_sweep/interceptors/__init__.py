"""Filters between generation and execution: each drops mutants that need not run, and says why."""

from __future__ import annotations

from .same_code import compiles_the_same

__all__ = ["compiles_the_same"]

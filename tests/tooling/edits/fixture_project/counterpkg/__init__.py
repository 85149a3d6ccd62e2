"""Tiny package that the critical-mutant harness's own tests mutate."""

from counterpkg.core import Counter, add, clamp

__all__ = ["Counter", "add", "clamp"]

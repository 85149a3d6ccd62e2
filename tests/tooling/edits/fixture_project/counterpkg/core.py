"""Arithmetic small enough that every mutant's effect is obvious."""

from __future__ import annotations


def add(a: int, b: int) -> int:
    return a + b


def clamp(value: int, low: int, high: int) -> int:
    if value < low:
        return low
    if value > high:
        return high
    return value


class Counter:
    """Counts up from zero; `reset` puts it back."""

    label = "counter"

    def __init__(self) -> None:
        self.count = 0

    def bump(self, step: int = 1) -> int:
        self.count += step
        return self.count

    def reset(self) -> None:
        self.count = 0

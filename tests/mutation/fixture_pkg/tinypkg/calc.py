"""Arithmetic with one deliberately weak test, so some mutants survive."""


def clamp(value: int, low: int, high: int) -> int:
    if value < low:
        return low
    if value > high:
        return high
    return value


class Counter:
    def __init__(self) -> None:
        self.count = 0

    def bump(self, step: int = 1) -> int:
        self.count += step
        return self.count

    @property
    def doubled(self) -> int:
        return self.count * 2

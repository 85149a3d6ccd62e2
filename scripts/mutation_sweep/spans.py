"""Byte offsets of (line, column) places in a text: each text's line starts are found once, not per place."""

from __future__ import annotations

import functools
import itertools


@functools.lru_cache(maxsize=16)
def _line_starts(data: bytes) -> tuple[int, ...]:
    return (0, *itertools.accumulate(len(line) for line in data.splitlines(keepends=True)))


def byte_offset(data: bytes, line: int, col: int) -> int:
    """Where 1-based ``line``, byte column ``col`` is in ``data`` (lines split as ``bytes.splitlines``)."""
    starts = _line_starts(data)
    return starts[min(line - 1, len(starts) - 1)] + col


def between(text: str, span: tuple[int, int, int, int]) -> str:
    """The text of ``span`` (line, column, end line, end column; columns in UTF-8 bytes, as ``ast`` gives)."""
    data = text.encode()
    line, col, end_line, end_col = span
    return data[byte_offset(data, line, col) : byte_offset(data, end_line, end_col)].decode()

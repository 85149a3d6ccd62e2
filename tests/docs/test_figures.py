"""One source for each number: a figure README.md or docs/*.md state comes from a committed results file.

A table of figures follows a marker naming its file and, per column after the first, the path to its
value (``{row}`` is the row's first cell): ``<!-- figures: benchmarks/results/X.json a/{row}/b ... -->``.
Each figure must be the file's, rounded as the table shows it, and the machine the file names must be
named in the paragraph above. Outside those tables, no page states a time or a count of mutants or
verdicts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_MARKER = re.compile(r"^<!-- figures: (\S+) (.+?) -->\n((?:\|.*\|\n)+)", re.MULTILINE)
_TIME = re.compile(r"\b\d[\d,]*(?:\.\d+)?\s?(?:s|ms|ns|µs|min|minutes?|seconds?|hours?)\b")
_COUNT = re.compile(
    r"\b\d[\d,]*\s+(?:mutants?|killed|survived|survivors?|reviewed|invalid|passed|skipped|failed|"
    r"equivalent|gaps?|deletions|tests green|not killed)\b"
)
# a ratio ("2.3" and the multiplication sign), a rate, or a share other than the 100 % the coverage and
# score policies ask for
_RATE = re.compile(
    r"\b\d+\.\d+\s?\N{MULTIPLICATION SIGN}"
    r"|\b\d+(?:\.\d+)?\s?(?:mutants/s|mutants per second)"
    r"|\b(?!100 )\d+(?:\.\d+)?\s?%"
)


def _tables() -> list[tuple[Path, str, list[str], list[list[str]], str]]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in _MARKER.finditer(text):
            lines = m.group(3).splitlines()
            rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
            above = text[: m.start()].rsplit("\n\n", 2)[-2:]
            found.append((page, m.group(1), m.group(2).split(), rows[2:], " ".join(above)))
    return found


def _lookup(data: object, path: str, row: str) -> object:
    for step in path.replace("{row}", row).split("/"):
        assert isinstance(data, dict), path
        data = data[step]
    return data


def test_the_pages_have_tables_of_figures() -> None:
    assert len(_tables()) >= 3


@pytest.mark.parametrize(
    "table", _tables(), ids=lambda t: f"{t[0].relative_to(ROOT)}:{t[1].rsplit('/', 1)[-1]}"
)
def test_each_figure_is_the_results_files(table: tuple[Path, str, list[str], list[list[str]], str]) -> None:
    page, source, paths, rows, above = table
    data = json.loads((ROOT / source).read_text(encoding="utf-8"))
    assert rows, f"{page.name}: an empty table of {source}"
    for cells in rows:
        row = cells[0].strip("`")
        assert len(cells) == len(paths) + 1, f"{page.name}: {row}: the columns and the paths differ"
        for path, cell in zip(paths, cells[1:], strict=True):
            value = _lookup(data, path, row)
            assert isinstance(value, (int, float)), f"{source}: {path} of {row} is no number"
            decimals = len(cell.partition(".")[2])
            shown = float(cell.replace(",", ""))
            assert round(float(value), decimals) == shown, f"{page.name}: {row}: {cell}; {source}: {value}"
    machine = data.get("machine")
    named = [machine] if isinstance(machine, str) else [machine["gpu"], machine["python"]] if machine else []
    prose = " ".join(above.split())
    for name in named:
        assert name in prose, f"{page.name}: the table of {source} does not say its machine ({name})"


def test_no_page_states_a_figure_outside_those_tables() -> None:
    for page in PAGES:
        text = _MARKER.sub("", page.read_text(encoding="utf-8"))
        for line in text.splitlines():
            for pattern in (_TIME, _COUNT, _RATE):
                match = pattern.search(line)
                assert match is None, f"{page.name}: a figure no results file gives: {line!r}"

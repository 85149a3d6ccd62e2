"""The report of one judgement, in each format asked for: the mutation-testing-elements JSON, an HTML page
that opens offline, and a Markdown summary. It reads the judgement alone (and the mutated files' source
for the JSON), imports no engine and names none: every engine's name comes from its records.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ..judge import Judgement
from .elements import schema
from .html_page import page
from .summary import markdown

__all__ = ["markdown", "page", "schema", "write"]


def write(
    judgement: Judgement,
    *,
    json_path: Path | None,
    html_path: Path | None,
    markdown_path: Path | None,
    root: Path,
    min_score: float = 100.0,
) -> None:
    """Write each output whose path is given (its folder made where missing). ``root``: the project the
    mutants' files are relative to (the JSON holds their source); ``min_score``: the gate's, the JSON's
    high threshold."""
    outputs: list[tuple[Path | None, Callable[[], str]]] = [
        (json_path, lambda: json.dumps(schema(judgement, root, min_score=min_score), indent=1) + "\n"),
        (html_path, lambda: page(judgement)),
        (markdown_path, lambda: markdown(judgement)),
    ]
    for path, render in outputs:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(), encoding="utf-8")

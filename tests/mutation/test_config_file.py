"""mutation_config.toml has one reader: every tool says the same thing about the same bad file."""

from __future__ import annotations

import sys
from pathlib import Path

import _scripts
import core_deletions
import pytest
from critical_harness.catalogue import load_config
from critical_harness.model import ConfigError as HarnessConfigError
from mutation_config_file import REVIEW_KEYS, TABLES, ConfigFileError, read_config, reviewed
from mutation_gate_config import load_gate_config
from mutation_io import InputError
from mutation_sweep import config as sweep_config

SWEEP_KEYS = "file='a'\nscope='b'\noperator='c'\noriginal='d'\nmutated='e'\n"
BAD: dict[str, tuple[str | bytes, str]] = {
    "unknown table": ("[gates]\nmin_score = 100\n", "unknown top-level key(s) 'gates'; the tables are"),
    "review of no engine": (
        "[sweep]\npackage = 'x'\n[[reviewed]]\nreason = 'r'\n",
        "[[reviewed]] #1: engine must be one of mutmut, sweep, core-deletions, got None",
    ),
    "review without a reason": (
        "[sweep]\npackage = 'x'\n[[reviewed]]\nengine = 'sweep'\n" + SWEEP_KEYS,
        "[[reviewed]] #1 (sweep): unknown key(s) [], missing key(s) ['reason']",
    ),
    "review with another engine's key": (
        "[sweep]\npackage = 'x'\n[[reviewed]]\nengine = 'core-deletions'\nscope = 's'\ntext = 't'\n"
        "reason = 'r'\n[[reviewed]]\nengine = 'mutmut'\nfunction = 'p.m:f'\ndiff = 'x'\nwhy = 'r'\n",
        "[[reviewed]] #2 (mutmut): unknown key(s) ['why'], missing key(s) ['reason']",
    ),
    "review with an empty reason": (
        "[sweep]\npackage = 'x'\n[[reviewed]]\nengine = 'sweep'\n" + SWEEP_KEYS + "reason = ' '\n",
        "[[reviewed]] #1 (sweep): 'reason' must be a non-empty string",
    ),
    "malformed": ("[gate]\nmin_score = = 1\n", "malformed TOML: Invalid value (at line 2, column 13)"),
    "not utf-8": (b"[gate]\n# \xff\n", "not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_tool_refuses_a_bad_file_with_the_same_words(tmp_path: Path, case: str) -> None:
    text, says = BAD[case]
    path = tmp_path / "mutation_config.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    messages = []
    for read, error in (
        (read_config, ConfigFileError),
        (load_gate_config, InputError),
        (sweep_config.load, sweep_config.ConfigError),
        (load_config, HarnessConfigError),
        (core_deletions.reviews, ConfigFileError),
    ):
        with pytest.raises(error) as info:
            read(path)
        messages.append(str(info.value))
    assert all(says in m for m in messages), messages
    assert len(set(messages)) == 1


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="no such config file"):
        read_config(tmp_path / "absent.toml")


def test_the_projects_own_file_holds_only_known_tables() -> None:
    data = read_config(_scripts.ROOT / "mutation_config.toml")
    assert set(data) == set(TABLES)


def test_the_projects_reviews_are_one_table_every_engine_reads_its_own_part_of() -> None:
    path = _scripts.ROOT / "mutation_config.toml"
    data = read_config(path)
    parts = {engine: reviewed(data, path, engine) for engine in REVIEW_KEYS}
    assert all(parts.values())
    assert sum(len(p) for p in parts.values()) == len(data["reviewed"])
    assert all(entry["reason"].strip() for part in parts.values() for _, entry in part)
    assert len(core_deletions.reviews(path)) == len(parts["core-deletions"])
    assert len(load_gate_config(path).equivalents) == len(parts["mutmut"])
    assert len(sweep_config.load(path).equivalents) == len(parts["sweep"])


def test_a_review_bound_to_other_pythons_is_not_read_here(tmp_path: Path) -> None:
    path = tmp_path / "mutation_config.toml"
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    entries = "".join(
        f"[[reviewed]]\nengine = 'core-deletions'\nscope = 's{spec}'\ntext = 't'\nreason = 'r'\n"
        + (f"python = '{spec}'\n" if spec else "")
        for spec in ("", f"=={here}.*", f"<{here}", f">={here}")
    )
    path.write_text(entries, encoding="utf-8")
    assert [scope for scope, _ in core_deletions.reviews(path)] == ["s", f"s=={here}.*", f"s>={here}"]
    path.write_text(entries + "[[reviewed]]\nengine = 'sweep'\npython = 'three'\n", encoding="utf-8")
    with pytest.raises(ConfigFileError, match=r"#5 \(sweep\): unknown key"):
        read_config(path)
    bad = "[[reviewed]]\nengine = 'core-deletions'\nscope = 's'\ntext = 't'\nreason = 'r'\npython = 'three'\n"
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(ConfigFileError, match=r"#1 \(core-deletions\): python must be a version specifier"):
        read_config(path)

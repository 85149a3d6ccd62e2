"""mutation_config.toml has one reader: every tool says the same thing about the same bad file."""

from __future__ import annotations

from pathlib import Path

import _scripts
import pytest
from critical_harness.catalogue import load_config
from critical_harness.model import ConfigError as HarnessConfigError
from mutation_config_file import TABLES, ConfigFileError, read_config
from mutation_gate_config import load_gate_config
from mutation_io import InputError
from mutation_sweep import config as sweep_config

BAD: dict[str, tuple[str | bytes, str]] = {
    "unknown table": ("[gates]\nmin_score = 100\n", "unknown top-level key(s) 'gates'; the tables are"),
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

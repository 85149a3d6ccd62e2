"""mutation_config.toml read into typed tables, and every fault named as FILE: table[N].key: what."""

from __future__ import annotations

from pathlib import Path

import pytest
from guard_mutation.config import ConfigError, read

ENTRY = """
[[mutant]]
id = "m-1"
file = "pkg/m.py"
scope = "f"
replace = "a < b"
by = "a <= b"
why = "the bug"
killed_by = ["tests/test_m.py::test_a"]
"""
REVIEW = '\n[[reviewed]]\nengine = "toy"\nfunction = "pkg.m:f"\ndiff = "x"\nreason = "r"\n'


def written(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mutation_config.toml"
    path.write_text(text)
    return path


def test_a_whole_config_is_read_into_its_tables(tmp_path: Path) -> None:
    text = '[harness]\npackage = "pkg"\njobs = 3\ncanary = "m-1"\n[edits]\noperators = ["delete-statement"]\n'
    config = read(written(tmp_path, text + "[gate]\nmin_score = 0\n" + ENTRY + REVIEW + 'python = "<3.0"\n'))
    assert (config.harness.package, config.harness.jobs, config.harness.canary) == ("pkg", 3, "m-1")
    assert config.edits.operators == ("delete-statement",)
    assert config.min_score == 0.0
    assert [e.id for e in config.catalogue] == ["m-1"]
    assert config.catalogue[0].killed_by == ("tests/test_m.py::test_a",)
    assert not config.reviews[0].holds_here()
    assert config.root == tmp_path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[harness\n", "malformed TOML"),
        ("[sweep]\n", "sweep: unknown key"),
        ("[harness]\ncolour = 1\n", r"harness\.colour: unknown key"),
        ('[harness]\njobs = "many"\n', r"harness\.jobs: 'many' is not a positive number"),
        ("[harness]\ntimeout_s = 0\n", r"harness\.timeout_s: 0 is not positive"),
        ('[harness]\ncanary = "none-such"\n', r"harness\.canary: no \[\[mutant\]\] has id 'none-such'"),
        ("[gate]\nmin_score = 101\n", r"gate\.min_score: 101 is not a percentage"),
        (ENTRY.replace('by = "a <= b"\n', ""), r"mutant\[1\]: give `replace` and `by`, or `delete` alone"),
        (
            ENTRY.replace('["tests/test_m.py::test_a"]', "[]"),
            r"mutant\[1\]\.killed_by: name at least one test",
        ),
        (ENTRY.replace('"m-1"', '"m 1"'), r"mutant\[1\]\.id: 'm 1' may hold"),
        (ENTRY + ENTRY, r"mutant\[2\]\.id: 'm-1' appears twice"),
        (ENTRY.replace('why = "the bug"\n', ""), r"mutant\[1\]\.why: missing or empty"),
        (REVIEW.replace("pkg.m:f", "pkg.m.f"), r"reviewed\[1\]\.function: 'pkg\.m\.f' is not"),
        (REVIEW + 'python = "three"\n', r"reviewed\[1\]\.python: 'three' is not a version specifier"),
    ],
)
def test_a_fault_is_named_by_file_table_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = written(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as raised:
        read(path)
    assert str(raised.value).startswith(f"{path}: ")


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        read(tmp_path / "none.toml")

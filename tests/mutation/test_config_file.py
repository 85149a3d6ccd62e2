"""mutation_config.toml has one reader: every tool says the same thing about the same bad file."""

from __future__ import annotations

import re
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
        "[[reviewed]] #1: 'engine' must be one of mutmut, sweep, core-deletions, got None",
    ),
    "review without a reason": (
        "[sweep]\npackage = 'x'\n[[reviewed]]\nengine = 'sweep'\n" + SWEEP_KEYS,
        "[[reviewed]] #1 (sweep): missing key(s) 'reason'; its keys are",
    ),
    "review with another engine's key": (
        "[sweep]\npackage = 'x'\n[[reviewed]]\nengine = 'core-deletions'\nscope = 's'\ntext = 't'\n"
        "reason = 'r'\n[[reviewed]]\nengine = 'mutmut'\nfunction = 'p.m:f'\ndiff = 'x'\nwhy = 'r'\n",
        "[[reviewed]] #2 (mutmut): unknown key(s) 'why'; missing key(s) 'reason'",
    ),
    "review with an empty reason": (
        "[sweep]\npackage = 'x'\n[[reviewed]]\nengine = 'sweep'\n" + SWEEP_KEYS + "reason = ' '\n",
        "[[reviewed]] #1 (sweep): 'reason' must be a non-empty string, got ' '",
    ),
    # every table's keys, by the one schema (mutation_config_schema), in the one format
    "gate's score of the wrong type": ("[gate]\nmin_score = true\n", "[gate]: 'min_score' must be a number"),
    "gate's score past 100": ("[gate]\nmin_score = 101\n", "'min_score' must be a number from 0 to 100"),
    "gate's unknown key": ("[gate]\nmin = 1\n", "[gate]: unknown key(s) 'min'; its keys are none required"),
    "gate not a table": ("gate = 1\n", "[gate] must be a table"),
    "sweep's package": ("[sweep]\npackage = 'a b'\n", "[sweep]: 'package' must be a package name"),
    "sweep's timeout": ("[sweep]\npackage = 'x'\ntimeout_s = nan\n", "[sweep]: 'timeout_s' must be a finite"),
    "sweep's operators": ("[sweep]\npackage = 'x'\noperators = 'all'\n", "'operators' must be a list"),
    "harness without a package": ("[harness]\ntests = ['t']\n", "[harness]: missing key(s) 'package'"),
    "harness's jobs": ("[harness]\npackage = 'x'\njobs = 0\n", "[harness]: 'jobs' must be \"auto\" or an"),
    "harness's preload": ("[harness]\npackage = 'x'\npreload = ['a-b']\n", "[harness]: 'preload' must be"),
    "mutant's tests": (
        "[[mutant]]\nid = 'a'\nfile = 'f.py'\nscope = 's'\nwhy = 'w'\nkilled_by = []\n",
        "[[mutant]] #1: 'killed_by' must be a non-empty list of non-empty strings, got []",
    ),
    "mutant not an array": ("[mutant]\nid = 'a'\n", "'mutant' must be an array of tables ([[mutant]])"),
    "review's occurrence": (
        "[[reviewed]]\nengine = 'sweep'\n" + SWEEP_KEYS + "reason = 'r'\noccurrence = 0\n",
        "[[reviewed]] #1 (sweep): 'occurrence' must be an integer >= 1, got 0",
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
    with pytest.raises(ConfigFileError, match=r"#5 \(sweep\): missing key"):
        read_config(path)
    bad = "[[reviewed]]\nengine = 'core-deletions'\nscope = 's'\ntext = 't'\nreason = 'r'\npython = 'three'\n"
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(ConfigFileError, match=r"#1 \(core-deletions\): 'python' must be a version specifier"):
        read_config(path)


# What each table cannot do without, written out here rather than read from the schema, so that a schema
# that forgets one is caught.
REQUIRED = {
    "[harness]": ("[harness]\npackage = 'x'\n", {"package"}),
    "[[mutant]] #1": (
        "[[mutant]]\nid = 'a'\nfile = 'f.py'\nscope = 's'\nwhy = 'w'\nkilled_by = ['t']\ndelete = 'x'\n",
        {"id", "file", "scope", "why", "killed_by"},
    ),
    "[sweep]": ("[sweep]\npackage = 'x'\n", {"package"}),
    "[[reviewed]] #1 (sweep)": (
        "[[reviewed]]\nengine = 'sweep'\n" + SWEEP_KEYS + "reason = 'r'\n",
        {"file", "scope", "operator", "original", "mutated", "reason"},
    ),
    "[[reviewed]] #1 (mutmut)": (
        "[[reviewed]]\nengine = 'mutmut'\nfunction = 'p.m:f'\ndiff = 'x'\nreason = 'r'\n",
        {"function", "diff", "reason"},
    ),
    "[[reviewed]] #1 (core-deletions)": (
        "[[reviewed]]\nengine = 'core-deletions'\nscope = 's'\ntext = 't'\nreason = 'r'\n",
        {"scope", "text", "reason"},
    ),
}


@pytest.mark.parametrize("table", sorted(REQUIRED))
def test_a_table_without_a_key_it_needs_is_refused_naming_the_key(tmp_path: Path, table: str) -> None:
    whole, needed = REQUIRED[table]
    path = tmp_path / "mutation_config.toml"
    path.write_text(whole, encoding="utf-8")
    read_config(path)
    for key in sorted(needed):
        path.write_text(
            "".join(line + "\n" for line in whole.splitlines() if not re.match(rf"{key}\s*=", line))
        )
        with pytest.raises(ConfigFileError, match=rf"{re.escape(table)}: missing key\(s\) '{key}';"):
            read_config(path)


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ("[harness]\npackage = 'x'\ncanary = ''\n", "'canary' must be a non-empty string, got ''"),
        (
            "[harness]\npackage = 'x'\npreload = ['a.b-c']\n",
            "'preload' must be a non-empty list of module names",
        ),
        ("[harness]\npackage = 'x'\ntests = 'tests'\n", "'tests' must be a non-empty list"),
        ("[harness]\npackage = 'x'\njobs = true\n", "'jobs' must be"),
        ("[sweep]\npackage = 'x'\nexclude = [1]\n", "'exclude' must be a list of strings, got [1]"),
    ],
)
def test_a_value_of_the_wrong_kind_is_refused(tmp_path: Path, table: str, says: str) -> None:
    path = tmp_path / "mutation_config.toml"
    path.write_text(table, encoding="utf-8")
    with pytest.raises(ConfigFileError, match=re.escape(says)):
        read_config(path)

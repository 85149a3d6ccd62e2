"""What every verdict depends on besides the code: how pytest runs the tests, the build, the versions."""

from __future__ import annotations

from importlib.metadata import entry_points, version
from pathlib import Path

import mutation_environment
import pytest
from hypothesis import Phase, settings
from mutation_environment import (
    configuration,
    conftests_above,
    digest_of,
    distributions,
    python_files,
    variables,
)
from packaging.utils import canonicalize_name

PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]

[project]
name = "pkg"
dependencies = ["packaging>=20", "tomli>=2; python_version < '3'"]

[project.optional-dependencies]
test = ["pytest>=8", "no-such-distribution-here"]
docs = ["sphinx"]

[tool.pytest.ini_options]
xfail_strict = true

[tool.ruff]
line-length = 100
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (tmp_path / "setup.py").write_text("from setuptools import setup\n\nsetup()\n", encoding="utf-8")
    return tmp_path


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).write_text(text, encoding="utf-8")


def test_the_versions_are_of_what_the_project_its_tests_and_its_build_require_here(project: Path) -> None:
    found = distributions(project)
    # the marker that does not hold here is left out; an extra other than the tests' is not read
    assert {"packaging", "pytest", "no-such-distribution-here", "setuptools"} <= set(found)
    assert not {"tomli", "sphinx"} & set(found)
    assert found["no-such-distribution-here"] == ""
    assert found["pytest"] == version("pytest")
    _write(project, "pyproject.toml", PYPROJECT.replace('"pytest>=8"', '"pytest >= = 8"'))
    assert distributions(project)["'pytest >= = 8'"] == "not a requirement"


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("pyproject.toml", PYPROJECT.replace("xfail_strict = true", 'filterwarnings = ["error"]')),
        ("pyproject.toml", PYPROJECT.replace('"pytest>=8"', '"pytest>=8", "mutmut"')),  # one more required
        ("pytest.ini", "[pytest]\nfilterwarnings = error\n"),
        ("setup.py", "from setuptools import setup\n\nsetup(name='pkg')\n"),
        ("pyproject.toml", PYPROJECT + "[[["),  # unreadable: its text stands for it
    ],
    ids=["pytest-table", "a-new-requirement", "pytest-ini", "build-script", "unreadable-pyproject"],
)
def test_each_part_changes_the_digest(project: Path, rel: str, text: str) -> None:
    before = digest_of(project)
    _write(project, rel, text)
    assert digest_of(project) != before


def test_another_tools_table_and_the_build_scripts_comments_change_nothing(project: Path) -> None:
    before = digest_of(project)
    _write(project, "pyproject.toml", PYPROJECT.replace("100", "90"))
    _write(project, "setup.py", "# builds it\nfrom setuptools import setup\n\nsetup()  # here\n")
    assert digest_of(project) == before


def test_another_installed_version_changes_the_digest(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = digest_of(project)
    real = version
    monkeypatch.setattr(mutation_environment, "version", lambda n: "0.0.0" if n == "pytest" else real(n))
    assert digest_of(project) != before


def test_the_configuration_is_read_from_what_a_file_reader_gives() -> None:
    texts = {
        "pyproject.toml": "[tool.pytest.ini_options]\naddopts = ['-x']\n",
        "tox.ini": "[pytest]\naddopts = -q\n\n[testenv]\ncommands = pytest\n",
        "mutation_config.toml": "[sweep]\npytest_args = ['tests', '-x']\n",
        "conftest.py": "X = 1  # at the root\n",
    }
    parts = configuration(lambda path: texts.get(path, ""))
    assert parts["pytest's configuration in pyproject.toml"] == '{"ini_options": {"addopts": ["-x"]}}'
    assert parts["tox.ini [pytest]"] == '{"addopts": "-q"}'  # the section pytest reads, alone
    assert parts["setup.cfg [tool:pytest]"] == "null"
    assert '"sweep": ["tests", "-x"]' in parts["the engines' pytest arguments"]
    assert parts["conftest.py"] == "0|X = 1"
    texts["pyproject.toml"] += "[tool.mutmut]\npytest_add_cli_args = ['-m', 'not cuda']\n"
    texts["pyproject.toml"] += "[tool.setuptools]\npackages = ['pkg']\n"
    more = configuration(lambda path: texts.get(path, ""))
    assert '"mutmut": ["-m", "not cuda"]' in more["the engines' pytest arguments"]
    assert more["the build (setup.py, [tool.setuptools])"] == '{"packages": ["pkg"]}'
    # a file that cannot be read as what it is stands as its text
    unreadable = {"pyproject.toml": "[[[", "tox.ini": "no section", "mutation_config.toml": "[[["}
    parts = configuration(lambda path: unreadable.get(path, ""))
    assert parts["pytest's configuration in pyproject.toml"] == "[[["
    assert parts["tox.ini [pytest]"] == "no section"
    assert parts["the engines' pytest arguments"] == "[[["


@pytest.mark.parametrize(
    ("project_table", "unreadable"),
    [
        ('tool = 1\nproject = "x"\nbuild-system = "x"', set()),
        ("[project]\noptional-dependencies = []\ndependencies = 1", {"1"}),
        ('[project]\ndependencies = ["a; python_version ~= \'3\'", 2, "b >= = 1"]', {"2", "'b >= = 1'"}),
    ],
    ids=["no-tables", "no-lists", "odd-entries"],
)
def test_an_odd_pyproject_is_read_without_an_error(
    tmp_path: Path, project_table: str, unreadable: set[str]
) -> None:
    _write(tmp_path, "pyproject.toml", project_table + "\n")
    found = distributions(tmp_path)
    assert {k for k, v in found.items() if v == "not a requirement"} == unreadable
    # a marker that cannot be told here may hold: what it names is counted
    assert ("a" in found) is ("~=" in project_table)
    assert digest_of(tmp_path) == digest_of(tmp_path)


def test_the_plug_ins_pytest_loads_by_itself_are_versioned(project: Path) -> None:
    plugins = {ep.dist.name for ep in entry_points(group="pytest11") if ep.dist is not None}
    assert plugins  # pytest-xdist, hypothesis, guard-lib's own fixture at least
    assert {canonicalize_name(p) for p in plugins} <= set(distributions(project))


def test_the_variables_pytest_python_and_hypothesis_read_count() -> None:
    environ = {"PYTEST_ADDOPTS": "-W ignore", "HYPOTHESIS_PROFILE": "ci", "HOME": "/root", "PATH": "/bin"}
    assert variables(environ) == {"HYPOTHESIS_PROFILE": "ci", "PYTEST_ADDOPTS": "-W ignore"}


def test_an_added_option_in_the_environment_changes_the_digest(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = digest_of(project)
    monkeypatch.setenv("PYTEST_ADDOPTS", "-W ignore::ResourceWarning")
    assert digest_of(project) != before
    monkeypatch.setenv("HOME", "/elsewhere")  # not read by the tests
    monkeypatch.delenv("PYTEST_ADDOPTS")
    assert digest_of(project) == before


def test_every_conftest_above_the_tests_counts(project: Path) -> None:
    # one above the project is not its own
    project = project / "inner"
    project.mkdir()
    _write(project.parent, "conftest.py", "X = 0\n")
    for rel in ("conftest.py", "tests/conftest.py", "tests/unit/conftest.py", "tests/other/conftest.py"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        _write(project, rel, "X = 1\n")
    assert conftests_above(project, ["tests/unit", "-x", "--no-such-path"]) == [
        "conftest.py",
        "tests/conftest.py",
        "tests/unit/conftest.py",
    ]
    before = digest_of(project, ["tests/unit"])
    _write(project, "tests/conftest.py", "X = 1  # a note\n")
    assert digest_of(project, ["tests/unit"]) == before
    _write(project, "tests/conftest.py", "X = 2\n")
    assert digest_of(project, ["tests/unit"]) != before
    elsewhere = digest_of(project, ["tests/unit"])
    _write(project, "tests/other/conftest.py", "X = 2\n")  # not above the tests
    assert digest_of(project, ["tests/unit"]) == elsewhere


def test_the_names_of_test_files_are_pytests(tmp_path: Path) -> None:
    assert python_files(tmp_path) == ["test_*.py", "*_test.py"]
    _write(tmp_path, "pyproject.toml", '[tool.pytest.ini_options]\npython_files = "check_*.py test_*.py"\n')
    assert python_files(tmp_path) == ["check_*.py", "test_*.py"]
    _write(tmp_path, "pyproject.toml", '[tool.pytest.ini_options]\npython_files = ["check_*.py"]\n')
    assert python_files(tmp_path) == ["check_*.py"]


def test_the_mutation_profile_reads_no_example_database() -> None:
    # examples an earlier mutant's run saved would decide a later verdict, and differ from clone to clone
    profile = settings.get_profile("mutation")
    assert profile.database is None
    assert Phase.reuse not in profile.phases

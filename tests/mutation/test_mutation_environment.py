"""What every verdict depends on besides the code: how pytest runs the tests, the build, the versions."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import mutation_environment
import pytest
from mutation_environment import configuration, digest_of, distributions

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
    assert set(found) == {"packaging", "pytest", "no-such-distribution-here", "setuptools"}
    assert found["no-such-distribution-here"] == ""
    assert found["pytest"] == version("pytest")
    _write(project, "pyproject.toml", PYPROJECT.replace('"pytest>=8"', '"pytest >= = 8"'))
    assert distributions(project)["pytest >= = 8"] == "not a requirement"


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
    texts = {"pyproject.toml": "[tool.pytest.ini_options]\naddopts = ['-x']\n", "tox.ini": "[pytest]\n"}
    parts = configuration(lambda path: texts.get(path, ""))
    assert parts == ('{"ini_options": {"addopts": ["-x"]}}', "", "", "[pytest]\n", "", "")
    # a pyproject.toml TOML cannot read stands as its text
    assert configuration(lambda path: "[[[" if path == "pyproject.toml" else "")[0] == "[[["

"""README runs as written: its Python blocks as one program, its shell commands parsed or run.

- Python blocks run in order as one test module on the simulated runtime: module-level code (with its
  asserts) at import, the ``test_*`` functions as tests with the plugin's fixtures.
- TOML blocks parse; a harness catalogue loads against this repository (its edit text must still be
  there), and a reviewed sweep equivalent is one the real config holds.
- Each shell command is parsed by the script's own argument parser; the cheap ones (``list``, ``show``,
  ``mutmut_coverage.py``) run in a scratch copy of the tree; the set-up and test commands are the ones
  ``.ci/run`` runs.
"""

from __future__ import annotations

import importlib
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SCRIPTS = ROOT / "scripts"

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Block:
    language: str
    text: str
    line: int


def blocks(language: str) -> list[Block]:
    text = README.read_text(encoding="utf-8")
    return [
        Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1)
        for m in _FENCE.finditer(text)
        if m.group(1) == language
    ]


def shell_commands() -> list[tuple[int, list[str]]]:
    commands = []
    for block in blocks("sh"):
        joined = block.text.replace("\\\n", " ")
        for offset, line in enumerate(joined.splitlines()):
            words = shlex.split(line, comments=True)
            if words:
                commands.append((block.line + 1 + offset, words))
    return commands


def test_the_readme_has_the_blocks_this_test_reads() -> None:
    assert len(blocks("python")) >= 4
    assert len(blocks("toml")) >= 2
    assert len(shell_commands()) >= 12


def test_the_python_blocks_run_as_one_program(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = "\n\n".join(f"# README.md line {b.line}\n{b.text}" for b in blocks("python"))
    pytester.makepyfile(test_readme_program=program)
    monkeypatch.setenv("GUARD_LIB_RUNTIME", "simulated:2")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=len(re.findall(r"^def test_", program, re.MULTILINE)))


def test_the_catalogue_example_loads_against_this_repository(tmp_path: Path) -> None:
    import critical_mutants

    (example,) = [b for b in blocks("toml") if "[[mutant]]" in b.text]
    config = tmp_path / "catalogue.toml"
    config.write_text(example.text, encoding="utf-8")
    loaded = critical_mutants.load_config(config, ROOT)
    assert [m.spec.id for m in loaded.mutants] == ["moved-from-restore-flag"]


def test_the_reviewed_equivalent_example_is_one_the_config_holds() -> None:
    (example,) = [b for b in blocks("toml") if "[[reviewed]]" in b.text]
    shown = tomllib.loads(example.text)["reviewed"][0]
    held = tomllib.loads((ROOT / "mutation_config.toml").read_text(encoding="utf-8"))["reviewed"]
    assert any(
        {k: v for k, v in entry.items() if k != "reason"} == {k: v for k, v in shown.items() if k != "reason"}
        for entry in held
    )


_PARSERS = {
    "scripts/critical_mutants.py": ("critical_harness.cli", "build_parser"),
    "scripts/mutation_run.py": ("mutation_run", "build_parser"),
    "scripts/mutation_gate.py": ("mutation_gate", "build_parser"),
    "scripts/mutation_report.py": ("mutation_report", "build_parser"),
    "scripts/mutation_sweep.py": ("mutation_sweep.cli", "build_parser"),
}
_CHEAP = {
    ("scripts/critical_mutants.py", "list"),
    ("scripts/critical_mutants.py", "show"),
    ("scripts/mutation_sweep.py", "list"),
    ("scripts/mutation_sweep.py", "show"),
}


def _and_list(words: list[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for word in words:
        if word == "&&":
            parts.append([])
        else:
            parts[-1].append(word)
    return [p for p in parts if p]


def _quiet(words: list[str]) -> list[str]:
    """A command without the flags that only quieten it (CI's logs are shorter than a terminal)."""
    return [w for w in words if w != "-q"]


def _ci_commands() -> list[list[str]]:
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8").replace("\\\n", " ")
    commands = []
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        commands += _and_list(words)
    return commands


def _install_names_this_package(where: str, args: list[str]) -> None:
    """One requirement: a path to a checkout, or guard-lib by name (from the index or a git URL), with
    extras the package declares."""
    from packaging.requirements import Requirement

    (target,) = [a for a in args if not a.startswith("-")]
    declared = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
            "optional-dependencies"
        ]
    )
    if target.startswith("/"):
        path, bracket, extras = target.partition("[")
        assert path.endswith("/guard-lib"), f"{where}: a path to a checkout of guard-lib"
        assert not bracket or set(Requirement(f"guard-lib[{extras}").extras) <= declared, where
        return
    requirement = Requirement(target)
    assert requirement.name == "guard-lib", where
    assert requirement.extras <= declared, f"{where}: an extra the package does not declare"
    assert requirement.url is None or requirement.url.startswith("git+https://"), where


def _parses_as_guard_mutation(where: str, args: list[str]) -> None:
    from guard_mutation.cli import build_parser

    try:
        build_parser().parse_args(args)
    except SystemExit as exc:
        pytest.fail(f"{where}: its parser refused it (exit {exc.code})")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The working tree as git sees it (tracked and new files, nothing ignored), copied."""
    where = tmp_path_factory.mktemp("scratch") / "repo"
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, listed):
        source = ROOT / rel
        if source.is_file():
            (where / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, where / rel)
    return where


@pytest.mark.parametrize(
    ("line", "words"), shell_commands(), ids=lambda v: str(v) if isinstance(v, int) else None
)
def test_each_shell_command_is_valid_and_the_cheap_ones_run(
    line: int, words: list[str], scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = f"README.md line {line}: {shlex.join(words)}"
    if words[:3] == ["python3", "-m", "venv"] or words[:3] == ["python", "-m", "coverage"]:
        for part in _and_list(words):
            assert any(_quiet(run)[: len(_quiet(part))] == _quiet(part) for run in _ci_commands()), (
                f"{where}: .ci/run runs nothing that starts like {shlex.join(part)!r}"
            )
        return
    if words[0] == "scripts/nightly.sh":
        nightly = ROOT / words[0]
        assert nightly.is_file(), where
        assert nightly.stat().st_mode & 0o111, f"{where}: not executable"
        import mutation_run

        mutation_run.build_parser().parse_args(["run", "--out", "x.json", *words[1:]])
        return
    if words[0] == "mutmut":
        # mutmut's own command line, as its users type it: a subcommand mutmut has (its --help runs nothing)
        mutmut = Path(sys.executable).with_name("mutmut")
        done = subprocess.run(
            [str(mutmut), words[1], "--help"], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, f"{where}: mutmut has no such command\n{done.stderr[-2000:]}"
        return
    if words[:2] == ["pip", "install"]:
        _install_names_this_package(where, words[2:])
        return
    if words[0] == "guard-mutation":
        _parses_as_guard_mutation(where, words[1:])
        return
    assert words[0] == "python", f"{where}: not a command this test knows"
    script, args = words[1], words[2:]
    if script in _PARSERS:
        module, function = _PARSERS[script]
        parser = getattr(importlib.import_module(module), function)()
        try:
            parsed = parser.parse_args(args)
        except SystemExit as exc:
            pytest.fail(f"{where}: its parser refused it (exit {exc.code})")
        if script == "scripts/mutation_run.py" and parsed.command in ("run", "export"):
            import mutation_io
            import mutation_run

            monkeypatch.chdir(scratch)
            try:
                mutation_run.check_out(parsed.out, parsed)  # where the results would go
            except mutation_io.InputError as exc:
                pytest.fail(f"{where}: {exc}")
    else:
        assert (ROOT / script).is_file(), where
    cheap = (script, args[0] if args else "") in _CHEAP or script == "scripts/mutmut_coverage.py"
    if cheap:
        done = subprocess.run(
            [sys.executable, *words[1:]],
            cwd=scratch,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{where}: exit {done.returncode}\n{done.stderr[-2000:]}"
        assert done.stdout.strip(), f"{where}: printed nothing"

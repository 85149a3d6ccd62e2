"""README.md and docs/*.md run as written: every fenced block of theirs is run, or checked, here.

- Each fence names its language: ``sh``, ``python``, ``toml`` or ``text`` (output, never run).
- A page's Python blocks run in order as one test module in a fresh process with no runtime chosen by
  the environment, so the page's first block must choose the simulated runtime itself: module-level code
  (with its asserts) at import, the ``test_*`` functions as tests with the plugin's fixtures.
- TOML blocks show what the project holds: ``[tool.mutmut]`` is pyproject's, every key of ``[harness]``,
  ``[gate]`` or ``[edits]`` has the config's value, and every ``[[mutant]]`` and ``[[reviewed]]`` is an
  entry of mutation_config.toml.
- Each shell command is run where that is cheap (a listing, a diff, a probe, the short soak) and
  otherwise parsed by the script's own argument parser (a whole mutation run, an install); README's
  set-up and test commands are the ones ``.ci/run`` runs. A command whose line says ``needs: gpu`` is
  skipped where no CUDA device answers.
"""

from __future__ import annotations

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
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
SCRIPTS = ROOT / "scripts"
LANGUAGES = {"sh", "python", "toml", "text"}
NEEDS_GPU = "needs: gpu"

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Block:
    page: Path
    language: str
    text: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)} line {self.line}"


def all_blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    return [
        Block(page, m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in _FENCE.finditer(text)
    ]


def blocks(language: str, pages: list[Path] = PAGES) -> list[Block]:
    return [b for page in pages for b in all_blocks(page) if b.language == language]


@dataclass(frozen=True)
class Command:
    where: str
    words: list[str]
    needs_gpu: bool


def shell_commands(pages: list[Path] = PAGES) -> list[Command]:
    commands = []
    for block in blocks("sh", pages):
        joined = block.text.replace("\\\n", " ")
        for offset, line in enumerate(joined.splitlines()):
            words = shlex.split(line, comments=True)
            if words:
                where = f"{block.page.relative_to(ROOT)} line {block.line + 1 + offset}"
                commands.append(Command(where, words, NEEDS_GPU in line.partition("#")[2]))
    return commands


def test_every_fence_names_a_language_this_test_knows() -> None:
    for page in PAGES:
        for block in all_blocks(page):
            assert block.language in LANGUAGES, f"{block.where}: ```{block.language}"


def test_no_block_holds_a_placeholder() -> None:
    for block in blocks("sh") + blocks("python"):
        for placeholder in ("OWNER", "@TAG", "/path/to", "…", "<your"):
            assert placeholder not in block.text, f"{block.where}: {placeholder!r}"


def test_the_pages_have_the_blocks_this_test_reads() -> None:
    assert len(blocks("python", [README])) >= 3
    assert len(blocks("toml", [README])) >= 1
    assert len(shell_commands([README])) >= 8
    assert len(blocks("toml")) >= 6
    assert len(shell_commands()) >= 25


def test_the_first_python_block_of_a_page_chooses_the_simulated_runtime() -> None:
    for page in PAGES:
        python = blocks("python", [page])
        if python:
            first = python[0].text
            chosen = first.find('"GUARD_LIB_RUNTIME", "simulated"')
            assert chosen != -1, f"{python[0].where}: the first example does not choose the simulated runtime"
            assert chosen < first.index("import guard_lib"), f"{python[0].where}: chosen after the import"


@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if blocks("python", [p])],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_the_python_blocks_of_a_page_run_as_one_program(
    page: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = "\n\n".join(f"# {b.where}\n{b.text}" for b in blocks("python", [page]))
    tests = len(re.findall(r"^def test_", program, re.MULTILINE))
    if not tests:
        program += "\n\ndef test_the_program_ran():\n    pass\n"
    pytester.makepyfile(test_page_program=program)
    monkeypatch.delenv("GUARD_LIB_RUNTIME", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=max(tests, 1))


def _config() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((ROOT / "mutation_config.toml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("block", blocks("toml"), ids=lambda b: b.where)
def test_each_toml_block_shows_what_the_project_holds(block: Block) -> None:
    shown = tomllib.loads(block.text)
    config = _config()
    for name, value in shown.items():
        if name == "tool":
            pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
            assert value == {"mutmut": pyproject["tool"]["mutmut"]}, f"{block.where}: not pyproject's"
        elif name in ("harness", "gate", "edits"):
            for key, held in value.items():
                assert config[name][key] == held, f"{block.where}: [{name}] {key} is not the config's"
        elif name in ("mutant", "reviewed"):
            for entry in value:
                assert entry in config[name], f"{block.where}: a [[{name}]] the config does not hold"
        else:
            pytest.fail(f"{block.where}: a table this test does not know: [{name}]")


def test_the_catalogue_example_loads_against_this_repository(tmp_path: Path) -> None:
    from guard_mutation import config

    (example,) = [b for b in blocks("toml") if "[[mutant]]" in b.text]
    path = tmp_path / "catalogue.toml"
    path.write_text('[harness]\npackage = "guard_lib"\n\n' + example.text, encoding="utf-8")
    assert [e.id for e in config.read(path, ROOT).catalogue] == ["moved-from-restore-flag"]


# whole scripts cheap enough to run as the page shows them
_CHEAP_SCRIPTS = {"benchmarks/soak.py"}


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


def _pyproject() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _wheel_glob() -> str:
    project = _pyproject()["project"]
    return f"{project['name'].replace('-', '_')}-{project['version']}-*.whl"


def _install_names_this_package(where: str, words: list[str]) -> None:
    """From a clone's root: the checkout (``.``, with extras the package declares), or a wheel of it that
    ``pip wheel`` wrote, by the name and version pip gives it."""
    from packaging.requirements import Requirement

    (target,) = [w for w in words[2:] if not w.startswith("-") and words[words.index(w) - 1] != "-w"]
    if words[1] == "wheel":
        assert target == ".", f"{where}: a wheel of the checkout"
        assert words[words.index("-w") + 1] == "dist", where
        return
    if target.endswith(".whl"):
        assert target == f"dist/{_wheel_glob()}", f"{where}: not the wheel `pip wheel -w dist .` writes"
        return
    path, bracket, extras = target.partition("[")
    assert path == ".", f"{where}: install from the clone's root"
    declared = set(_pyproject()["project"]["optional-dependencies"])
    assert not bracket or set(Requirement(f"guard-lib[{extras}").extras) <= declared, where


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


def _a_gpu_answers() -> bool:
    from guard_lib.runtime import CudaRuntime

    try:
        code, count = CudaRuntime().get_device_count()
    except Exception:  # no cuda-bindings, or bindings that cannot load: no GPU to use either way
        return False
    return not code and count > 0


def _runs(where: str, argv: list[str], cwd: Path) -> None:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{where}: exit {done.returncode}\n{done.stderr[-2000:]}"
    assert done.stdout.strip(), f"{where}: printed nothing"


@pytest.mark.parametrize("command", shell_commands(), ids=lambda c: c.where)
def test_each_shell_command_is_valid_and_the_cheap_ones_run(command: Command, scratch: Path) -> None:
    where, words = command.where, command.words
    if command.needs_gpu and not _a_gpu_answers():
        pytest.skip(f"{where}: needs a CUDA device")
    if words[:3] == ["python3", "-m", "venv"] or words[:3] == ["python", "-m", "coverage"]:
        for part in _and_list(words):
            assert any(_quiet(run)[: len(_quiet(part))] == _quiet(part) for run in _ci_commands()), (
                f"{where}: .ci/run runs nothing that starts like {shlex.join(part)!r}"
            )
        return
    if words[0] == "mutmut":
        # mutmut's own command line, as its users type it: a subcommand mutmut has (its --help runs nothing)
        mutmut = Path(sys.executable).with_name("mutmut")
        done = subprocess.run(
            [str(mutmut), words[1], "--help"], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, f"{where}: mutmut has no such command\n{done.stderr[-2000:]}"
        return
    if words[0] == "pip" and words[1] in ("install", "wheel"):
        _install_names_this_package(where, words)
        return
    if words[0] == "guard-mutation":
        for part in _and_list(words):
            _parses_as_guard_mutation(where, part[1:])
            if part[1] in ("list", "show"):
                _runs(where, [str(Path(sys.executable).with_name("guard-mutation")), *part[1:]], scratch)
        return
    assert words[0] == "python", f"{where}: not a command this test knows"
    _python_command(where, words, scratch)


def _python_command(where: str, words: list[str], scratch: Path) -> None:
    if words[1] == "-c":
        _runs(where, [sys.executable, *words[1:]], scratch)
        return
    script = words[1]
    assert (ROOT / script).is_file(), where
    if script in _CHEAP_SCRIPTS:
        _runs(where, [sys.executable, *words[1:]], scratch)


def test_each_link_between_the_pages_finds_its_page() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (page.parent / target).is_file(), (
                f"{page.relative_to(ROOT)}: a link to {target}, not there"
            )
        for anchor in re.findall(r"\]\(#([^)]+)\)", text):
            headings = {
                re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-")
                for h in re.findall(r"^#+ (.+)$", text, re.MULTILINE)
            }
            assert anchor in headings, f"{page.relative_to(ROOT)}: no heading for #{anchor}"

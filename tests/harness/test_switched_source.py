"""Mutant schemata (critical_harness/switched_source.py): every woven mutant behaves as its own mutant.

The weave reads Cython by its Python-like layout, so Python sources serve to test it: the woven source,
run with each switch on, must give what the mutant's own source gives, on every input. What cannot sit
in a branch (declarations, definitions' headers, class bodies) is left out with a reason. The run's
side (``switched_build.py``) is tested against a stand-in for the run: which build serves which mutant, and
when none does.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from critical_harness.catalogue import load_config
from critical_harness.compiled import is_compiled, scope_spans
from critical_harness.model import TestRun as Run
from critical_harness.switched_build import prepare_woven
from critical_harness.switched_source import SELECT, SWITCH, weave
from critical_harness.warm import GoCold

REPO = Path(__file__).resolve().parents[2]

SOURCE = textwrap.dedent(
    '''\
    """A module."""

    LIMIT = 10


    def grade(n):
        total = 0
        if n < 0:
            total = -1
        elif n == 0:
            total = 100
        else:
            for k in range(n):
                if k % 3 == 0:
                    continue
                total += k
            else:
                total += 1000
        return total


    def guarded(n):
        try:
            if n > 5:
                raise ValueError(
                    "big",
                    n,
                )
            result = n * 2
        except ValueError:
            result = -7
        finally:
            n = 0
        return result + \\
            n


    def outer(n):
        def inner(m):
            return m + LIMIT

        return inner(n) if n % 2 else n


    class Box:
        size = 3

        def grow(self, n):
            # a comment inside
            return self.size * n
    '''
)

# (name, original text, mutated text): each a textual edit of SOURCE.
MUTANTS = [
    ("if-header", "if n < 0:", "if n <= 0:"),
    ("elif-header", "elif n == 0:", "elif n == 1:"),
    ("deleted-body", "total = 100", "pass"),
    ("continue-to-break", "continue", "break"),
    ("for-else", "total += 1000", "total += 2000"),
    ("in-a-call", "                n,\n", "                n / 0,\n"),
    ("raise-guard", "if n > 5:", "if n > 4:"),
    ("except-body", "result = -7", "result = -8"),
    ("finally-body", "        n = 0\n", "        n = 1\n"),
    ("continued-line", "        n\n\n", "        n + 1\n\n"),
    ("nested-def-body", "return m + LIMIT", "return m - LIMIT"),
    ("after-nested-def", "return inner(n) if n % 2 else n", "return n"),
    ("method", "return self.size * n", "return self.size + n"),
    # two lines, the second a block shallower: the whole `if` statement is woven
    ("across-blocks", "total += 1000\n    return total\n", "total += 999\n    return total + 1\n"),
]


def _mutated(original: str, mutated: str) -> str:
    assert SOURCE.count(original) == 1, original
    return SOURCE.replace(original, mutated)


def _functions(source: str, switch: int | None = None) -> dict[str, Callable[[int], object]]:
    """Run ``source`` (a woven one with its Cython tail cut off and ``switch`` on) as Python."""
    if switch is not None:
        source = source.split(f"\n\ncdef int {SWITCH}", maxsplit=1)[0]
    namespace: dict[str, object] = {SWITCH: switch or 0}
    exec(compile(source, "<source>", "exec"), namespace)

    def call(name: str) -> Callable[[int], object]:
        def run(n: int) -> object:
            try:
                if name == "grow":
                    return namespace["Box"]().grow(n)  # type: ignore[operator]
                return namespace[name](n)  # type: ignore[operator]
            except Exception as exc:
                return type(exc).__name__

        return run

    return {name: call(name) for name in ("grade", "guarded", "outer", "grow")}


def _behaviour(functions: dict[str, Callable[[int], object]]) -> dict[tuple[str, int], object]:
    return {(name, n): f(n) for name, f in functions.items() for n in range(-2, 9)}


def test_each_switch_behaves_as_its_mutant_and_none_as_the_original() -> None:
    mutants = [(name, _mutated(before, after)) for name, before, after in MUTANTS]
    schema = weave(SOURCE, mutants)
    woven = {name: n for name, n in schema.numbers.items()}
    assert schema.unwoven == {}
    assert sorted(woven) == sorted(name for name, _, _ in MUTANTS)
    assert _behaviour(_functions(schema.source, 0)) == _behaviour(_functions(SOURCE))
    for name, source in mutants:
        expected = _behaviour(_functions(source))
        assert expected != _behaviour(_functions(SOURCE)), name
        assert _behaviour(_functions(schema.source, woven[name])) == expected, name
        # woven alone, where no other mutant's region grows its own
        alone = weave(SOURCE, [(name, source)])
        assert _behaviour(_functions(alone.source, 1)) == expected, name
        assert _behaviour(_functions(alone.source, 0)) == _behaviour(_functions(SOURCE)), name


def test_the_woven_source_ends_with_its_switch_and_the_function_that_sets_it() -> None:
    schema = weave(SOURCE, [("m", _mutated("total = 100", "total = 101"))])
    tail = "\n\ncdef int S = 0\n\n\ndef SELECT(int number):\n    global S\n    S = number\n"
    assert schema.source.replace(SWITCH, "S").replace(SELECT, "SELECT").endswith(tail)


def test_a_changed_clause_weaves_its_whole_statement_once() -> None:
    schema = weave(SOURCE, [("elif", _mutated("elif n == 0:", "elif n == 1:"))])
    woven = schema.source.replace(SWITCH, "S")
    # the branch holds the whole if/elif/else, as the mutant has it; the else holds the original
    assert "    if S == 1:\n        if n < 0:\n            total = -1\n        elif n == 1:\n" in woven
    assert "    else:\n        if n < 0:\n            total = -1\n        elif n == 0:\n" in woven
    assert woven.count("total += 1000") == 2


def test_a_deleted_statement_leaves_pass_in_its_branch() -> None:
    schema = weave(SOURCE, [("gone", _mutated("        result = n * 2\n", ""))])
    woven = schema.source.replace(SWITCH, "S")
    assert "        if S == 1:\n            pass\n        else:\n            result = n * 2\n" in woven


def test_overlapping_mutants_share_one_chain() -> None:
    inner = ("inner", _mutated("total = -1", "total = -2"))
    outer = ("outer", _mutated("if n < 0:", "if n < 1:"))
    schema = weave(SOURCE, [inner, outer])
    assert schema.source.count(f"if {SWITCH} == 1:") == 1
    assert schema.source.count(f"elif {SWITCH} == 2:") == 1
    assert schema.source.count("for k in range(n):") == 3  # the inner's branch, the outer's, the original


@pytest.mark.parametrize(
    ("before", "after", "reason"),
    [
        ("LIMIT = 10", "LIMIT = 11", "the edit is at module level"),
        ("size = 3", "size = 4", "the edit is in the body of a class"),
        ("def grade(n):", "def grade(n, m=0):", "the edit is at module level"),
        ("def grow(self, n):", "def grow(self, n=1):", "the edit is in the body of a class"),
        ('"""A module."""', '"""A\nmodule."""', "the edit is at module level"),
        ("    return inner(n) if", "    cdef int k = 0\n    return inner(n) if", "a declaration"),
        ("    def inner(m):", "    @staticmethod\n    def inner(m):", "a declaration or definition"),
    ],
)
def test_what_cannot_sit_in_a_branch_is_left_out_with_its_reason(
    before: str, after: str, reason: str
) -> None:
    schema = weave(SOURCE, [("m", _mutated(before, after)), ("ok", _mutated("total = 100", "total = 1"))])
    assert schema.numbers == {"ok": 2}
    assert reason in schema.unwoven["m"]


@pytest.mark.parametrize("mutated", ['    x = """a\n    c"""\n', '    x = "a"\n'])
def test_a_string_that_spans_lines_is_left_out(mutated: str) -> None:
    # re-indented into a branch, its text would change: in the mutant's branch or in the original's
    original = '    x = """a\n    b"""\n'
    source = f"def f():\n{original}    return x\n"
    schema = weave(source, [("m", source.replace(original, mutated))])
    assert "inside a string that spans lines" in schema.unwoven["m"]


def test_a_declaration_the_mutant_deletes_is_left_out() -> None:
    source = "def f():\n    cdef int k = 0\n    return k\n"
    schema = weave(source, [("m", source.replace("cdef int k = 0", "pass"))])
    assert "a declaration or definition ('cdef int k = 0')" in schema.unwoven["m"]


def test_a_mutant_that_changes_nothing_is_left_out() -> None:
    assert weave(SOURCE, [("same", SOURCE)]).unwoven == {"same": "the mutant changes no statement"}


# The catalogue's compiled mutants no branch can hold: a C declaration, and an edit of an extern block.
UNWOVEN = {
    "core-c-int-overflow": "a declaration or definition",
    "core-thread-id-as-owner": "the edit is at module level",
}


@pytest.mark.e2e
def test_every_compiled_catalogue_mutant_inside_a_function_is_woven() -> None:
    config = load_config(REPO / "mutation_config.toml")
    compiled = [m for m in config.mutants if is_compiled(m.spec.file)]
    assert compiled
    for file in {m.spec.file for m in compiled}:
        of_file = [m for m in compiled if m.spec.file == file]
        schema = weave(of_file[0].original, [(m.spec.id, m.mutated) for m in of_file])
        # a declaration is named with its line ("line 291: a declaration ..."), which moves with any edit
        reasons = {i: r.split(" (")[0].split(": ", 1)[-1] for i, r in schema.unwoven.items()}
        assert reasons == UNWOVEN, schema.unwoven
        assert len(schema.numbers) + len(schema.unwoven) == len(of_file)


def test_an_edit_of_a_comment_beside_its_statement_is_left_out() -> None:
    # the comment lies outside the woven statement: its branch could not carry the whole edit
    edit = "        # a comment inside\n        return self.size * n\n"
    mutated = _mutated(edit, "        # another comment\n        return self.size - n\n")
    assert weave(SOURCE, [("m", mutated)]).unwoven == {"m": "the edit reaches past the statements it changes"}


class _FakeContext:
    """What ``woven.prepare_woven`` asks of a run, answered as one case needs: a build's status, and
    the woven build's tests' outcomes with no switch on."""

    def __init__(self, tmp: Path, build: int, tests: Run | Exception) -> None:
        self.engine, self.snapshot, self.tmp = "warm", tmp / "snapshot", tmp
        shutil.copytree(REPO / "guard_lib", self.snapshot / "guard_lib")
        self._build, self._tests = build, tests
        self.woven: Path | None = None
        self.switches: dict[str, tuple[str, int]] = {}
        self.said: list[str] = []
        self.built_in: list[Path | None] = []
        self.launched: list[Path] = []

    def say(self, message: str) -> None:
        self.said.append(message)

    def build(self, project: Path, where: Path | None = None) -> tuple[int, str]:
        self.built_in.append(where)
        return self._build, "error: the woven core does not compile"

    def launch_woven_server(self, project: Path) -> None:
        self.launched.append(project)

    def woven_server(self, project: Path) -> object:
        assert project in self.launched  # asked for only once launched
        return object()

    def pytest_warm(
        self, server: object, project: Path, mutant: None, targets: list[str], **_: object
    ) -> Run:
        # the unmutated build, with no switch on, on its mutants' tests
        assert mutant is None
        assert targets
        if isinstance(self._tests, Exception):
            raise self._tests
        return self._tests


def _prepare(tmp_path: Path, build: int, tests: Run | Exception) -> _FakeContext:
    config = load_config(REPO / "mutation_config.toml")
    ctx = _FakeContext(tmp_path, build, tests)
    copies = [tmp_path / "slot0", tmp_path / "slot1"]
    prepare_woven(ctx, copies[0], copies, config.mutants)  # type: ignore[arg-type]
    return ctx


@pytest.mark.e2e
def test_a_green_woven_build_serves_its_mutants_from_every_copy(tmp_path: Path) -> None:
    ctx = _prepare(tmp_path, 0, Run(0, "", outcomes={"t": "passed"}, order=["t"]))
    assert ctx.woven == tmp_path / "woven" / "project"
    assert ctx.built_in == [ctx.woven]
    woven = (ctx.woven / "guard_lib" / "_core.pyx").read_text(encoding="utf-8")
    assert f"def {SELECT}(int number):" in woven
    compiled = [m for m in load_config(REPO / "mutation_config.toml").mutants if is_compiled(m.spec.file)]
    woven_count = len(compiled) - len(UNWOVEN)
    assert len(ctx.switches) == woven_count
    assert not set(UNWOVEN) & set(ctx.switches)
    assert all(module == "guard_lib._core" for module, _ in ctx.switches.values())
    assert set(ctx.launched) == {tmp_path / "slot0", tmp_path / "slot1"}
    assert any(f"{woven_count} compiled mutants in one build" in line for line in ctx.said)


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("build", "tests", "said"),
    [
        (1, Run(0, ""), "the woven build failed (error: the woven core does not compile)"),
        (0, Run(1, "", outcomes={"t::a": "failed"}, order=["t::a"]), "its tests are red: t::a"),
        (0, GoCold("the warm server did not answer"), "the warm server did not answer"),
    ],
)
def test_a_woven_build_that_fails_or_is_red_serves_no_mutant(
    tmp_path: Path, build: int, tests: Run | Exception, said: str
) -> None:
    ctx = _prepare(tmp_path, build, tests)
    assert ctx.switches == {}
    assert any(said in line and "rebuilt" in line for line in ctx.said), ctx.said


@pytest.mark.e2e
def test_the_cold_engine_weaves_nothing(tmp_path: Path) -> None:
    config = load_config(REPO / "mutation_config.toml")
    ctx = _FakeContext(tmp_path, 0, Run(0, ""))
    ctx.engine = "cold"
    prepare_woven(ctx, tmp_path / "slot0", [tmp_path / "slot0"], config.mutants)  # type: ignore[arg-type]
    assert (ctx.switches, ctx.built_in, ctx.launched) == ({}, [], [])
    assert not (tmp_path / "woven").exists()


def test_a_compiled_sources_module_scope_is_the_whole_file() -> None:
    # A critical line outside every definition: the C block of an extern declaration.
    source = 'cdef extern from *:\n    """\n    #define X 1\n    """\n\n\ndef f():\n    return 1\n'
    assert scope_spans(source, "<module>") == [(0, 7)]
    assert scope_spans("", "<module>") == []
    assert scope_spans(source, "f") == [(6, 7)]

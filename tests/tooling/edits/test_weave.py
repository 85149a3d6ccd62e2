"""The weave: every compiled mutant of a file behind a switch of one source. The weave reads Cython by its
Python-like layout, so Python serves to test it: the woven source, run with each switch on, gives what
the mutant's own source gives on every input, and with none on what the original gives; each switch's
check notes that its region was reached. What no branch can hold is left out, with the reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from guard_mutation.engines.edits.weave import SWITCH_ENV, Built, Schema, culprits, weave, weave_built

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
        return result


    class Box:
        size = 3
    '''
)
MUTANTS = [
    ("if-header", "if n < 0:", "if n <= 0:"),
    ("elif-header", "elif n == 0:", "elif n == 1:"),
    ("deleted-body", "total = 100", "pass"),
    ("continue-to-break", "continue", "break"),
    ("in-a-call", "            n,\n", "            n / 0,\n"),
    ("except-body", "result = -7", "result = -8"),
    # two mutants of one line that returns nothing: one chain, each branch alone, the original not again
    ("times-three", "result = n * 2", "result = n * 3"),
    ("plus-two", "result = n * 2", "result = n + 2"),
    ("across-blocks", "total += k\n    return total\n", "total += 2 * k\n    return total + 1\n"),
]
UNWOVEN = [
    ("module-level", "LIMIT = 10", "LIMIT = 11", "module level"),
    ("class-body", "size = 3", "size = 4", "body of a class"),
    ("declaration", "total = 0", "cdef int total = 0", "a declaration"),
]


def _mutated(original: str, mutated: str) -> str:
    assert SOURCE.count(original) == 1, original
    return SOURCE.replace(original, mutated)


def _run(source: str, switch: int = 0) -> tuple[Callable[[str, int], object], set[int]]:
    """The woven ``source`` run as Python with ``switch`` on: a caller of its functions, and the switches
    its checks reached."""
    reached: set[int] = set()

    def on(number: int) -> bool:
        reached.add(number)
        return number == switch

    head = source.split("\n\ncdef unsigned char", maxsplit=1)[0]
    python = "".join(line for line in head.splitlines(True) if "cdef" not in line)
    namespace: dict[str, object] = {"_harness_on_": on}
    exec(compile(python, "<woven>", "exec"), namespace)

    def call(name: str, n: int) -> object:
        try:
            return namespace[name](n)  # type: ignore[operator]
        except Exception as exc:
            return type(exc).__name__

    return call, reached


def _results(call: Callable[[str, int], object]) -> list[object]:
    return [call(name, n) for name in ("grade", "guarded") for n in range(-2, 9)]


def test_every_switch_gives_its_own_mutant_and_none_the_original() -> None:
    schema = weave(SOURCE, [(name, _mutated(a, b)) for name, a, b in MUTANTS], "pkg.mod")
    assert schema.unwoven == {}
    assert schema.numbers == {name: n for n, (name, _, _) in enumerate(MUTANTS, 1)}
    plain, reached = _run(schema.source)
    assert _results(plain) == _results(_run(SOURCE)[0])
    assert reached == set(schema.numbers.values())  # with none on, every check is made and noted
    for name, a, b in MUTANTS:
        own, _ = _run(_mutated(a, b))
        woven, _ = _run(schema.source, schema.numbers[name])
        assert _results(woven) == _results(own), name
        assert _results(own) != _results(plain), name  # each mutant is told apart from the original


@pytest.mark.parametrize(("name", "original", "mutated"), MUTANTS)
def test_a_mutant_woven_alone_is_its_own_mutant(name: str, original: str, mutated: str) -> None:
    schema = weave(SOURCE, [(name, _mutated(original, mutated))], "pkg.mod")
    own, _ = _run(_mutated(original, mutated))
    assert _results(_run(schema.source, 1)[0]) == _results(own)


def test_a_region_not_reached_is_not_noted() -> None:
    schema = weave(SOURCE, [("except-body", _mutated("result = -7", "result = -8"))], "pkg.mod")
    call, reached = _run(schema.source)
    call("guarded", 1)
    assert reached == set()
    call("guarded", 6)
    assert reached == {1}


@pytest.mark.parametrize(("name", "original", "mutated", "reason"), UNWOVEN)
def test_what_no_branch_can_hold_is_left_out_with_its_reason(
    name: str, original: str, mutated: str, reason: str
) -> None:
    schema = weave(
        SOURCE, [(name, _mutated(original, mutated)), ("if-header", _mutated("if n < 0:", "if n <= 0:"))], "m"
    )
    assert reason in schema.unwoven[name]
    assert schema.numbers == {"if-header": 2}


def test_the_build_reads_its_switch_from_the_environment_for_its_own_module() -> None:
    source = weave(SOURCE, [("if-header", _mutated("if n < 0:", "if n <= 0:"))], "pkg.mod").source
    # set before any code of the module runs, after its docstring
    assert '"""A module."""\n\ncdef int _harness_mutant_ = _harness_from_env_()\nLIMIT = 10\n' in source
    assert 'module == "pkg.mod"' in source


def test_a_compiler_error_names_the_mutant_whose_branch_it_is_in() -> None:
    schema = weave(SOURCE, [(name, _mutated(a, b)) for name, a, b in MUTANTS], "pkg.mod")
    line = next(n for n, owner in schema.owners.items() if owner == "except-body")
    output = f"warning: pkg/mod.pyx:1:0: a warning\npkg/mod.pyx:{line}:8: referenced before assignment\n"
    assert culprits(schema, "pkg/mod.pyx", output) == {"except-body"}
    assert culprits(schema, "pkg/mod.pyx", "pkg/mod.pyx:1:0: outside any branch\n") == set()


def _refusing(*names: str) -> tuple[Callable[[dict[str, Schema]], str | None], list[set[str]]]:
    """A build of pkg/mod.pyx whose compiler refuses the branch of each of ``names`` still woven."""
    woven: list[set[str]] = []

    def build(schemas: dict[str, Schema]) -> str | None:
        schema = schemas["pkg/mod.pyx"]
        woven.append(set(schema.numbers))
        lines = [n for n, owner in schema.owners.items() if owner in names]
        return "".join(f"pkg/mod.pyx:{n}:8: refused\n" for n in lines) or None

    return build, woven


def test_a_mutant_whose_branch_the_compiler_refuses_is_left_out_and_the_rest_woven_again() -> None:
    build, woven = _refusing("except-body")
    built = weave_built({"pkg/mod.pyx": (SOURCE, [(n, _mutated(a, b)) for n, a, b in MUTANTS])}, build)
    assert isinstance(built, Built)
    assert built.refused == {"except-body"}
    assert "except-body" in woven[0]
    assert woven[1] == woven[0] - {"except-body"}
    assert set(built.schemas["pkg/mod.pyx"].numbers) == woven[1]


def test_a_failure_in_no_mutants_branch_gives_the_compilers_output_back_at_once() -> None:
    outputs = []

    def build(schemas: dict[str, Schema]) -> str:
        outputs.append("pkg/mod.pyx:1:0: outside any branch\n")
        return outputs[-1]

    built = weave_built({"pkg/mod.pyx": (SOURCE, [(n, _mutated(a, b)) for n, a, b in MUTANTS[:2]])}, build)
    assert built == "pkg/mod.pyx:1:0: outside any branch\n"
    assert len(outputs) == 1


def test_a_compiler_refusing_one_more_branch_at_every_weave_is_given_up_after_a_few() -> None:
    woven: list[dict[str, int]] = []

    def build(schemas: dict[str, Schema]) -> str:
        schema = schemas["pkg/mod.pyx"]
        woven.append(schema.numbers)
        return f"pkg/mod.pyx:{min(schema.owners)}:8: refused\n"

    built = weave_built({"pkg/mod.pyx": (SOURCE, [(n, _mutated(a, b)) for n, a, b in MUTANTS])}, build)
    assert isinstance(built, str)
    assert "still refused" in built
    assert [len(numbers) for numbers in woven] == [len(woven[0]) - k for k in range(4)]


CORE = textwrap.dedent(
    """\
    cdef int twice(int n) noexcept nogil:
        return n * 2


    def run(int n):
        cdef int out = 0
        with nogil:
            out = twice(n)
        if n < 0:
            out = -1
        return out
    """
)
PROBE = """
import json, sys, pyximport
pyximport.install(build_dir=sys.argv[1], language_level=3)
import woven_core as m
seen = [m.run(3), m._harness_reached_(), m.run(-1), m._harness_reached_(), m._harness_reached_()]
m._harness_select_(1)
print(json.dumps([*seen, m.run(3)]))
"""


@pytest.mark.e2e
def test_the_woven_cython_builds_notes_its_switches_and_takes_them_from_the_environment(
    tmp_path: Path,
) -> None:
    mutants = [
        ("nogil-body", CORE.replace("out = twice(n)", "out = n")),
        ("if-body", CORE.replace("-1", "-2")),
    ]
    (tmp_path / "woven_core.pyx").write_text(weave(CORE, mutants, "woven_core").source, encoding="utf-8")

    def probe(switch: str) -> list[object]:
        env = {**os.environ, SWITCH_ENV: switch}
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(tmp_path / "build")],
            check=False,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        result: list[object] = json.loads(done.stdout)
        return result

    # no switch on: the original; each check notes its region, once; mutant 1 turned on by its child
    assert probe("") == [6, [1], -1, [1, 2], [], 3]
    assert probe("woven_core:2")[2] == -2  # a process turns on the switch its environment names
    assert probe("other_module:2")[2] == -1

"""Each operator's own examples, run by one generic test: what it makes of each source, exactly."""

from __future__ import annotations

import ast
from types import ModuleType

import pytest
from mutation_sweep.generate import splice
from mutation_sweep.operators import ALL
from mutation_sweep.operators.base import prepare


def _mutants(operator: ModuleType, source: str) -> list[str]:
    tree = ast.parse(source)
    prepare([operator], tree)
    made: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node in tree.body:
            node._sweep_bound_at_top = True  # type: ignore[union-attr]
        for edit in operator.edits(node, source):
            made.append(splice(source, edit)[0])
    return made


@pytest.mark.parametrize(
    ("operator", "before", "after"),
    [
        pytest.param(op, before, after, id=f"{op.name}-{index}")
        for op in ALL
        for index, (before, after) in enumerate(op.examples)
    ],
)
def test_operator_examples(operator: ModuleType, before: str, after: tuple[str, ...]) -> None:
    assert sorted(_mutants(operator, before)) == sorted(after)


def test_every_operator_has_examples_and_a_unique_name() -> None:
    names = [op.name for op in ALL]
    assert len(set(names)) == len(names) == 14
    assert all(op.examples for op in ALL)
    # each operator shows what it makes and at least one source it leaves alone
    assert all(any(after for _, after in op.examples) for op in ALL)
    assert all(any(not after for _, after in op.examples) for op in ALL)

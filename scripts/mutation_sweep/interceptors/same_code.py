"""A mutant whose module compiles to the same code as the original cannot be told apart: skip it."""

from __future__ import annotations

from types import CodeType

_COMPARED = (
    "co_code",
    "co_names",
    "co_varnames",
    "co_freevars",
    "co_cellvars",
    "co_argcount",
    "co_posonlyargcount",
    "co_kwonlyargcount",
    "co_flags",
)


def _shape(value: object) -> object:
    """The parts of a constant or code object that decide behaviour; positions and line tables left out."""
    if isinstance(value, CodeType):
        return (*tuple(getattr(value, name) for name in _COMPARED), tuple(_shape(c) for c in value.co_consts))
    if isinstance(value, (tuple, frozenset)):
        return (type(value).__name__, tuple(_shape(v) for v in value))
    return (type(value).__name__, repr(value))


def compiles_the_same(original: str, mutated: str, filename: str) -> bool:
    try:
        mutated_code = compile(mutated, filename, "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return _shape(compile(original, filename, "exec", dont_inherit=True)) == _shape(mutated_code)

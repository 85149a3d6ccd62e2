"""A mutant whose module compiles to the same code as the original cannot be told apart: skip it."""

from __future__ import annotations

from functools import lru_cache
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


@lru_cache(maxsize=256)
def _original_shape(original: str, filename: str, flags: int) -> object:
    # Many mutants share their original: compile it once.
    return _shape(compile(original, filename, "exec", flags=flags, dont_inherit=True))


def compiles_the_same(original: str, mutated: str, filename: str, flags: int = 0) -> bool:
    """Whether ``mutated`` compiles to the code ``original`` does; ``flags`` are the module's future flags.

    Both may be one top-level statement of a module rather than all of it, where the edit keeps every line
    where it was: the code a statement compiles to does not depend on the statements around it, beyond the
    future flags and (for a class, from 3.13) the lines it starts on.
    """
    try:
        mutated_code = compile(mutated, filename, "exec", flags=flags, dont_inherit=True)
    except SyntaxError:
        return False
    return _original_shape(original, filename, flags) == _shape(mutated_code)

"""The sweep's mutation operators, one module each; ``ALL`` is the order they are applied in."""

from __future__ import annotations

from types import ModuleType

from . import (
    comparison,
    delete_statement,
    drop_element,
    keyword_only,
    remove_base,
    remove_handler,
    replace_value,
    unwrap_call,
)

ALL: tuple[ModuleType, ...] = (
    delete_statement,
    unwrap_call,
    drop_element,
    replace_value,
    comparison,
    remove_base,
    keyword_only,
    remove_handler,
)

__all__ = ["ALL"]
